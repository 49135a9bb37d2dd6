import { decryptSecret, encryptSecret, parseEncryptionKey } from '@aop/core';
import type { AgentSpec, ChannelTokens, LlmSpec } from '../host.js';
import { MESSAGING_CHANNELS, checkAgentEnv } from './openclaw-config.js';

/**
 * How hosts that keep a registry of their own (local, docker, hosting) store an agent's secrets: the gateway token,
 * channel tokens, LLM key and the agent's own variables (`agentEnv`) sealed with AES-256-GCM, each bound to its agent and its name as associated data, so a
 * sealed value copied to another agent or field does not open.
 */
export interface SecretBox {
  encrypt(plaintext: string, associatedData: string): string;
  decrypt(sealed: string, associatedData: string): string;
}

/** The box of a host's options: `secrets` as given, else one over the 32-byte `encryptionKey`. */
export function secretBoxFor(
  options: { encryptionKey?: Buffer | string | undefined; secrets?: SecretBox | undefined },
  host: string,
): SecretBox {
  if (options.secrets) return options.secrets;
  if (options.encryptionKey === undefined) throw new Error(`${host} needs \`encryptionKey\` or \`secrets\` to store agent tokens`);
  const key = Buffer.isBuffer(options.encryptionKey) ? options.encryptionKey : parseEncryptionKey(options.encryptionKey);
  if (key.length !== 32) throw new Error('Encryption key must be 32 bytes');
  return { encrypt: (p, aad) => encryptSecret(key, p, aad), decrypt: (s, aad) => decryptSecret(key, s, aad) };
}

/** The associated data of one sealed value of an agent. */
export const secretAad = (agentId: string, name: string): string => `agent:${agentId}:${name}`;

type ChannelName = (typeof MESSAGING_CHANNELS)[number];

/** The part of a registry record that holds the spec, its secrets sealed. */
export interface SealedSpecRecord {
  agentId: string;
  userId: string;
  plan: string;
  config: Record<string, unknown>;
  version: string;
  llm: (Omit<LlmSpec, 'apiKey'> & { apiKey: string }) | null;
  secrets: {
    gatewayToken: string;
    channelTokens: Partial<Record<ChannelName, string>>;
    /** `agentEnv`, each value sealed; absent in records written before it existed. */
    env?: Record<string, string>;
  };
}

/** Seals `spec`'s secrets into `record` (replacing the channel tokens, LLM settings and agent variables it had). */
export function sealSpecSecrets(
  box: SecretBox,
  record: SealedSpecRecord,
  spec: Pick<AgentSpec, 'gatewayToken' | 'channelTokens' | 'llm' | 'agentEnv'>,
): void {
  const id = record.agentId;
  const env = checkAgentEnv(spec.agentEnv);
  record.secrets.gatewayToken = box.encrypt(spec.gatewayToken, secretAad(id, 'gatewayToken'));
  record.secrets.channelTokens = {};
  for (const name of MESSAGING_CHANNELS) {
    const token = spec.channelTokens?.[name];
    if (token) record.secrets.channelTokens[name] = box.encrypt(token, secretAad(id, `channel:${name}`));
  }
  record.llm = spec.llm ? { ...spec.llm, apiKey: box.encrypt(spec.llm.apiKey, secretAad(id, 'llmApiKey')) } : null;
  record.secrets.env = Object.fromEntries(
    Object.entries(env).map(([name, value]) => [name, box.encrypt(value, secretAad(id, `env:${name}`))]),
  );
}

/**
 * What every registry record starts from: the spec's fields, `desired: 'running'`, the secrets sealed, both times now.
 * Each provider adds its own fields (port, image, service…).
 */
export function newSealedRecord(
  box: SecretBox,
  spec: AgentSpec,
  version: string,
): SealedSpecRecord & { desired: 'running'; createdAt: string; updatedAt: string } {
  const now = new Date().toISOString();
  const record = {
    agentId: spec.agentId,
    userId: spec.userId,
    plan: spec.plan,
    config: spec.config,
    version,
    desired: 'running' as const,
    llm: null,
    secrets: { gatewayToken: '', channelTokens: {} },
    createdAt: now,
    updatedAt: now,
  };
  sealSpecSecrets(box, record, spec);
  return record;
}

/** The agent's spec with its secrets opened. */
export function openSealedSpec(box: SecretBox, record: SealedSpecRecord): AgentSpec {
  const id = record.agentId;
  const channelTokens: ChannelTokens = {};
  for (const name of MESSAGING_CHANNELS) {
    const sealed = record.secrets.channelTokens[name];
    if (sealed) channelTokens[name] = box.decrypt(sealed, secretAad(id, `channel:${name}`));
  }
  const agentEnv = Object.fromEntries(
    Object.entries(record.secrets.env ?? {}).map(([name, sealed]) => [name, box.decrypt(sealed, secretAad(id, `env:${name}`))]),
  );
  return {
    agentId: id,
    userId: record.userId,
    plan: record.plan,
    config: record.config,
    gatewayToken: box.decrypt(record.secrets.gatewayToken, secretAad(id, 'gatewayToken')),
    channelTokens,
    llm: record.llm ? { ...record.llm, apiKey: box.decrypt(record.llm.apiKey, secretAad(id, 'llmApiKey')) } : undefined,
    ...(Object.keys(agentEnv).length > 0 ? { agentEnv } : {}),
    version: record.version,
  };
}
