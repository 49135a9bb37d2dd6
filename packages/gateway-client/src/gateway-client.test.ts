import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createDeviceIdentity } from './device-identity.js';
import { type FakeGatewayWs, startFakeGatewayWs } from './fake-gateway-ws.test-support.js';
import {
  type GatewayConnection,
  GatewayError,
  type GatewayEventFrame,
  chatSend,
  connectGateway,
  cronAdd,
  cronList,
  cronRemove,
} from './gateway-client.js';

const TOKEN = 'gw-token-0123456789';
const JOB = {
  name: 'daily-summary',
  description: 'platform test job',
  schedule: { kind: 'cron', expr: '0 9 * * *', tz: 'UTC' },
  sessionTarget: 'isolated',
  wakeMode: 'now' as const,
  payload: { kind: 'agentTurn', message: 'Summarize yesterday.' },
  delivery: { mode: 'none' },
};

let gateways: FakeGatewayWs[] = [];
let conns: GatewayConnection[] = [];
let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

async function gateway(opts: Partial<Parameters<typeof startFakeGatewayWs>[0]> = {}) {
  const g = await startFakeGatewayWs({ token: TOKEN, ...opts });
  gateways.push(g);
  return g;
}

async function connect(g: FakeGatewayWs, opts: Partial<Parameters<typeof connectGateway>[0]> = {}) {
  const c = await connectGateway({ url: g.url, token: TOKEN, ...opts });
  conns.push(c);
  return c;
}

async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

beforeEach(() => {
  unhandled = [];
  process.on('unhandledRejection', onUnhandled);
});

afterEach(async () => {
  await Promise.all(conns.map((c) => c.close()));
  await Promise.all(gateways.map((g) => g.close()));
  conns = [];
  gateways = [];
  // Let any stray rejection surface before checking.
  await new Promise((r) => setTimeout(r, 20));
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

describe('connectGateway handshake', () => {
  it('answers the challenge with a protocol-4 connect and resolves on hello-ok (no device)', async () => {
    const g = await gateway();
    const c = await connect(g);
    expect(c.hello.type).toBe('hello-ok');
    expect(c.hello.protocol).toBe(4);
    expect(c.hello.auth?.scopes).toEqual(['operator.admin', 'operator.read', 'operator.write']);
    expect(c.hello.auth?.deviceToken).toBeUndefined();
    expect(g.received).toHaveLength(1);
    const first = g.received[0]!;
    expect(first.method).toBe('connect');
    expect(first.params).toMatchObject({
      minProtocol: 4,
      maxProtocol: 4,
      client: { id: 'gateway-client', mode: 'backend' },
      role: 'operator',
      auth: { token: TOKEN },
    });
    expect(first.params.device).toBeUndefined();
    expect(g.connectAttempts).toEqual([{ ok: true }]);
    expect(await c.request('health')).toEqual({ ok: true });
  });

  it('sends a device block whose v3 signature the gateway verifies', async () => {
    const g = await gateway();
    const device = createDeviceIdentity();
    const c = await connect(g, { device, platform: 'Linux', deviceFamily: 'Server', scopes: ['operator.read'] });
    expect(c.hello.auth?.deviceToken).toBe(`devtok-${device.deviceId.slice(0, 8)}`);
    expect(c.hello.auth?.scopes).toEqual(['operator.read']);
    const sent = g.received[0]!.params.device;
    expect(sent).toMatchObject({ id: device.deviceId, publicKey: device.publicKeyRaw });
    expect(typeof sent.signedAt).toBe('number');
    expect(typeof sent.nonce).toBe('string');
  });

  it('rejects with the server code when the token is wrong', async () => {
    const g = await gateway();
    const err = await rejection(connectGateway({ url: g.url, token: 'wrong' }));
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toBe('unauthorized: gateway token mismatch');
    expect(err.details).toEqual({ code: 'AUTH_TOKEN_MISMATCH' });
    expect(err.retryable).toBe(false);
    expect(g.connectAttempts).toEqual([{ ok: false, code: 'UNAUTHORIZED' }]);
  });

  it('is rejected when the device signature does not match the public key', async () => {
    const g = await gateway();
    const a = createDeviceIdentity();
    const b = createDeviceIdentity();
    const err = await rejection(connectGateway({ url: g.url, token: TOKEN, device: { ...a, privateKeyPem: b.privateKeyPem } }));
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.message).toBe('device signature invalid: signature does not verify');
  });

  it('surfaces NOT_PAIRED with its details for an unapproved device', async () => {
    const paired = createDeviceIdentity();
    const g = await gateway({ pairedDeviceIds: [paired.deviceId] });
    const stranger = createDeviceIdentity();
    const err = await rejection(connectGateway({ url: g.url, token: TOKEN, device: stranger }));
    expect(err.code).toBe('NOT_PAIRED');
    expect(err.details).toMatchObject({ code: 'PAIRING_REQUIRED', reason: 'not-paired', deviceId: stranger.deviceId });
    const c = await connect(g, { device: paired });
    expect(c.hello.auth?.deviceToken).toBeDefined();
  });

  it('retries a retryable UNAVAILABLE after its retryAfterMs', async () => {
    const g = await gateway({ unavailableConnects: 2, retryAfterMs: 80 });
    const started = Date.now();
    const c = await connect(g);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(c.hello.type).toBe('hello-ok');
    expect(g.connectAttempts).toEqual([{ ok: false, code: 'UNAVAILABLE' }, { ok: false, code: 'UNAVAILABLE' }, { ok: true }]);
  });

  it('gives up on UNAVAILABLE once the retry deadline passes', async () => {
    const g = await gateway({ unavailableConnects: 1000, retryAfterMs: 60 });
    const err = await rejection(connectGateway({ url: g.url, token: TOKEN, retryDeadlineMs: 250 }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.retryable).toBe(true);
    expect(err.retryAfterMs).toBe(60);
    expect(err.details).toEqual({ reason: 'startup-sidecars' });
    expect(g.connectAttempts.length).toBeGreaterThanOrEqual(3);
    expect(g.connectAttempts.length).toBeLessThanOrEqual(6);
  });

  it('times out when no challenge arrives, and fails fast when nothing listens', async () => {
    const silent = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => silent.once('listening', r));
    try {
      const port = (silent.address() as AddressInfo).port;
      const started = Date.now();
      const err = await rejection(connectGateway({ url: `ws://127.0.0.1:${port}/`, token: TOKEN, handshakeTimeoutMs: 200 }));
      expect(err.code).toBe('TIMEOUT');
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    } finally {
      for (const client of silent.clients) client.terminate();
      await new Promise((r) => silent.close(r));
    }
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as AddressInfo).port;
    await new Promise((r) => free.close(r));
    const err = await rejection(connectGateway({ url: `ws://127.0.0.1:${port}/`, token: TOKEN }));
    expect(err.code).toBe('CONNECT_FAILED');
    expect(err.message).toContain('ECONNREFUSED');
  });
});

