import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decryptSecret, parseEncryptionKey } from '@aop/core';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, fakeRuntimeHost, startBackend, userCalls } from '../../backend.test-support.js';
import { type Hook, startWebhookServer } from './webhooks.test-support.js';
import { walletKeyAad } from '../../services/underground.js';
import { signingText } from '../../services/underground-bus.js';

const KEY = 'internal-key-for-wallet-runtime-tests';
const HMAC = 'hmac-secret-for-wallet-runtime-tests';
const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const BUS_URL = 'http://backend.internal:3001/api/underground/bus/send';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

// Spec §4.11: an agent's underground wallet key reaches the agent's runtime (its gateway's environment, through the
// agent host), so the agent can sign its own bus messages. The agent host is the real local provider running the
// stand-in OpenClaw, which reports whether a variable is in its environment (with a digest, never the value).
describe('underground wallet handed to the agent runtime', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let webhooks: Awaited<ReturnType<typeof startWebhookServer>>;
  let hookUrl: string;
  let delivered: Hook['delivered'];
  let recipientId: string;

  const call = userCalls(() => backend.url, { internalKey: KEY, hmacSecret: HMAC });

  /** What the agent's running gateway has in its environment for `name`. */
  const runtimeEnv = async (agentId: string, name: string) => {
    const { url } = await host.waitUntilReady(agentId, { timeoutMs: 15_000 });
    return (await fetch(`${url}/env/${name}`)).json() as Promise<{ set: boolean; sha256: string | null }>;
  };

  /** The wallet key as the database holds it (sealed; the API never returns it). */
  const storedKey = async (agentId: string): Promise<Hex> => {
    const row = await backend.database.db.kysely
      .selectFrom('underground_wallets')
      .selectAll()
      .where('agent_id', '=', agentId)
      .executeTakeFirstOrThrow();
    return decryptSecret(parseEncryptionKey(ENCRYPTION_KEY), row.private_key_enc, walletKeyAad(agentId, row.address)) as Hex;
  };

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-wallet-runtime-'));
    webhooks = await startWebhookServer();
    ({
      url: hookUrl,
      hook: { delivered },
    } = webhooks.hook('recipient'));
    host = await fakeRuntimeHost(work);
    backend = await startBackend(
      {
        INTERNAL_API_KEY: KEY,
        HMAC_SECRET: HMAC,
        ENCRYPTION_KEY,
        TRUST_PROXY: '127.0.0.1',
        UNDERGROUND_BUS_URL: BUS_URL,
        UNDERGROUND_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
      { host },
    );
    const deployed = await call('usr_w', 'POST', '/deployments', { agentId: 'agt_signer', config: { autoProvision: true } });
    expect(deployed.status).toBe(201);
    // The recipient: an agent of another user with a bus webhook.
    const recipient = await call('usr_r', 'POST', '/agents', { name: 'Recipient' });
    expect(recipient.status).toBe(201);
    const hook = await call('usr_r', 'PUT', `/underground/agents/${recipient.body.id}/webhook`, { url: hookUrl });
    expect(hook.status).toBe(200);
    recipientId = recipient.body.id;
  }, 30_000);

  afterAll(async () => {
    await backend?.close();
    await host?.shutdown();
    await webhooks?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('creating the wallet restarts the agent with its key, address, id and the bus URL; the key is nowhere else', async () => {
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_WALLET_KEY')).toMatchObject({ set: false });
    const pid = (await host.status('agt_signer')).pid;

    const res = await call('usr_w', 'POST', '/underground/wallets', { agentId: 'agt_signer' });
    expect(res.status).toBe(201);
    const key = await storedKey('agt_signer');
    const address = privateKeyToAccount(key).address;
    expect(res.body).toEqual({ address, agentId: 'agt_signer' });
    expect(JSON.stringify(res.body)).not.toContain(key.slice(2));

    expect((await host.spec('agt_signer')).agentEnv).toEqual({
      AOP_AGENT_WALLET_KEY: key,
      AOP_AGENT_WALLET_ADDRESS: address,
      AOP_AGENT_ID: 'agt_signer',
      AOP_AGENT_BUS_URL: BUS_URL,
    });
    expect((await host.status('agt_signer')).pid).not.toBe(pid);
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_WALLET_KEY')).toMatchObject({ set: true, sha256: sha256(key) });
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_WALLET_ADDRESS')).toMatchObject({ set: true, sha256: sha256(address) });
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_BUS_URL')).toMatchObject({ set: true, sha256: sha256(BUS_URL) });

    const paths = host.paths('agt_signer');
    for (const file of [paths.config, paths.registry]) expect(await readFile(file, 'utf8')).not.toContain(key.slice(2));
    expect((await host.logs('agt_signer', { tail: 1000 })).join('\n')).not.toContain(key.slice(2));

    // Asking again answers the same wallet and leaves the running gateway alone (nothing changed).
    const restarted = (await host.status('agt_signer')).pid;
    const again = await call('usr_w', 'POST', '/underground/wallets', { agentId: 'agt_signer' });
    expect([again.status, again.body]).toEqual([200, { address, agentId: 'agt_signer' }]);
    expect((await host.status('agt_signer')).pid).toBe(restarted);
  });

  it('a bus message the agent signs with the key from its environment is accepted and delivered', async () => {
    const key = (await host.spec('agt_signer')).agentEnv?.AOP_AGENT_WALLET_KEY as Hex;
    const account = privateKeyToAccount(key);
    const message = {
      messageId: `msg-${randomBytes(6).toString('hex')}`,
      action: 'HELLO',
      fromAgentId: 'agt_signer',
      toAgentId: recipientId,
      payload: { text: 'signed by the agent itself' },
    };
    const signature = await account.signMessage({ message: signingText(message) });
    const res = await request(`${backend.url}/api/underground/bus/send`, { method: 'POST', json: { ...message, signature } });
    expect([res.status, res.body]).toEqual([200, { success: true, messageId: message.messageId }]);
    expect(delivered.at(-1)?.body).toMatchObject({
      message: { messageId: message.messageId, action: 'HELLO' },
      sender: { agentId: 'agt_signer', address: account.address },
      recipientAgentId: recipientId,
    });

    // Without fromAgentId the recovered address names the agent as well; a different key is refused.
    const anonymous = { messageId: `msg-${randomBytes(6).toString('hex')}`, action: 'HELLO', toAgentId: recipientId };
    const byAddress = await request(`${backend.url}/api/underground/bus/send`, {
      method: 'POST',
      json: { ...anonymous, signature: await account.signMessage({ message: signingText(anonymous) }) },
    });
    expect(byAddress.status).toBe(200);
    const stranger = privateKeyToAccount(`0x${randomBytes(32).toString('hex')}`);
    const forged = { ...message, messageId: `msg-${randomBytes(6).toString('hex')}` };
    const refused = await request(`${backend.url}/api/underground/bus/send`, {
      method: 'POST',
      json: { ...forged, signature: await stranger.signMessage({ message: signingText(forged) }) },
    });
    expect([refused.status, refused.body]).toEqual([401, { error: 'Invalid signature' }]);
  });

  it('repair hands the wallet back to a runtime that lost it; a redeployment keeps it', async () => {
    const key = await storedKey('agt_signer');
    await host.configure('agt_signer', { agentEnv: {} });
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_WALLET_KEY')).toMatchObject({ set: false });
    const repaired = await call('usr_w', 'POST', '/agents/agt_signer/repair');
    expect([repaired.status, repaired.body]).toEqual([200, { success: true, message: 'Agent repaired successfully' }]);
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_WALLET_KEY')).toMatchObject({ set: true, sha256: sha256(key) });

    const redeployed = await call('usr_w', 'POST', '/deployments', { agentId: 'agt_signer', config: { autoProvision: true } });
    expect(redeployed.status).toBe(200);
    expect((await host.spec('agt_signer')).agentEnv?.AOP_AGENT_WALLET_KEY).toBe(key);
    expect(await runtimeEnv('agt_signer', 'AOP_AGENT_WALLET_KEY')).toMatchObject({ set: true, sha256: sha256(key) });
  });

  it('a wallet made before the agent is deployed reaches it at its deployment', async () => {
    const pending = await call('usr_w', 'POST', '/agents', { name: 'Later' });
    const agentId = pending.body.id as string;
    const wallet = await call('usr_w', 'POST', '/underground/wallets', { agentId });
    expect(wallet.status).toBe(201);
    const deployed = await call('usr_w', 'POST', '/deployments', { agentId, config: { autoProvision: true } });
    expect(deployed.status).toBe(200);
    const key = await storedKey(agentId);
    expect((await host.spec(agentId)).agentEnv).toMatchObject({ AOP_AGENT_WALLET_KEY: key, AOP_AGENT_ID: agentId });
    expect(await runtimeEnv(agentId, 'AOP_AGENT_WALLET_KEY')).toMatchObject({ set: true, sha256: sha256(key) });
  });

  it("another user's agent: 403 and nothing reaches any runtime", async () => {
    const res = await call('usr_r', 'POST', '/underground/wallets', { agentId: 'agt_signer' });
    expect(res.status).toBe(403);
    expect((await host.spec('agt_signer')).agentEnv?.AOP_AGENT_ID).toBe('agt_signer');
  });
});
