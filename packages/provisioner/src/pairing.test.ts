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