describe('requests', () => {
  it('correlates out-of-order responses by id', async () => {
    const g = await gateway({ methodDelayMs: { 'cron.list': 150 } });
    const c = await connect(g);
    const order: string[] = [];
    const listed = c.request<{ jobs: { id: string }[] }>('cron.list', {}).then((r) => {
      order.push('cron.list');
      return r;
    });
    const added = c.request<{ id: string; name: string }>('cron.add', JOB).then((r) => {
      order.push('cron.add');
      return r;
    });
    const [list, job] = await Promise.all([listed, added]);
    expect(order).toEqual(['cron.add', 'cron.list']);
    expect(job.name).toBe('daily-summary');
    expect(list.jobs.map((j) => j.id)).toEqual([job.id]);
  });

  it('rejects ok:false answers with the gateway error', async () => {
    const g = await gateway();
    const c = await connect(g);
    const err = await rejection(c.request('nope.method', {}));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.message).toBe('unknown method: nope.method');
    expect(await c.request('health')).toEqual({ ok: true });
  });

  it('rejects a request that is not answered in time and keeps the connection usable', async () => {
    const g = await gateway({ methodDelayMs: { 'sessions.list': Number.POSITIVE_INFINITY } });
    const c = await connect(g);
    const started = Date.now();
    const err = await rejection(c.request('sessions.list', {}, { timeoutMs: 120 }));
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toBe('sessions.list timed out after 120 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
    expect(c.closed).toBe(false);
    expect(await c.request('health')).toEqual({ ok: true });
  });

  it('rejects every pending request once when the socket closes', async () => {
    const g = await gateway({ methodDelayMs: { 'sessions.list': Number.POSITIVE_INFINITY, 'cron.list': Number.POSITIVE_INFINITY } });
    const c = await connect(g);
    const closeErrors: GatewayError[] = [];
    c.onClose((e) => closeErrors.push(e));
    const a = rejection(c.request('sessions.list', {}));
    const b = rejection(c.request('cron.list', {}));
    await new Promise((r) => setTimeout(r, 30));
    g.dropConnections();
    const [ea, eb] = await Promise.all([a, b]);
    expect(ea.code).toBe('CLOSED');
    expect(eb).toBe(ea);
    expect(closeErrors).toEqual([ea]);
    expect(c.closed).toBe(true);
    const late = await rejection(c.request('health'));
    expect(late.code).toBe('CLOSED');
    await c.close();
    expect(closeErrors).toHaveLength(1);
  });
});

