import { ApiError, client, request } from './api.js';
import type { Providers } from './api-types.js';

/** The EIP-1193 provider a wallet injects (`window.ethereum`). */
interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

/** What a SIWE message must name, from `GET /api/auth/providers`. */
export type WalletSignInTarget = Providers['wallet'];

/** An EIP-4361 message, built by hand so the sign-in page does not ship an Ethereum library. */
export function siweMessage(fields: {
  domain: string;
  address: string;
  uri: string;
  chainId: number;
  nonce: string;
  issuedAt: Date;
}): string {
  return [
    `${fields.domain} wants you to sign in with your Ethereum account:`,
    fields.address,
    '',
    'Sign in to Agent Ops.',
    '',
    `URI: ${fields.uri}`,
    'Version: 1',
    `Chain ID: ${fields.chainId}`,
    `Nonce: ${fields.nonce}`,
    `Issued At: ${fields.issuedAt.toISOString()}`,
  ].join('\n');
}

/**
 * Wallet sign-in: nonce → the wallet signs a SIWE message on the gating network → `POST /api/wallet-auth`, which sets
 * the session cookie. The server accepts smart-contract wallets only (ERC-1271/ERC-6492 signatures).
 */
export async function signInWithWallet(target: WalletSignInTarget): Promise<void> {
  const ethereum = (window as unknown as { ethereum?: Eip1193Provider }).ethereum;
  if (!ethereum)
    throw new Error('No wallet found in this browser. Open this page in your smart wallet’s browser or install its extension.');
  const accounts = (await ethereum.request({ method: 'eth_requestAccounts' })) as string[];
  const address = accounts[0];
  if (!address) throw new Error('The wallet did not share an account.');
  const { nonce } = await request(client.GET('/api/auth/nonce'));
  const message = siweMessage({ domain: target.domain, address, uri: target.uri, chainId: target.chainId, nonce, issuedAt: new Date() });
  let signature: string;
  try {
    signature = (await ethereum.request({ method: 'personal_sign', params: [toHex(message), address] })) as string;
  } catch {
    throw new Error('The wallet did not sign the message. Nothing was changed.');
  }
  try {
    await request(client.POST('/api/wallet-auth', { body: { address, message, signature } }));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && /smart-contract/i.test(err.message)) {
      throw new Error(
        'This account is a plain key-pair wallet. Only smart-contract wallets are accepted: use a smart wallet (for example a passkey wallet).',
      );
    }
    throw err;
  }
}

function toHex(text: string): string {
  return `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
