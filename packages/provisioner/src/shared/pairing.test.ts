import { GatewayError, connectGateway, createDeviceIdentity } from '@aop/gateway-client';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { approvePlatformDevice } from './pairing.js';

const TOKEN = 'gateway-token-for-pairing-tests';

let gateways: FakeGatewayWs[] = [];
async function gateway(opts: Partial<Parameters<typeof startFakeGatewayWs>[0]> = {}) {
  const g = await startFakeGatewayWs({ token: TOKEN, ...opts });
  gateways.push(g);
  return g;
}

afterEach(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  gateways = [];
});

const methods = (g: FakeGatewayWs) => g.received.map((f) => f.method);

// The fake enforces pairing (`pairedDeviceIds` set) as OpenClaw does for a remote connection.
describe('approvePlatformDevice', () => {
  it('approves the platform device’s own pending request and returns the device token', async () => {
    const g = await gateway({ pairedDeviceIds: [] });
    const identity = createDeviceIdentity();

    const result = await approvePlatformDevice({ loopbackUrl: g.url, token: TOKEN, identity });

    const paired = g.pairing.paired.get(identity.deviceId);
    expect(paired).toBeDefined();
    expect(result).toEqual({ deviceId: identity.deviceId, deviceToken: paired?.tokens.operator?.token, requestId: expect.any(String) });
    expect(g.pairing.pending.size).toBe(0);
    // Signed connect (refused) → loopback admin connect → list → approve the request NOT_PAIRED named → signed connect.
    expect(methods(g)).toEqual(['connect', 'connect', 'device.pair.list', 'device.pair.approve', 'connect']);
    expect(g.connectAttempts.map((a) => a.code ?? 'ok')).toEqual(['NOT_PAIRED', 'ok', 'ok']);
    expect(g.received.find((f) => f.method === 'device.pair.approve')?.params).toEqual({ requestId: result.requestId });
    // The admin connection carried no device; the device connections did.
    const connects = g.received.filter((f) => f.method === 'connect');
    expect(connects.map((c) => c.params.device?.id ?? null)).toEqual([identity.deviceId, null, identity.deviceId]);

    // From now on the device connects with its full scopes.
    const conn = await connectGateway({ url: g.url, token: TOKEN, device: identity, retryDeadlineMs: 0 });
    expect(conn.hello.auth?.scopes).toEqual(['operator.admin', 'operator.read', 'operator.write']);
    expect(conn.hello.auth?.deviceToken).toBe(result.deviceToken);
    await conn.close();
  });

  it('never approves another device’s request', async () => {
    const g = await gateway({ pairedDeviceIds: [] });
    const stranger = createDeviceIdentity();
    const refused = await connectGateway({ url: g.url, token: TOKEN, device: stranger, retryDeadlineMs: 0 }).catch((e: unknown) => e);
    expect((refused as GatewayError).code).toBe('NOT_PAIRED');

    const identity = createDeviceIdentity();
    await approvePlatformDevice({ loopbackUrl: g.url, token: TOKEN, identity });

    expect([...g.pairing.paired.keys()]).toEqual([identity.deviceId]);
    expect([...g.pairing.pending.values()].map((r) => r.deviceId)).toEqual([stranger.deviceId]);
  });

  it('is a no-op on a gateway that already paired the identity', async () => {
    const identity = createDeviceIdentity();
    const g = await gateway({ pairedDeviceIds: [identity.deviceId] });

    const result = await approvePlatformDevice({ loopbackUrl: g.url, token: TOKEN, identity });

    expect(result).toEqual({ deviceId: identity.deviceId, deviceToken: `devtok-${identity.deviceId.slice(0, 8)}`, requestId: null });
    expect(methods(g)).toEqual(['connect']);
  });

  it('returns the token at once where the gateway admits the device without approval (a local connect)', async () => {
    const g = await gateway();
    const identity = createDeviceIdentity();
    const result = await approvePlatformDevice({ loopbackUrl: g.url, token: TOKEN, identity });
    expect(result.requestId).toBeNull();
    expect(result.deviceToken).toBe(`devtok-${identity.deviceId.slice(0, 8)}`);
    expect(methods(g)).toEqual(['connect']);
  });

  it('waits out a gateway that is still starting', async () => {
    const g = await gateway({ pairedDeviceIds: [], unavailableConnects: 2, retryAfterMs: 20 });
    const identity = createDeviceIdentity();
    const result = await approvePlatformDevice({ loopbackUrl: g.url, token: TOKEN, identity });
    expect(result.requestId).toEqual(expect.any(String));
    expect(g.pairing.paired.has(identity.deviceId)).toBe(true);
  });

  it('fails with the gateway’s error for a wrong token, approving nothing', async () => {
    const g = await gateway({ pairedDeviceIds: [] });
    const err = await approvePlatformDevice({ loopbackUrl: g.url, token: 'not-the-gateway-token', identity: createDeviceIdentity() }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('UNAUTHORIZED');
    expect(g.pairing.paired.size).toBe(0);
    expect(g.pairing.pending.size).toBe(0);
  });

  it('through a remote door: approves via the given approver the request NOT_PAIRED named, then the device gets its scopes', async () => {
    const g = await gateway({ remoteListener: true });
    const remoteUrl = g.remoteUrl as string;
    // From a non-loopback address the token alone is admitted with no scopes.
    const tokenOnly = await connectGateway({ url: remoteUrl, token: TOKEN, retryDeadlineMs: 0 });
    expect(tokenOnly.hello.auth?.scopes).toEqual([]);
    const refused = await tokenOnly.request('cron.list', {}).catch((e: unknown) => e as GatewayError);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: 'missing scope: operator.read', details: { code: 'MISSING_SCOPE' } });
    await tokenOnly.close();

    const identity = createDeviceIdentity();
    const asked: { requestId: string; deviceId: string }[] = [];
    const result = await approvePlatformDevice({
      deviceUrl: remoteUrl,
      token: TOKEN,
      identity,
      approve: async (request) => {
        asked.push(request);
        // What `openclaw devices approve <requestId>` does inside the container: a loopback call.
        const admin = await connectGateway({ url: g.url, token: TOKEN, clientId: 'cli', clientMode: 'cli', retryDeadlineMs: 0 });
        await admin.request('device.pair.approve', { requestId: request.requestId });
        await admin.close();
      },
    });

    expect(asked).toEqual([{ requestId: result.requestId, deviceId: identity.deviceId }]);
    expect(result.deviceToken).toBe(g.pairing.paired.get(identity.deviceId)?.tokens.operator?.token);
    expect(g.pairing.paired.get(identity.deviceId)?.remoteIp).toBe('172.17.0.1');
    const conn = await connectGateway({ url: remoteUrl, token: TOKEN, device: identity, retryDeadlineMs: 0 });
    expect(conn.hello.auth?.scopes).toEqual(['operator.admin', 'operator.read', 'operator.write']);
    expect((await conn.request<{ jobs: unknown[] }>('cron.list', {})).jobs).toEqual([]);
    await conn.close();
  });

  it('fails with the approver’s error, and succeeds on a later attempt once approval works', async () => {
    const g = await gateway({ remoteListener: true });
    const identity = createDeviceIdentity();
    const failing = approvePlatformDevice({
      deviceUrl: g.remoteUrl as string,
      token: TOKEN,
      identity,
      approve: async () => {
        throw new Error('openclaw devices approve exited with code 1');
      },
    });
    await expect(failing).rejects.toThrow('openclaw devices approve exited with code 1');
    expect(g.pairing.paired.size).toBe(0);

    const again = await approvePlatformDevice({
      deviceUrl: g.remoteUrl as string,
      token: TOKEN,
      identity,
      approve: async ({ requestId }) => {
        const admin = await connectGateway({ url: g.url, token: TOKEN, retryDeadlineMs: 0 });
        await admin.request('device.pair.approve', { requestId });
        await admin.close();
      },
    });
    expect(again.requestId).toEqual(expect.any(String));
    expect(g.pairing.paired.has(identity.deviceId)).toBe(true);
  });

  it('fails when the gateway cannot be reached', async () => {
    const g = await gateway({ pairedDeviceIds: [] });
    const url = g.url;
    await g.close();
    gateways = [];
    const err = await approvePlatformDevice({ loopbackUrl: url, token: TOKEN, identity: createDeviceIdentity(), retryDeadlineMs: 0 }).catch(
      (e: unknown) => e,
    );
    expect((err as GatewayError).code).toBe('CONNECT_FAILED');
  });
});
