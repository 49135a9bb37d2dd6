import { appendFile, mkdtemp, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SseEvent, openSse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAgents, startLocalAgents, userHeaders } from '../../services/agent-access.test-support.js';
import {
  type ContainerAgents,
  startDockerAgents,
  startHostedAgents,
  startKubeAgents,
} from '../../services/container-agents.test-support.js';
import { followFile } from '@aop/provisioner/log-follow';
import { SseWriter } from './streams.js';

async function until(ok: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The log lines among a stream's events. */
const logLines = (sse: { events: SseEvent[] }) => sse.events.filter((e) => e.event === 'log').map((e) => e.data.line as string);

// Spec §4.18 "Logs (planned)"; shapes and rules are ours (docs/decisions.md). The agent is a real local-provider
// gateway (the stand-in OpenClaw), so every line below was written by the host and the gateway process.
describe('agent logs', () => {
  let env: LocalAgents;
  let client = 0;
  const streamUrl = (agentId: string, query = '') => `${env.backend.url}/api/logs/${agentId}/stream${query}`;
  const headersFor = (userId: string) => ({ ...userHeaders(userId), 'x-forwarded-for': `192.0.2.${(++client % 250) + 1}` });

  beforeAll(async () => {
    env = await startLocalAgents('aop-logs-');
    await env.deploy('usr_logs', 'agt_logs');
  });
  afterAll(async () => {
    // A stream still open when the backend shuts down is ended, so closing does not wait on it.
    const sse = await openSse(streamUrl('agt_logs', '?tail=0'), headersFor('usr_logs'));
    await until(() => sse.events.length > 0, 'ready');
    await env.close();
    await until(() => sse.ended, 'the stream to end');
    expect(sse.events.at(-1)).toEqual({ event: 'end', data: { reason: 'server shutting down' } });
  });

  it('history answers the recent lines of the owner agent', async () => {
    const res = await env.call('usr_logs', 'GET', '/logs/agt_logs/history');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ agentId: 'agt_logs', provider: 'local', limit: 200, count: res.body.lines.length });
    expect(res.body.lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\[host\] started OpenClaw 1\.0\.0 \(pid \d+\) on 127\.0\.0\.1:\d+$/),
        expect.stringMatching(/^fake openclaw 1\.0\.0 starting on port \d+$/),
      ]),
    );
    const two = await env.call('usr_logs', 'GET', '/logs/agt_logs/history?limit=2');
    expect(two.body.lines).toEqual(res.body.lines.slice(-2));
    for (const limit of ['0', '1001', 'ten']) {
      expect((await env.call('usr_logs', 'GET', `/logs/agt_logs/history?limit=${limit}`)).body).toEqual({
        error: 'Invalid limit: use 1 to 1000',
      });
    }
    const other = await env.call('usr_intruder', 'GET', '/logs/agt_logs/history');
    expect([other.status, other.body]).toEqual([404, { error: 'Agent not found' }]);
    const created = await env.call('usr_logs', 'POST', '/agents', { name: 'Never deployed' });
    const pending = await env.call('usr_logs', 'GET', `/logs/${created.body.id}/history`);
    expect([pending.status, pending.body]).toEqual([409, { error: 'Agent is not deployed' }]);
    const noKey = await request(`${env.backend.url}/api/logs/agt_logs/history`, {
      headers: { ...userHeaders('usr_logs'), authorization: '' },
    });
    expect(noKey.status).toBe(401);
  });

  it('stream sends the tail, then new lines as the gateway writes them; active and stop see it', async () => {
    const sse = await openSse(streamUrl('agt_logs', '?tail=3'), headersFor('usr_logs'));
    expect(sse.res.status).toBe(200);
    expect(sse.res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(sse.res.headers.get('cache-control')).toBe('no-cache, no-transform');
    await until(() => logLines(sse).length === 3, 'the tail');
    const ready = sse.events[0];
    expect(ready).toEqual({
      event: 'ready',
      data: { streamId: expect.stringMatching(/^lgs_/), agentId: 'agt_logs', startedAt: expect.any(String) },
    });
    const history = await env.call('usr_logs', 'GET', '/logs/agt_logs/history?limit=3');
    expect(logLines(sse)).toEqual(history.body.lines);

    // A restart makes the gateway and the host write new lines.
    await env.host.restart('agt_logs');
    await until(() => logLines(sse).some((line) => line.startsWith('[host] started OpenClaw')), 'the restart lines');
    expect(logLines(sse)).toEqual(
      expect.arrayContaining(['[gateway] signal SIGTERM received, shutting down', expect.stringMatching(/^\[host\] gateway exited/)]),
    );

    const active = await env.call('usr_logs', 'GET', '/logs/active');
    expect(active.body).toEqual({
      streams: [{ id: ready?.data.streamId, agentId: 'agt_logs', startedAt: ready?.data.startedAt, linesSent: logLines(sse).length }],
      count: 1,
      maxPerUser: 5,
    });
    expect((await env.call('usr_intruder', 'GET', '/logs/active')).body).toEqual({ streams: [], count: 0, maxPerUser: 5 });
    const intruder = await env.call('usr_intruder', 'POST', '/logs/agt_logs/stop');
    expect(intruder.status).toBe(404);
    expect(sse.ended).toBe(false);

    const stop = await env.call('usr_logs', 'POST', '/logs/agt_logs/stop');
    expect(stop.body).toEqual({ success: true, agentId: 'agt_logs', stopped: 1 });
    await until(() => sse.ended, 'the stream to close');
    expect(sse.events.at(-1)).toEqual({ event: 'end', data: { reason: 'stopped' } });
    expect((await env.call('usr_logs', 'GET', '/logs/active')).body.count).toBe(0);
    expect((await env.call('usr_logs', 'POST', '/logs/agt_logs/stop')).body.stopped).toBe(0);
  });

  it('refuses other users, bad tails, and more than five streams per user; a disconnect frees a slot', async () => {
    const intruder = await openSse(streamUrl('agt_logs'), headersFor('usr_intruder'));
    expect(intruder.res.status).toBe(404);
    expect(await intruder.res.json()).toEqual({ error: 'Agent not found' });
    const bad = await openSse(streamUrl('agt_logs', '?tail=-1'), headersFor('usr_logs'));
    expect(bad.res.status).toBe(400);

    const open: Array<Awaited<ReturnType<typeof openSse>>> = [];
    for (let i = 0; i < 5; i += 1) {
      const sse = await openSse(streamUrl('agt_logs', '?tail=0'), headersFor('usr_logs'));
      expect(sse.res.status).toBe(200);
      open.push(sse);
    }
    await until(() => open.every((sse) => sse.events.length > 0), 'five ready events');
    const sixth = await openSse(streamUrl('agt_logs'), headersFor('usr_logs'));
    expect(sixth.res.status).toBe(429);
    expect(await sixth.res.json()).toEqual({ error: 'Too many log streams (max 5)' });

    open[0]?.close();
    const count = async () => (await env.call('usr_logs', 'GET', '/logs/active')).body.count as number;
    const deadline = Date.now() + 5_000;
    while ((await count()) !== 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await count()).toBe(4);
    const again = await openSse(streamUrl('agt_logs', '?tail=0'), headersFor('usr_logs'));
    expect(again.res.status).toBe(200);
    open.push(again);
    expect((await env.call('usr_logs', 'POST', '/logs/agt_logs/stop')).body.stopped).toBe(5);
    await until(() => open.slice(1).every((sse) => sse.ended), 'all streams to close');
  });
});

