import { decryptSecret } from '@aop/core';
import type { Database } from '@aop/db';
import { type AgentHost, sameAgentEnv } from '@aop/provisioner';
import { getAddress } from 'viem';
import type { BackendConfig } from '../config.js';
import { hostState } from './agents.js';
import { walletKeyAad } from './underground.js';

/**
 * An agent's underground wallet, handed to its runtime (spec §4.11): the bus authenticates a message by the sending
 * agent's wallet signature, so the agent must hold its own key to sign `POST /api/underground/bus/send` itself. The
 * key reaches the agent only as secret variables of its gateway's environment (`AgentSpec.agentEnv`, sealed by the
 * host like the channel tokens), never in openclaw.json, a response or a log.
 */

/** The wallet's private key (0x + 64 hex), what `privateKeyToAccount` takes. */
export const AGENT_WALLET_KEY_ENV = 'AOP_AGENT_WALLET_KEY';
/** The wallet's checksummed address. */
export const AGENT_WALLET_ADDRESS_ENV = 'AOP_AGENT_WALLET_ADDRESS';
/** The agent's id: the `fromAgentId` of its messages. */
export const AGENT_ID_ENV = 'AOP_AGENT_ID';
/** Where to post signed messages (`UNDERGROUND_BUS_URL`); absent when not configured. */
export const AGENT_BUS_URL_ENV = 'AOP_AGENT_BUS_URL';

export const WALLET_ENV_NAMES: readonly string[] = [AGENT_WALLET_KEY_ENV, AGENT_WALLET_ADDRESS_ENV, AGENT_ID_ENV, AGENT_BUS_URL_ENV];

export interface WalletEnvDeps {
  db: Database;
  encryptionKey: Buffer;
  config: BackendConfig;
}

/**
 * The wallet variables of one of `userId`'s agents, or undefined when it has no wallet. Read under the user's
 * row-level security, so a wallet kept from a deleted agent of another user with the same id is never handed out.
 */
export async function walletEnvFor({ db, encryptionKey, config }: WalletEnvDeps, userId: string, agentId: string) {
  const wallet = await db.withUser(userId, (trx) =>
    trx.selectFrom('underground_wallets').select(['address', 'private_key_enc']).where('agent_id', '=', agentId).executeTakeFirst(),
  );
  if (!wallet) return undefined;
  const env: Record<string, string> = {
    [AGENT_WALLET_KEY_ENV]: decryptSecret(encryptionKey, wallet.private_key_enc, walletKeyAad(agentId, wallet.address)),
    [AGENT_WALLET_ADDRESS_ENV]: getAddress(wallet.address),
    [AGENT_ID_ENV]: agentId,
  };
  if (config.underground.busUrl) env[AGENT_BUS_URL_ENV] = config.underground.busUrl;
  return env;
}

/** `current` with the wallet variables replaced by `wallet` (other `AOP_AGENT_*` variables kept). */
export function withWalletEnv(current: Record<string, string> | undefined, wallet: Record<string, string>): Record<string, string> {
  const kept = Object.entries(current ?? {}).filter(([name]) => !WALLET_ENV_NAMES.includes(name));
  return { ...Object.fromEntries(kept), ...wallet };
}

/**
 * Hands the agent its wallet when its host spec does not have exactly these variables yet (a change restarts the
 * gateway, so an unchanged one is left alone). `no-wallet`: the agent has none; `not-deployed`: no host has the agent
 * (its deployment picks the wallet up).
 */
export async function syncWalletEnv(
  deps: WalletEnvDeps,
  host: AgentHost,
  userId: string,
  agentId: string,
): Promise<'updated' | 'unchanged' | 'no-wallet' | 'not-deployed'> {
  const wallet = await walletEnvFor(deps, userId, agentId);
  if (!wallet) return 'no-wallet';
  if ((await hostState(host, agentId)) === null) return 'not-deployed';
  const current = (await host.spec(agentId)).agentEnv;
  const next = withWalletEnv(current, wallet);
  if (sameAgentEnv(current, next)) return 'unchanged';
  await host.configure(agentId, { agentEnv: next });
  return 'updated';
}
