import { afterEach, describe, expect, it } from 'vitest';
import { type FakeGatewayWs, startFakeGatewayWs } from './fake-gateway-ws.test-support.js';
import { type ChatEventPayload, GatewayError, messageText } from './gateway-client.js';
import { type ReconnectState, ReconnectingGateway } from './reconnecting.js';

const TOKEN = 'reconnect-test-token';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

// Issue #8: reconnect with back-off for long-lived use, against a gateway speaking protocol v4 that goes away and comes back.
describe('ReconnectingGateway', () => {
  it('reconnects after the gateway restarts, keeps subscriptions, and requests wait for the new connection', async () => {
    let gateway: FakeGatewayWs = await startFakeGatewayWs({ token: TOKEN, reply: (m) => `echo: ${m}` });
    const port = gateway.port;
    const states: ReconnectState[] = [];
    const client = new ReconnectingGateway(
      { url: gateway.url, token: TOKEN },
      { initialDelayMs: 50, maxDelayMs: 200, onState: (s) => states.push(s) },
    );
    cleanups.push(
      () => client.close(),
      () => gateway.close(),
    );
    const finals: string[] = [];
    client.on('chat', (payload) => {
      const p = payload as ChatEventPayload;
      if (p.state === 'final') finals.push(messageText(p.message));
    });

    expect(await client.request('health')).toBeTruthy();
    expect(client.status).toBe('open');

    await gateway.close();
    await until(() => client.status === 'waiting');
    // A request made while the gateway is down waits for the next connection instead of failing.
    const pending = client.request(
      'chat.send',
      { sessionKey: 'main', message: 'after restart', idempotencyKey: 'k1' },
      { timeoutMs: 5_000 },
    );
    await new Promise((r) => setTimeout(r, 300)); // a few failed attempts, backing off
    gateway = await startFakeGatewayWs({ token: TOKEN, port, reply: (m) => `echo: ${m}` });
    expect(await pending).toMatchObject({ status: 'started' });
    await until(() => finals.length === 1);
    expect(finals).toEqual(['echo: after restart']);
    expect(client.status).toBe('open');
    expect(states.filter((s) => s === 'open').length).toBe(2);
    expect(states).toContain('waiting');
  });

  it('backs off: waits grow between failed attempts up to the maximum', async () => {
    const gateway = await startFakeGatewayWs({ token: TOKEN });
    const url = gateway.url;
    await gateway.close(); // nothing listens there any more
    const attempts: number[] = [];
    const client = new ReconnectingGateway(
      { url, token: TOKEN, retryDeadlineMs: 0 },
      { initialDelayMs: 20, maxDelayMs: 80, jitter: 0, onState: (s) => s === 'connecting' && attempts.push(Date.now()) },
    );
    cleanups.push(() => client.close());
    await until(() => attempts.length >= 5, 5_000);
    const gaps = attempts.slice(1).map((t, i) => t - (attempts[i] ?? t));
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[1]).toBeGreaterThanOrEqual(35);
    expect(Math.max(...gaps)).toBeLessThan(80 + 150);
    await expect(client.request('health', {}, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('stops on a refusal a retry cannot fix (wrong token) and rejects requests with it', async () => {
    const gateway = await startFakeGatewayWs({ token: TOKEN });
    cleanups.push(() => gateway.close());
    const client = new ReconnectingGateway({ url: gateway.url, token: 'wrong-token' }, { initialDelayMs: 20 });
    cleanups.push(() => client.close());
    await until(() => client.status === 'closed');
    const error = await client.request('health').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).not.toBe('CLOSED');
  });

  it('close() stops reconnecting and fails waiting requests', async () => {
    const gateway = await startFakeGatewayWs({ token: TOKEN });
    const client = new ReconnectingGateway({ url: gateway.url, token: TOKEN }, { initialDelayMs: 20 });
    await client.request('health');
    await gateway.close();
    await until(() => client.status === 'waiting');
    const waiting = client.request('health', {}, { timeoutMs: 5_000 });
    await client.close();
    await expect(waiting).rejects.toMatchObject({ code: 'CLOSED' });
    expect(client.status).toBe('closed');
  });
});