// The stream on the other providers: the docker host follows the engine's multiplexed log stream
// (`logs?follow=1`), the kubernetes host the pod log (`log?follow=true`), the hosting host polls the provider's log
// query. Each attaches again after a restart from the last line it sent.
describe.each([
  ['docker', startDockerAgents],
  ['kubernetes', startKubeAgents],
  ['hosting', startHostedAgents],
] as const)('logs on the %s provider', (provider, start) => {
  let env: ContainerAgents;
  const agentId = `agt_${provider}_logs`;
  let client = 0;
  const headersFor = (userId: string) => ({ ...userHeaders(userId), 'x-forwarded-for': `198.18.0.${(++client % 250) + 1}` });

  beforeAll(async () => {
    env = await start(`aop-logs-${provider}-`);
    await env.deploy('usr_follow', agentId);
    env.writeLog(agentId, ['gateway line one', 'gateway line two']);
  });
  afterAll(() => env.close());

  it('history and a live stream: the tail, new lines as they are written, across a restart; stop ends it', async () => {
    const history = await env.call('usr_follow', 'GET', `/logs/${agentId}/history?limit=2`);
    expect(history.body).toMatchObject({ agentId, provider, limit: 2, count: 2 });

    const sse = await openSse(`${env.backend.url}/api/logs/${agentId}/stream?tail=2`, headersFor('usr_follow'));
    expect(sse.res.status).toBe(200);
    await until(() => logLines(sse).length >= 2, 'the tail');
    expect(logLines(sse).slice(0, 2)).toEqual(history.body.lines);
    expect(sse.events[0]).toMatchObject({ event: 'ready', data: { agentId } });

    env.writeLog(agentId, ['live one', 'live two ✓']);
    await until(() => logLines(sse).includes('live two ✓'), 'the new lines');
    // (The docker host's own `[host]` lines, e.g. of the platform device's pairing, may come in between.)
    const gateway = (lines: string[]) => lines.filter((line) => !line.startsWith('[host]'));
    expect(gateway(logLines(sse))).toEqual([...gateway(history.body.lines), 'live one', 'live two ✓']);

    await env.host.restart(agentId);
    await env.host.waitUntilReady(agentId, { timeoutMs: 10_000 });
    env.writeLog(agentId, ['after restart']);
    await until(() => logLines(sse).includes('after restart'), 'a line after the restart', 15_000);
    if (provider === 'docker') {
      // The container's output around the restart, and the host's own lines as it logged them.
      expect(logLines(sse)).toEqual(
        expect.arrayContaining(['[gateway] signal SIGTERM received, shutting down', expect.stringMatching(/^\[host\] started aop-agent-/)]),
      );
    }
    // Attached again from the last line sent: nothing came twice.
    expect(logLines(sse).filter((line) => line === 'live one')).toHaveLength(1);
    expect(logLines(sse).filter((line) => line === 'gateway line two')).toHaveLength(1);

    const active = await env.call('usr_follow', 'GET', '/logs/active');
    expect(active.body).toMatchObject({ count: 1, streams: [{ agentId, linesSent: logLines(sse).length }] });
    expect((await env.call('usr_other', 'POST', `/logs/${agentId}/stop`)).status).toBe(404);
    const stop = await env.call('usr_follow', 'POST', `/logs/${agentId}/stop`);
    expect(stop.body).toEqual({ success: true, agentId, stopped: 1 });
    await until(() => sse.ended, 'the stream to close');
    expect(sse.events.at(-1)).toEqual({ event: 'end', data: { reason: 'stopped' } });
    expect((await env.call('usr_follow', 'GET', '/logs/active')).body.count).toBe(0);
  });

  it('refuses another user', async () => {
    const intruder = await openSse(`${env.backend.url}/api/logs/${agentId}/stream`, headersFor('usr_intruder'));
    expect([intruder.res.status, await intruder.res.json()]).toEqual([404, { error: 'Agent not found' }]);
  });
});

