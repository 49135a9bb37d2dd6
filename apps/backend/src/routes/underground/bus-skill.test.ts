import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUS_SKILL_DIR, type LocalAgentHost } from '@aop/provisioner';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, fakeRuntimeHost, startBackend, userCalls } from '../../backend.test-support.js';
import { type Hook, startWebhookServer } from './webhooks.test-support.js';

const KEY = 'internal-key-for-bus-skill-tests';
const HMAC = 'hmac-secret-for-bus-skill-tests';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The `underground-bus` skill as the agent uses it: the script installed in the agent's workspace, run with plain
// Node and nothing but the variables its runtime has, signs and sends; the real backend verifies and delivers.
describe('underground-bus skill script against the bus', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let webhooks: Awaited<ReturnType<typeof startWebhookServer>>;
  let hookUrl: string;
  let delivered: Hook['delivered'];
  let recipientId: string;
  let script: string;
  let agentEnv: Record<string, string>;

  const call = userCalls(() => backend.url, { internalKey: KEY, hmacSecret: HMAC });

  /** `node send.mjs …` with only `env` (and PATH): what the agent's exec tool runs. */
  const send = (args: string[], env: Record<string, string>) =>
    new Promise<Run>((resolve) => {
      execFile(
        process.execPath,
        [script, ...args],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, timeout: 30_000 },
        (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-bus-skill-'));
    webhooks = await startWebhookServer();
    ({
      url: hookUrl,
      hook: { delivered },
    } = webhooks.hook('recipient'));
    host = await fakeRuntimeHost(work);
    // The bus URL the agent gets is where this test's backend listens: known only once it runs, so a placeholder
    // first and the agent's variables are taken from its spec with the URL put right (as an operator would set it).
    backend = await startBackend(
      {
        INTERNAL_API_KEY: KEY,
        HMAC_SECRET: HMAC,
        ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        TRUST_PROXY: '127.0.0.1',
        UNDERGROUND_BUS_URL: 'http://backend.internal:3001/api/underground/bus/send',
        UNDERGROUND_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
      { host },
    );
    const deployed = await call('usr_s', 'POST', '/deployments', { agentId: 'agt_sender', config: { autoProvision: true } });
    expect(deployed.status).toBe(201);
    expect((await call('usr_s', 'POST', '/underground/wallets', { agentId: 'agt_sender' })).status).toBe(201);
    const recipient = await call('usr_r', 'POST', '/agents', { name: 'Recipient' });
    recipientId = recipient.body.id;
    expect((await call('usr_r', 'PUT', `/underground/agents/${recipientId}/webhook`, { url: hookUrl })).status).toBe(200);

    script = join(host.paths('agt_sender').workspace, ...BUS_SKILL_DIR, 'send.mjs');
    const env = (await host.spec('agt_sender')).agentEnv ?? {};
    agentEnv = { ...env, AOP_AGENT_BUS_URL: `${backend.url}/api/underground/bus/send` };
  }, 60_000);

  afterAll(async () => {
    await backend?.close();
    await host?.shutdown();
    await webhooks?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('the installed script signs with the wallet key; the bus accepts (200) and delivers it', async () => {
    const key = agentEnv.AOP_AGENT_WALLET_KEY as Hex;
    expect(agentEnv.AOP_AGENT_WALLET_ADDRESS).toBe(privateKeyToAccount(key).address);
    const run = await send(['--action', 'HELLO', '--to', recipientId, '--payload', '{"text":"hi from the skill","n":[1,2]}'], agentEnv);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout);
    expect(answer).toEqual({ status: 200, success: true, messageId: expect.stringMatching(/^msg-[0-9a-f-]{36}$/) });
    expect(delivered.at(-1)?.body).toMatchObject({
      message: {
        messageId: answer.messageId,
        action: 'HELLO',
        fromAgentId: 'agt_sender',
        payload: { text: 'hi from the skill', n: [1, 2] },
      },
      sender: { agentId: 'agt_sender', address: agentEnv.AOP_AGENT_WALLET_ADDRESS },
      recipientAgentId: recipientId,
    });
    expect(run.stdout + run.stderr).not.toContain(key.slice(2));
  });

  it('a booking request and the answer of the bus to a repeated message id', async () => {
    const args = ['--action', 'BOOKING_REQUEST', '--to', recipientId, '--message-id', `bk-${randomBytes(4).toString('hex')}`];
    const terms = '{"terms":{"fee":150.5,"date":"2026-12-31T20:00:00Z","venue":"Club"}}';
    const first = await send([...args, '--payload', terms], agentEnv);
    expect([first.code, JSON.parse(first.stdout).status]).toEqual([0, 200]);
    expect(delivered.at(-1)?.body.message).toMatchObject({ action: 'BOOKING_REQUEST', payload: { terms: { fee: 150.5 } } });
    const again = await send([...args, '--payload', terms], agentEnv);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 409, error: 'Message already received' });
  });

  it('a key that is not the wallet’s: 401 Invalid signature, exit code 1', async () => {
    const forged = `0x${randomBytes(32).toString('hex')}`;
    const run = await send(['--action', 'HELLO', '--to', recipientId], { ...agentEnv, AOP_AGENT_WALLET_KEY: forged });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 401, error: 'Invalid signature' });
    expect(run.stdout + run.stderr).not.toContain(forged.slice(2));
  });

  it('a missing variable or argument: a clear message, exit code 2, nothing sent, the key never shown', async () => {
    const before = delivered.length;
    const { AOP_AGENT_WALLET_KEY: key, ...withoutKey } = agentEnv;
    const noKey = await send(['--action', 'HELLO', '--to', recipientId], withoutKey);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('AOP_AGENT_WALLET_KEY is not set');
    const { AOP_AGENT_BUS_URL: _url, ...withoutUrl } = agentEnv;
    const noUrl = await send(['--action', 'HELLO', '--to', recipientId], withoutUrl);
    expect([noUrl.code, noUrl.stderr.split('\n')[0]]).toEqual([2, expect.stringContaining('AOP_AGENT_BUS_URL is not set')]);
    const noAction = await send(['--to', recipientId], agentEnv);
    expect([noAction.code, noAction.stderr.split('\n')[0]]).toEqual([2, '--action is required']);
    const badPayload = await send(['--action', 'HELLO', '--payload', '{oops'], agentEnv);
    expect([badPayload.code, badPayload.stderr]).toEqual([2, expect.stringContaining('--payload must be JSON')]);
    const badKey = await send(['--action', 'HELLO'], { ...agentEnv, AOP_AGENT_WALLET_KEY: `${key}ff` });
    expect([badKey.code, badKey.stderr]).toEqual([2, expect.stringContaining('must be 0x followed by 64 hex digits')]);
    for (const run of [noKey, noUrl, noAction, badPayload, badKey]) expect(run.stdout + run.stderr).not.toContain((key as string).slice(2));
    expect(delivered.length).toBe(before);
  });

  it('the skill is back after a repair (rewritten from the platform’s copy)', async () => {
    const skillMd = join(host.paths('agt_sender').workspace, ...BUS_SKILL_DIR, 'SKILL.md');
    const original = await readFile(skillMd, 'utf8');
    await rm(join(host.paths('agt_sender').workspace, '.agents'), { recursive: true, force: true });
    expect((await call('usr_s', 'POST', '/agents/agt_sender/repair')).status).toBe(200);
    expect(await readFile(skillMd, 'utf8')).toBe(original);
    const run = await send(['--action', 'HELLO', '--to', recipientId], agentEnv);
    expect(run.code).toBe(0);
  });
});