describe('chatSend', () => {
  it('resolves with the final assistant text of its own run', async () => {
    const g = await gateway({ reply: (m) => `answer to ${m}!` });
    const events: GatewayEventFrame[] = [];
    const c = await connect(g, { onEvent: (e) => events.push(e) });
    const [one, two] = await Promise.all([
      chatSend(c, { sessionKey: 'main', message: 'first question', timeoutMs: 5000 }),
      chatSend(c, { sessionKey: 'main', message: 'second question', timeoutMs: 5000 }),
    ]);
    expect(one).toBe('answer to first question!');
    expect(two).toBe('answer to second question!');
    const sends = g.received.filter((r) => r.method === 'chat.send');
    expect(sends).toHaveLength(2);
    for (const s of sends) expect(s.params.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(sends[0]!.params.idempotencyKey).not.toBe(sends[1]!.params.idempotencyKey);
    const states = events.filter((e) => e.event === 'chat').map((e) => (e.payload as { state: string }).state);
    expect(states.filter((s) => s === 'final')).toHaveLength(2);
    expect(states).toContain('delta');
    expect(states).toContain('status');
    const history = await c.request<{ messages: { role: string }[] }>('chat.history', { sessionKey: 'main', limit: 10 });
    expect(history.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'assistant']);
  });

  it('rejects when the run ends in error', async () => {
    const g = await gateway({ failChatMessage: 'break please' });
    const c = await connect(g);
    const err = await rejection(chatSend(c, { sessionKey: 'main', message: 'break please', timeoutMs: 5000 }));
    expect(err.code).toBe('CHAT_ERROR');
    expect(err.message).toBe('model provider failed');
  });

  it('rejects invalid params with the gateway error and times out when no final arrives', async () => {
    const g = await gateway({ stallChatMessage: 'hi' });
    const c = await connect(g);
    const bad = await rejection(chatSend(c, { sessionKey: '', message: 'hi', timeoutMs: 5000 }));
    expect(bad.code).toBe('INVALID_REQUEST');
    expect(bad.message).toBe("invalid chat.send params: must have required property 'sessionKey'");
    const slow = await rejection(chatSend(c, { sessionKey: 'main', message: 'hi', timeoutMs: 150 }));
    expect(slow.code).toBe('TIMEOUT');
    expect(g.received.filter((r) => r.method === 'chat.send')).toHaveLength(2);
  });
});

describe('cron wrappers', () => {
  it('adds, lists and removes jobs', async () => {
    const g = await gateway();
    const c = await connect(g);
    expect((await cronList(c)).jobs).toEqual([]);
    const job = await cronAdd(c, JOB);
    expect(job).toMatchObject({ ...JOB, enabled: true });
    expect(job.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(g.jobs.has(job.id)).toBe(true);
    const listed = await cronList(c, { includeDisabled: true });
    expect(listed.jobs.map((j) => j.name)).toEqual(['daily-summary']);
    expect(listed.total).toBe(1);
    expect(g.received.at(-1)).toEqual({ method: 'cron.list', params: { includeDisabled: true } });
    expect(await cronRemove(c, job.id)).toEqual({ ok: true, removed: true });
    expect((await cronList(c)).jobs).toEqual([]);
    const missing = await rejection(cronRemove(c, job.id));
    expect(missing.code).toBe('INVALID_REQUEST');
    expect(missing.details).toEqual({ code: 'CRON_JOB_NOT_FOUND' });
    const { schedule: _omit, ...noSchedule } = JOB;
    const invalid = await rejection(cronAdd(c, noSchedule as typeof JOB));
    expect(invalid.message).toBe("invalid cron.add params: must have required property 'schedule'");
  });
});