describe('followFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aop-follow-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('delivers the tail, appended lines (whole lines only, UTF-8 intact), and follows rotation and truncation', async () => {
    const file = join(dir, 'gateway.log');
    await writeFile(file, 'one\ntwo\nthree\n');
    const got: string[] = [];
    const follower = await followFile(file, (lines) => got.push(...lines), { tail: 2, pollMs: 20 });
    try {
      expect(got).toEqual(['two', 'three']);
      await appendFile(file, 'four\nfi');
      await until(() => got.length === 3, 'four');
      await appendFile(file, 've ✓\n');
      await until(() => got.length === 4, 'five');
      expect(got.slice(2)).toEqual(['four', 'five ✓']);
      await rename(file, `${file}.1`); // rotation: a new file takes the name
      await writeFile(file, 'after rotation\n');
      await until(() => got.includes('after rotation'), 'the rotated file');
      await truncate(file, 0);
      await new Promise((r) => setTimeout(r, 60));
      await appendFile(file, 'after truncation\n');
      await until(() => got.includes('after truncation'), 'the truncated file');
    } finally {
      follower.close();
    }
  });

  it('waits for a file that does not exist yet', async () => {
    const file = join(dir, 'later.log');
    const got: string[] = [];
    const follower = await followFile(file, (lines) => got.push(...lines), { tail: 10, pollMs: 20 });
    try {
      await writeFile(file, 'first line\n');
      await until(() => got.length === 1, 'the first line');
      expect(got).toEqual(['first line']);
    } finally {
      follower.close();
    }
  });
});

describe('SseWriter', () => {
  it('frames events, sends heartbeat comments, and ends with an end event', async () => {
    let writer: SseWriter | null = null;
    let closed = false;
    const server = createServer((_req, res) => {
      writer = new SseWriter(res, { 'x-extra': 'kept' }, { heartbeatMs: 30, retryMs: 1_000 });
      writer.onClose(() => {
        closed = true;
      });
      writer.send('log', { line: 'a "quoted"\nline' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const sse = await openSse(`http://127.0.0.1:${port}/`, {});
      expect(sse.res.headers.get('x-extra')).toBe('kept');
      expect(sse.res.headers.get('x-accel-buffering')).toBe('no');
      await until(() => sse.comments.some((c) => c.startsWith('ping ')), 'a heartbeat');
      expect(sse.events[0]).toEqual({ event: 'log', data: { line: 'a "quoted"\nline' } });
      (writer as SseWriter | null)?.end('done');
      await until(() => sse.ended, 'the end');
      expect(sse.events.at(-1)).toEqual({ event: 'end', data: { reason: 'done' } });
      expect(closed).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
