import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId, userContextHeaders } from '@aop/core';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, startBackend, signedCaller } from '../../backend.test-support.js';

// Spec §4.18 "Metrics (backend)": GET /api/metrics/:userId/{historical,performance,summary}, §5 identity headers and
// administrators. Figures come from real ledger rows and agent records; agents run on the real local host.

const KEY = 'internal-key-for-metrics-tests-000';
const HMAC = 'hmac-secret-for-metrics-tests-0000';
const DAY = 86_400_000;

/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);

describe('backend metrics', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let client = 0;
  const today = new Date(Math.floor(Date.now() / DAY) * DAY + 60_000);

  const call = (userId: string, path: string, headers: Record<string, string> = as(userId)) =>
    request(`${backend.url}/api${path}`, { headers: { ...headers, 'x-forwarded-for': `198.19.0.${++client % 250}` } });

  async function usage(userId: string, at: Date, model: string, prompt: number, completion: number, cost: string) {
    await backend.database.db.withUser(userId, (trx) =>
      trx
        .insertInto('usage_events')
        .values({
          id: newId('usage'),
          user_id: userId,
          kind: 'ai-chat',
          model,
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
          cost_usd: cost,
          created_at: at,
        })
        .execute(),
    );
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-backend-metrics-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      readyTimeoutMs: 10_000,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend(
      { INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1', ADMIN_EMAILS: 'Boss@Example.com' },
      { host },
    );
    const deployed = await request(`${backend.url}/api/deployments`, {
      json: { agentId: 'agt_m1', name: 'Miner', config: { autoProvision: true } },
      headers: as('usr_m'),
    });
    expect(deployed.status).toBe(201);
    const pending = await request(`${backend.url}/api/agents`, { json: { name: 'Later' }, headers: as('usr_m') });
    expect(pending.status).toBe(201);
    await host.waitUntilReady('agt_m1', { timeoutMs: 10_000 });

    await usage('usr_m', today, 'model-a', 100, 50, '0.010000');
    await usage('usr_m', today, 'model-b', 10, 5, '0.002000');
    await usage('usr_m', new Date(today.getTime() - 3 * DAY), 'model-a', 200, 100, '0.020000');
    await usage('usr_m', new Date(today.getTime() - 40 * DAY), 'model-a', 1000, 0, '1.000000');
    await usage('usr_x', today, 'model-a', 1, 1, '5.000000');
  });
  afterAll(async () => {
    await backend?.close();
    await host?.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it(':userId must be the caller unless the caller is an administrator', async () => {
    const other = await call('usr_x', '/metrics/usr_m/summary');
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: 'Forbidden' });
    const { authorization: _, ...noKey } = as('usr_m');
    expect((await call('usr_m', '/metrics/usr_m/summary', noKey)).status).toBe(401);
    const anonymous = await call('anonymous', '/metrics/anonymous/summary', {
      authorization: `Bearer ${KEY}`,
      ...userContextHeaders({}, HMAC),
    });
    expect(anonymous.body).toEqual({ error: 'User context required' });
    const admin = await call('usr_boss', '/metrics/usr_m/summary', as('usr_boss', 'boss@example.com'));
    expect(admin.status).toBe(200);
    expect(admin.body.usage.allTime.calls).toBe(4);
  });

  it('historical: one entry per UTC day from the ledger and agent records', async () => {
    const res = await call('usr_m', '/metrics/usr_m/historical');
    expect(res.status).toBe(200);
    expect(res.body.days).toBe(30);
    expect(res.body.series).toHaveLength(30);
    const last = res.body.series.at(-1);
    expect(last).toEqual({
      date: today.toISOString().slice(0, 10),
      agentsCreated: 2,
      calls: 2,
      tokens: 165,
      promptTokens: 110,
      completionTokens: 55,
      costUsd: 0.012,
    });
    expect(res.body.series.at(-4)).toMatchObject({ calls: 1, tokens: 300, costUsd: 0.02, agentsCreated: 0 });
    expect(res.body.totals).toEqual({ agentsCreated: 2, calls: 3, tokens: 465, promptTokens: 310, completionTokens: 155, costUsd: 0.032 });
    expect(res.body.currency).toBe('USD');

    const short = await call('usr_m', '/metrics/usr_m/historical?days=2');
    expect(short.body.series).toHaveLength(2);
    expect(short.body.totals.calls).toBe(2);
    expect((await call('usr_m', '/metrics/usr_m/historical?days=5000')).body.series).toHaveLength(365);
    expect((await call('usr_m', '/metrics/usr_m/historical?days=abc')).body).toEqual({ error: 'days must be an integer' });
  });

  it('summary: agents by live status, ledger totals, coordination counts', async () => {
    const res = await call('usr_m', '/metrics/usr_m/summary');
    expect(res.body).toMatchObject({
      userId: 'usr_m',
      agents: { total: 2, byStatus: { active: 1, pending: 1, stopped: 0, error: 0, deploying: 0 } },
      usage: {
        allTime: { calls: 4, tokens: 1465, costUsd: 1.032 },
        last30Days: { calls: 3, tokens: 465, costUsd: 0.032 },
        today: { calls: 2, tokens: 165, costUsd: 0.012 },
      },
      swarms: 0,
      installations: { linked: 0, pending: 0 },
    });
    expect(Date.parse(res.body.usage.firstActivityAt)).toBe(today.getTime() - 40 * DAY);
    // Each user sees their own figures only.
    const x = await call('usr_x', '/metrics/usr_x/summary');
    expect(x.body).toMatchObject({ agents: { total: 0 }, usage: { allTime: { calls: 1, costUsd: 5 } } });
  });

  it('performance: per-model call figures and each agent’s live state', async () => {
    const res = await call('usr_m', '/metrics/usr_m/performance');
    expect(res.status).toBe(200);
    expect(res.body.calls).toMatchObject({ days: 7, calls: 3, avgTokensPerCall: 155, avgCostPerCallUsd: 0.010667 });
    expect(res.body.calls.byModel).toEqual([
      {
        model: 'model-a',
        calls: 2,
        share: 0.6667,
        avgPromptTokens: 150,
        avgCompletionTokens: 75,
        avgTokens: 225,
        avgCostUsd: 0.015,
        costUsd: 0.03,
      },
      {
        model: 'model-b',
        calls: 1,
        share: 0.3333,
        avgPromptTokens: 10,
        avgCompletionTokens: 5,
        avgTokens: 15,
        avgCostUsd: 0.002,
        costUsd: 0.002,
      },
    ]);
    const miner = res.body.agents.find((a: { id: string }) => a.id === 'agt_m1');
    expect(miner).toMatchObject({ name: 'Miner', status: 'active', live: true, ready: true, restarts: 0, version: '1.0.0' });
    expect(miner.startupMs).toBeGreaterThanOrEqual(0);
    expect(miner.uptimeMs).toBeGreaterThanOrEqual(0);
    const later = res.body.agents.find((a: { name: string }) => a.name === 'Later');
    expect(later).toMatchObject({ status: 'pending', live: null, ready: null, uptimeMs: null });
    expect(res.body.availability).toEqual({ health: 'healthy', expected: 1, serving: 1, ratio: 1 });
    expect(res.body.provider).toBe('local');
    expect(res.body).not.toHaveProperty('latency');
  });
});
