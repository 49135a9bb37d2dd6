import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend, userCalls } from '../../backend.test-support.js';
import { DEFAULT_MODELS } from '../../services/agents.js';

const KEY = 'internal-key-for-agent-secret-tests';
const HMAC = 'hmac-secret-for-agent-secret-tests';

// `PUT /api/agents/:id` with `channelTokens` / `apiKey` (what the web's `set-credential` sends): the secrets reach the
// agent's host spec, and nowhere else; the agent host is the real local provider running a stand-in OpenClaw.
describe('PUT /api/agents/:id channel tokens and LLM key', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;

  const call = userCalls(() => backend.url, { internalKey: KEY, hmacSecret: HMAC });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-agent-secrets-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      // The stand-in runtime is plain Node: it runs on this process's Node.
      nodeBin: process.execPath,
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1' }, { host });
    const res = await call('usr_s', 'POST', '/deployments', {
      agentId: 'agt_secret',
      name: 'Secret',
      config: { telegramToken: 'tg-first' },
    });
    expect(res.status).toBe(201);
    await host.waitUntilReady('agt_secret', { timeoutMs: 15_000 });
  }, 30_000);

  afterAll(async () => {
    await backend?.close();
    await host?.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('sets one channel token and keeps the others; the gateway comes back with it', async () => {
    const res = await call('usr_s', 'PUT', '/agents/agt_secret', { channelTokens: { discord: 'dc-token-1' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 'agt_secret', message: 'Agent updated' });
    expect(JSON.stringify(res.body)).not.toContain('dc-token-1');
    expect((await host.spec('agt_secret')).channelTokens).toEqual({ telegram: 'tg-first', discord: 'dc-token-1' });

    await call('usr_s', 'PUT', '/agents/agt_secret', { channelTokens: { telegram: 'tg-second', whatsapp: 'wa-1' } });
    expect((await host.spec('agt_secret')).channelTokens).toEqual({ telegram: 'tg-second', discord: 'dc-token-1', whatsapp: 'wa-1' });
    await host.waitUntilReady('agt_secret', { timeoutMs: 15_000 });
  });

  it("sets the agent's own LLM key for its provider, keeping the model it runs", async () => {
    const res = await call('usr_s', 'PUT', '/agents/agt_secret', { apiKey: 'sk-user-llm-1' });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain('sk-user-llm-1');
    const llm = { baseUrl: backend.config.aiBaseUrls.openrouter, apiKey: 'sk-user-llm-1', model: DEFAULT_MODELS.openrouter };
    expect((await host.spec('agt_secret')).llm).toEqual(llm);
    await call('usr_s', 'PUT', '/agents/agt_secret', { apiKey: 'sk-user-llm-2' });
    expect((await host.spec('agt_secret')).llm).toEqual({ ...llm, apiKey: 'sk-user-llm-2' });
    // Channel tokens are untouched by a key change.
    expect((await host.spec('agt_secret')).channelTokens?.discord).toBe('dc-token-1');
  });

  it('400 for bad tokens or keys, without repeating them', async () => {
    for (const channelTokens of [
      'tg',
      [],
      {},
      { sms: 'x' },
      { telegram: 5 },
      { telegram: '' },
      { telegram: ' padded ' },
      { telegram: 'x'.repeat(4097) },
    ]) {
      const res = await call('usr_s', 'PUT', '/agents/agt_secret', { channelTokens });
      expect([res.status, res.body]).toEqual([400, { error: 'Invalid channelTokens' }]);
    }
    for (const apiKey of [5, '', ' sk-padded', 'x'.repeat(4097), null]) {
      const res = await call('usr_s', 'PUT', '/agents/agt_secret', { apiKey });
      expect([res.status, res.body]).toEqual([400, { error: 'Invalid apiKey' }]);
    }
    expect((await host.spec('agt_secret')).llm?.apiKey).toBe('sk-user-llm-2');
  });

  it("404 for another user's agent, 409 for an agent that is not deployed; nothing is changed", async () => {
    const foreign = await call('usr_other', 'PUT', '/agents/agt_secret', { channelTokens: { telegram: 'stolen' } });
    expect([foreign.status, foreign.body]).toEqual([404, { error: 'Agent not found' }]);
    const pending = await call('usr_s', 'POST', '/agents', { name: 'Pending' });
    const notDeployed = await call('usr_s', 'PUT', `/agents/${pending.body.id}`, { apiKey: 'sk-x', plan: 'collective' });
    expect([notDeployed.status, notDeployed.body]).toEqual([409, { error: 'Agent is not deployed' }]);
    expect((await call('usr_s', 'GET', `/agents/${pending.body.id}`)).body.plan).toBe('label');
    expect((await host.spec('agt_secret')).channelTokens?.telegram).toBe('tg-second');
  });
});
