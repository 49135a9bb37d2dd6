import { type Address, type Hex, getAddress, isAddress, keccak256, stringToHex } from 'viem';

/**
 * The "Payment" HTTP authentication scheme (draft-httpauth-payment) as the mppx client speaks it, for the one method
 * the gateway settles: `evm` / `charge`, an ERC-20 transfer the payer authorizes with an EIP-3009
 * `TransferWithAuthorization` signature and the server submits to the token. Wire format only: what the challenge's
 * standard auth-params say, what a credential must look like, what the receipt says. The rules live in mpp.ts.
 */
export const EVM_METHOD = 'evm';
export const CHARGE_INTENT = 'charge';

/** A challenge id is the stored challenge's nonce. */
const CHALLENGE_ID = /^[0-9a-f]{32}$/;
const UINT256 = /^\d{1,78}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
/** r ‖ s ‖ v: what an EOA signs (EIP-3009's `transferWithAuthorization(…, v, r, s)` takes nothing else). */
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
/** mppx's own bound on the challenge's `request` parameter. */
const REQUEST_MAX_LENGTH = 16 * 1024;

/** The `request` of an `evm` charge: the amount in the token's smallest unit, checksummed addresses. */
export interface EvmChargeRequest {
  amount: string;
  currency: Address;
  recipient: Address;
  methodDetails: { chainId: number; credentialTypes: ['authorization']; decimals: number };
}

/** The standard auth-params of a challenge, in the order they are written after the spec's own. */
export function standardChallengeParams(challenge: {
  id: string;
  realm: string;
  request: EvmChargeRequest;
  description: string;
}): [string, string][] {
  return [
    ['id', challenge.id],
    ['realm', challenge.realm],
    ['method', EVM_METHOD],
    ['intent', CHARGE_INTENT],
    ['request', base64urlJson(challenge.request)],
    ['description', challenge.description],
  ];
}

export function evmChargeRequest(offer: {
  amountAtomic: bigint;
  currency: string;
  recipient: string;
  chainId: number;
  decimals: number;
}): EvmChargeRequest {
  return {
    amount: offer.amountAtomic.toString(),
    currency: getAddress(offer.currency),
    recipient: getAddress(offer.recipient),
    methodDetails: { chainId: offer.chainId, credentialTypes: ['authorization'], decimals: offer.decimals },
  };
}

/**
 * The EIP-3009 nonce an `evm` charge authorization must carry: keccak256 of the challenge id followed by the realm
 * (mppx's `challengeHash`). It ties the signature to one challenge of one server, and the token spends it once.
 */
export const authorizationNonce = (id: string, realm: string): Hex => keccak256(stringToHex(`${id}${realm}`));

/** The signed EIP-3009 transfer of a credential. */
export interface Eip3009Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  signature: Hex;
}

/** A standard credential, its echoed challenge reduced to what the server compares with the stored one. */
export interface AuthorizationCredential {
  challenge: { id: string; realm: string; method: string; intent: string; request: Record<string, unknown> };
  authorization: Eip3009Authorization;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown, pattern?: RegExp): string | null =>
  typeof value === 'string' && (!pattern || pattern.test(value)) ? value : null;
const address = (value: unknown): Address | null => (typeof value === 'string' && isAddress(value, { strict: false }) ? value : null);

/**
 * The decoded body of `Authorization: Payment <base64url JSON>` when it is a standard credential
 * (`{ challenge: { id, realm, method, intent, request, … }, payload: { type: 'authorization', … }, source? }`), or
 * null when it is not one or is malformed. `source` is ignored: the signature names the payer.
 */
export function parseAuthorizationCredential(value: unknown): AuthorizationCredential | null {
  if (!isRecord(value) || !isRecord(value.challenge) || !isRecord(value.payload)) return null;
  const { challenge: c, payload: p } = value;
  const id = str(c.id, CHALLENGE_ID);
  const realm = str(c.realm);
  const method = str(c.method);
  const intent = str(c.intent);
  const encodedRequest = str(c.request);
  if (!id || realm === null || !method || !intent || !encodedRequest || encodedRequest.length > REQUEST_MAX_LENGTH) return null;
  let request: unknown;
  try {
    request = JSON.parse(Buffer.from(encodedRequest, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!isRecord(request)) return null;

  if (p.type !== 'authorization') return null;
  const from = address(p.from);
  const to = address(p.to);
  const [amount, validAfter, validBefore] = [p.value, p.validAfter, p.validBefore].map((v) => str(v, UINT256));
  const nonce = str(p.nonce, BYTES32);
  const signature = str(p.signature, SIGNATURE);
  if (!from || !to || !amount || !validAfter || !validBefore || !nonce || !signature) return null;
  return {
    challenge: { id, realm, method, intent, request },
    authorization: {
      from: getAddress(from),
      to: getAddress(to),
      value: BigInt(amount),
      validAfter: BigInt(validAfter),
      validBefore: BigInt(validBefore),
      nonce: nonce.toLowerCase() as Hex,
      signature: signature as Hex,
    },
  };
}

/** The `Payment-Receipt` header of a settled standard credential: base64url JSON, as mppx's `Receipt.deserialize` reads. */
export const paymentReceipt = (receipt: { reference: string; timestamp: number }): string =>
  base64urlJson({
    method: EVM_METHOD,
    reference: receipt.reference,
    status: 'success',
    timestamp: new Date(receipt.timestamp).toISOString(),
  });

/** base64url (no padding) of the canonical JSON (RFC 8785) of `value`: what the scheme's `request` parameter holds. */
function base64urlJson(value: unknown): string {
  return Buffer.from(canonicalJson(value), 'utf8').toString('base64url');
}

/** RFC 8785 for the values used here (objects, arrays, strings, finite numbers, booleans): keys sorted, no spaces. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((key) => value[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
