import { type CounterStore, DomainError } from '@aop/core';
import { type Address, type Hex, isAddress, isAddressEqual } from 'viem';
import { parseSiweMessage } from 'viem/siwe';
import { nonceKey } from './clients/chain.js';

/** A SIWE message is a few hundred characters; the cap keeps the parser's regular expressions cheap. */
const MAX_MESSAGE_LENGTH = 4_096;
/** ERC-6492 wrappers carry the factory call, so smart-wallet signatures can be a few kilobytes. */
const MAX_SIGNATURE_LENGTH = 32_768;
const HEX = /^0x(?:[0-9a-fA-F]{2})+$/;
/** Clients' clocks run a little ahead: an `Issued At` up to this far in the future is accepted. */
const ISSUED_AT_SKEW_MS = 60_000;

/** What a signed-in-with-Ethereum message must say to be ours (EIP-4361). */
export interface SiweExpectation {
  domain: string;
  /** The URI's origin. */
  origin: string;
  chainId: number;
  /** The URI scheme, when the message names one. */
  scheme?: string;
  /** A statement the message must carry word for word (so a signature made for one purpose is refused for another). */
  statement?: string;
}

/**
 * The checks wallet sign-in and wallet linking share, everything but the signature's cryptography: the message names
 * `address`, our domain, URI origin and chain, is within its validity window at `now`, and carries a nonce we issued —
 * which is taken here (single use, whatever happens next). Answers the signing wallet (lower case) and the signature.
 */
export async function acceptSiweMessage(
  counters: CounterStore,
  body: { address: string; message: string; signature: string },
  expect: SiweExpectation,
  now: number,
): Promise<{ wallet: Address; signature: Hex; nonce: string }> {
  const { address, message, signature } = body;
  if (!isAddress(address, { strict: false })) throw new DomainError('INVALID_WALLET_ADDRESS');
  if (message.length > MAX_MESSAGE_LENGTH) throw new DomainError('INVALID_SIWE_MESSAGE_TOO_LONG');

  const siwe = parseSiweMessage(message);
  if (!siwe.nonce) throw new DomainError('MISSING_NONCE_SIGNED_MESSAGE');
  if (!siwe.address || !isAddressEqual(siwe.address, address)) throw new DomainError('SIGNED_WALLET_ADDRESS_MISMATCH');
  const refuse = (reason: string) => new DomainError('INVALID_SIWE_MESSAGE', { reason });
  if (expect.statement !== undefined && siwe.statement !== expect.statement) {
    throw refuse(`the statement must be "${expect.statement}"`);
  }
  if (siwe.version !== '1') throw refuse('unsupported version');
  if (siwe.domain !== expect.domain) throw refuse('wrong domain');
  if (expect.scheme !== undefined && siwe.scheme && siwe.scheme !== expect.scheme) throw refuse('wrong scheme');
  if (siwe.chainId !== expect.chainId) throw refuse('wrong chain id');
  let uriOrigin: string | undefined;
  try {
    uriOrigin = siwe.uri ? new URL(siwe.uri).origin : undefined;
  } catch {}
  if (uriOrigin !== expect.origin) throw refuse('wrong URI');
  const times = [siwe.issuedAt, siwe.expirationTime, siwe.notBefore];
  if (!siwe.issuedAt || times.some((t) => t && Number.isNaN(t.getTime()))) throw refuse('invalid timestamps');
  if (siwe.issuedAt.getTime() > now + ISSUED_AT_SKEW_MS) throw refuse('issued in the future');
  if (siwe.expirationTime && siwe.expirationTime.getTime() <= now) throw refuse('expired');
  if (siwe.notBefore && siwe.notBefore.getTime() > now) throw refuse('not yet valid');
  if (signature.length > MAX_SIGNATURE_LENGTH || !HEX.test(signature)) throw new DomainError('SIGNATURE_VERIFICATION_FAILED');

  if ((await counters.take(nonceKey(siwe.nonce))) === null) throw new DomainError('INVALID_EXPIRED_NONCE');
  return { wallet: siwe.address.toLowerCase() as Address, signature: signature as Hex, nonce: siwe.nonce };
}
