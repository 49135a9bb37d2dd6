import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DeviceIdentity, type GatewayError, connectGateway, createDeviceIdentity, devicePairApprove } from '@aop/gateway-client';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { claimMove } from '../../apps/web/src/modules/devices/devices.service.js';
import { LOG_LEVEL, startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';

const GATEWAY_TOKEN = 'shared-gateway-token-for-device-tests';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-device-tests', HMAC_SECRET: 'hmac-secret-for-device-tests' };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

// Spec §4.12 / §3.1: devices pairing with the user's agent gateway. The gateways here speak OpenClaw's protocol v4 on
// 127.0.0.1 and enforce pairing as OpenClaw does for a remote device: an unpaired device's connect is refused with
// NOT_PAIRED and leaves a pending request, which `device.pair.approve|reject` resolve and `device.pair.remove` undoes.
describe('/api/devices', () => {
  let work: string;
  let host: LocalAgentHost;
  let backend: TestBackend;
  let web: TestWeb;
  let gatewayA: FakeGatewayWs;
  let gatewayB: FakeGatewayWs;
  let alice: { cookie: string; userId: string };
  let bob: { cookie: string; userId: string };
  let aliceAgent: string;

  const get = (cookie?: string) => request(`${web.url}/api/devices`, { headers: cookie ? { cookie } : {} });
  const post = (cookie: string | undefined, json: unknown) =>
    request(`${web.url}/api/devices`, { json, headers: cookie ? { cookie } : {} });
  const ids = (list: { id: string }[]) => list.map((d) => d.id);

  /** A device tries to connect: refused, it now has a pending request on `g`. */
  async function ask(g: FakeGatewayWs, identity = createDeviceIdentity()): Promise<DeviceIdentity> {
    const err = await connectGateway({
      url: g.url,
      token: GATEWAY_TOKEN,
      device: identity,
      clientId: 'openclaw-macos',
      clientMode: 'ui',
      platform: 'darwin',
      retryDeadlineMs: 0,
    }).catch((e: unknown) => e as GatewayError);
    expect((err as GatewayError).code).toBe('NOT_PAIRED');
    return identity;
  }

  async function provisionAgent(cookie: string, gateway: FakeGatewayWs): Promise<string> {
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie } });
    expect(res.status).toBe(200);
    await pointAgentAt(res.body.agentId, `http://127.0.0.1:${gateway.port}`);
    return res.body.agentId;
  }

  async function pointAgentAt(agentId: string, url: string) {
    await web.database.db.kysely.updateTable('agents').set({ url }).where('id', '=', agentId).execute();
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'aop-devices-'));
    host = new LocalAgentHost({
      dataDir: join(work, 'data'),
      encryptionKey: randomBytes(32),
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: GATEWAY_TOKEN }, { host });
    web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, GATEWAY_REQUEST_TIMEOUT_MS: '1500' }, { logs: true });
    gatewayA = await startFakeGatewayWs({ token: GATEWAY_TOKEN, pairedDeviceIds: [] });
    gatewayB = await startFakeGatewayWs({ token: GATEWAY_TOKEN, pairedDeviceIds: [] });
    alice = await web.signIn({ isAdmin: true });
    bob = await web.signIn({ isAdmin: true });
    aliceAgent = await provisionAgent(alice.cookie, gatewayA);
    await provisionAgent(bob.cookie, gatewayB);
  });
  afterAll(async () => {
    await gatewayA.close();
    await gatewayB.close();
    await web.close();
    await backend.close();
    await host.shutdown();
    await rm(work, { recursive: true, force: true });
  });

  it('401 without a session', async () => {
    const list = await get();
    expect(list.status).toBe(401);
    expect(list.body).toEqual({ error: 'Unauthorized' });
    const move = await post(undefined, { deviceId: 'x', action: 'approve' });
    expect(move.status).toBe(401);
    expect(move.body).toEqual({ error: 'Unauthorized' });
  });

  it('lists the gateway’s pending requests and paired devices as §2.8 objects, mirrored into the record', async () => {
    const phone = await ask(gatewayA);
    const request0 = [...gatewayA.pairing.pending.values()].find((r) => r.deviceId === phone.deviceId);
    // A device approved elsewhere (the OpenClaw CLI, say) is listed as approved.
    const laptop = await ask(gatewayA);
    const admin = await connectGateway({ url: gatewayA.url, token: GATEWAY_TOKEN });
    const laptopRequest = [...gatewayA.pairing.pending.values()].find((r) => r.deviceId === laptop.deviceId);
    await devicePairApprove(admin, laptopRequest?.requestId as string);
    await admin.close();

    const res = await get(alice.cookie);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['approved', 'pending']);
    const pending = res.body.pending.find((d: { id: string }) => d.id === phone.deviceId);
    expect(pending).toEqual({
      id: phone.deviceId,
      name: 'openclaw-macos',
      ip: '127.0.0.1',
      firstSeen: new Date(request0?.ts as number).toISOString(),
      lastSeen: new Date(request0?.ts as number).toISOString(),
      status: 'pending',
    });
    const approved = res.body.approved.find((d: { id: string }) => d.id === laptop.deviceId);
    expect(approved).toMatchObject({ id: laptop.deviceId, name: 'openclaw-macos', ip: '127.0.0.1', status: 'approved' });
    for (const d of [...res.body.pending, ...res.body.approved]) {
      expect(d.firstSeen).toMatch(ISO);
      expect(d.lastSeen).toMatch(ISO);
    }

    const rows = await web.database.db.kysely
      .selectFrom('devices')
      .select(['user_id', 'agent_id', 'device_id', 'status', 'request_id'])
      .where('device_id', 'in', [phone.deviceId, laptop.deviceId])
      .orderBy('status')
      .execute();
    expect(rows).toEqual([
      { user_id: alice.userId, agent_id: aliceAgent, device_id: laptop.deviceId, status: 'approved', request_id: null },
      { user_id: alice.userId, agent_id: aliceAgent, device_id: phone.deviceId, status: 'pending', request_id: request0?.requestId },
    ]);
  });

  it('takes the device’s own name, its address and its times from the gateway', async () => {
    const identity = createDeviceIdentity();
    const ts = Date.parse('2026-03-01T10:00:00.000Z');
    gatewayA.pairing.pending.set('req-named', {
      requestId: 'req-named',
      deviceId: identity.deviceId,
      publicKey: identity.publicKeyRaw,
      displayName: `  Kitchen tablet${' '.repeat(5)}`,
      clientId: 'openclaw-android',
      remoteIp: '203.0.113.7',
      ts,
    });
    const res = await get(alice.cookie);
    expect(res.body.pending.find((d: { id: string }) => d.id === identity.deviceId)).toEqual({
      id: identity.deviceId,
      name: 'Kitchen tablet',
      ip: '203.0.113.7',
      firstSeen: '2026-03-01T10:00:00.000Z',
      lastSeen: '2026-03-01T10:00:00.000Z',
      status: 'pending',
    });
  });

  describe('POST validation', () => {
    it.each([
      ['an empty body', {}],
      ['no action', { deviceId: 'abc' }],
      ['no deviceId', { action: 'approve' }],
      ['an empty deviceId', { deviceId: '', action: 'approve' }],
      ['a null action', { deviceId: 'abc', action: null }],
    ])('400 Missing required fields for %s', async (_name, body) => {
      const res = await post(alice.cookie, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Missing required fields: deviceId, action' });
    });

    it.each([
      ['an unknown action', 'delete'],
      ['a differently cased action', 'Approve'],
      ['a number', 5],
      ['an array', ['approve']],
    ])('400 Invalid action for %s', async (_name, action) => {
      const res = await post(alice.cookie, { deviceId: 'abc', action });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid action. Must be: approve, deny, or revoke' });
    });

    it.each([
      ['not JSON', '{broken'],
      ['a JSON array', '["approve"]'],
      ['a JSON string', '"approve"'],
    ])('400 Invalid request body when the body is %s', async (_name, body) => {
      const res = await request(`${web.url}/api/devices`, { body, headers: { cookie: alice.cookie, 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid request body' });
    });

    it('400 Invalid request body for a deviceId that is not a string', async () => {
      const res = await post(alice.cookie, { deviceId: 42, action: 'approve' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid request body' });
    });

    it('404 Device not found for a device the user has never had', async () => {
      for (const action of ['approve', 'deny', 'revoke']) {
        const res = await post(alice.cookie, { deviceId: 'f'.repeat(64), action });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 'Device not found' });
      }
      expect((await post(alice.cookie, { deviceId: 'x'.repeat(5000), action: 'approve' })).status).toBe(404);
    });
  });

  describe('state machine (§3.1)', () => {
    it('approve: pending → approved, paired on the gateway, and the device connects with its token', async () => {
      const device = await ask(gatewayA);
      await get(alice.cookie);
      const requestId = [...gatewayA.pairing.pending.values()].find((r) => r.deviceId === device.deviceId)?.requestId;

      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(ids(res.body.approved)).toContain(device.deviceId);
      expect(ids(res.body.pending)).not.toContain(device.deviceId);
      expect(res.body.approved.find((d: { id: string }) => d.id === device.deviceId).status).toBe('approved');
      expect(gatewayA.received.filter((f) => f.method === 'device.pair.approve').at(-1)?.params).toEqual({ requestId });
      expect(gatewayA.pairing.paired.has(device.deviceId)).toBe(true);

      const conn = await connectGateway({ url: gatewayA.url, token: GATEWAY_TOKEN, device, retryDeadlineMs: 0 });
      expect(conn.hello.auth?.deviceToken).toBe(gatewayA.pairing.paired.get(device.deviceId)?.tokens.operator?.token);
      await conn.close();

      for (const action of ['approve', 'deny']) {
        const again = await post(alice.cookie, { deviceId: device.deviceId, action });
        expect(again.status).toBe(400);
        expect(again.body).toEqual({ error: 'Device is not pending' });
      }
    });

    it('deny: pending → denied, the request rejected on the gateway, and nothing moves out of denied', async () => {
      const device = await ask(gatewayA);
      await get(alice.cookie);
      const requestId = [...gatewayA.pairing.pending.values()].find((r) => r.deviceId === device.deviceId)?.requestId;

      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'deny' });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(ids(res.body.pending)).not.toContain(device.deviceId);
      expect(ids(res.body.approved)).not.toContain(device.deviceId);
      expect(gatewayA.received.filter((f) => f.method === 'device.pair.reject').at(-1)?.params).toEqual({ requestId });
      expect(gatewayA.pairing.pending.has(requestId as string)).toBe(false);
      expect(gatewayA.pairing.paired.has(device.deviceId)).toBe(false);

      // The device asks again: the gateway has a new request, the record keeps the owner's decision.
      await ask(gatewayA, device);
      const list = await get(alice.cookie);
      expect(ids(list.body.pending)).not.toContain(device.deviceId);
      for (const [action, error] of [
        ['approve', 'Device is not pending'],
        ['deny', 'Device is not pending'],
        ['revoke', 'Device is not approved'],
      ]) {
        const again = await post(alice.cookie, { deviceId: device.deviceId, action });
        expect(again.status).toBe(400);
        expect(again.body).toEqual({ error });
      }
      const row = await web.database.db.kysely
        .selectFrom('devices')
        .select('status')
        .where('device_id', '=', device.deviceId)
        .executeTakeFirst();
      expect(row?.status).toBe('denied');
      expect(gatewayA.pairing.paired.has(device.deviceId)).toBe(false);
    });

    it('revoke: approved → revoked, unpaired on the gateway (its connection dropped), and nothing moves out of revoked', async () => {
      const device = await ask(gatewayA);
      await get(alice.cookie);
      expect((await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' })).status).toBe(200);
      const conn = await connectGateway({ url: gatewayA.url, token: GATEWAY_TOKEN, device, retryDeadlineMs: 0 });
      const dropped = new Promise((resolve) => conn.onClose(resolve));

      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'revoke' });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(ids(res.body.approved)).not.toContain(device.deviceId);
      expect(ids(res.body.pending)).not.toContain(device.deviceId);
      expect(gatewayA.received.filter((f) => f.method === 'device.pair.remove').at(-1)?.params).toEqual({ deviceId: device.deviceId });
      expect(gatewayA.pairing.paired.has(device.deviceId)).toBe(false);
      await dropped;
      const refused = await connectGateway({ url: gatewayA.url, token: GATEWAY_TOKEN, device, retryDeadlineMs: 0 }).catch(
        (e: unknown) => e,
      );
      expect((refused as GatewayError).code).toBe('NOT_PAIRED');

      for (const [action, error] of [
        ['revoke', 'Device is not approved'],
        ['approve', 'Device is not pending'],
        ['deny', 'Device is not pending'],
      ]) {
        const again = await post(alice.cookie, { deviceId: device.deviceId, action });
        expect(again.status).toBe(400);
        expect(again.body).toEqual({ error });
      }
      expect(ids((await get(alice.cookie)).body.pending)).not.toContain(device.deviceId);
    });

    it('revoke on a pending device: 400 Device is not approved, and it stays pending', async () => {
      const device = await ask(gatewayA);
      await get(alice.cookie);
      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'revoke' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Device is not approved' });
      expect(ids((await get(alice.cookie)).body.pending)).toContain(device.deviceId);
    });

    it('acts on a device that asked since the last listing', async () => {
      const device = await ask(gatewayA);
      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' });
      expect(res.status).toBe(200);
      expect(ids(res.body.approved)).toContain(device.deviceId);
    });
  });

  it('two concurrent approvals: one wins, the other gets 400 Device is not pending', async () => {
    const device = await ask(gatewayA);
    await get(alice.cookie);
    const before = gatewayA.received.filter((f) => f.method === 'device.pair.approve').length;

    const answers = await Promise.all([
      post(alice.cookie, { deviceId: device.deviceId, action: 'approve' }),
      post(alice.cookie, { deviceId: device.deviceId, action: 'approve' }),
    ]);

    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 400)?.body).toEqual({ error: 'Device is not pending' });
    expect(gatewayA.received.filter((f) => f.method === 'device.pair.approve').length - before).toBe(1);
    expect(gatewayA.pairing.paired.has(device.deviceId)).toBe(true);
  });

  it('the claim is one conditional UPDATE: of two concurrent claims exactly one gets the device', async () => {
    const device = await ask(gatewayA);
    await get(alice.cookie);
    const now = new Date();
    // Another user's claim never touches the row (row-level security), even naming Alice's agent.
    expect(await claimMove(web.database.db, bob.userId, aliceAgent, device.deviceId, 'approve', now)).toBeNull();
    const claims = await Promise.all([
      claimMove(web.database.db, alice.userId, aliceAgent, device.deviceId, 'approve', now),
      claimMove(web.database.db, alice.userId, aliceAgent, device.deviceId, 'deny', now),
    ]);
    expect(claims.filter((c) => c !== null)).toEqual([{ status: 'pending', requestId: expect.any(String) }]);
  });

  it('concurrent approve and deny: exactly one decision is made', async () => {
    const device = await ask(gatewayA);
    await get(alice.cookie);
    const answers = await Promise.all([
      post(alice.cookie, { deviceId: device.deviceId, action: 'approve' }),
      post(alice.cookie, { deviceId: device.deviceId, action: 'deny' }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 400)?.body).toEqual({ error: 'Device is not pending' });
    const row = await web.database.db.kysely
      .selectFrom('devices')
      .select('status')
      .where('device_id', '=', device.deviceId)
      .executeTakeFirst();
    expect(gatewayA.pairing.paired.has(device.deviceId)).toBe(row?.status === 'approved');
  });

  describe('isolation', () => {
    it('each user sees only the devices of their own gateway', async () => {
      const alicePhone = await ask(gatewayA);
      const bobPhone = await ask(gatewayB);
      const aliceList = await get(alice.cookie);
      const bobList = await get(bob.cookie);
      expect(ids(aliceList.body.pending)).toContain(alicePhone.deviceId);
      expect(ids(aliceList.body.pending)).not.toContain(bobPhone.deviceId);
      expect(ids(bobList.body.pending)).toEqual([bobPhone.deviceId]);
      expect(bobList.body.approved).toEqual([]);
    });

    it('a user can never act on another user’s device: 404 Device not found', async () => {
      const pending = await ask(gatewayA);
      const approved = await ask(gatewayA);
      await get(alice.cookie);
      expect((await post(alice.cookie, { deviceId: approved.deviceId, action: 'approve' })).status).toBe(200);

      for (const [deviceId, action] of [
        [pending.deviceId, 'approve'],
        [pending.deviceId, 'deny'],
        [approved.deviceId, 'revoke'],
      ]) {
        const res = await post(bob.cookie, { deviceId, action });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 'Device not found' });
      }
      const carol = await web.signIn();
      expect(await get(carol.cookie).then((r) => [r.status, r.body])).toEqual([200, { pending: [], approved: [] }]);
      const res = await post(carol.cookie, { deviceId: pending.deviceId, action: 'approve' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Device not found' });

      // Nothing moved: still pending and approved on Alice's gateway and record.
      const list = await get(alice.cookie);
      expect(ids(list.body.pending)).toContain(pending.deviceId);
      expect(ids(list.body.approved)).toContain(approved.deviceId);
      expect(gatewayB.received.filter((f) => f.method.startsWith('device.pair.') && f.method !== 'device.pair.list')).toEqual([]);
    });

    it('the record is row-level isolated too', async () => {
      const rows = await web.database.db.withUser(bob.userId, (trx) => trx.selectFrom('devices').select(['user_id']).execute());
      expect(rows.length).toBeGreaterThan(0);
      expect(new Set(rows.map((r) => r.user_id))).toEqual(new Set([bob.userId]));
    });
  });

  // Issue #19: devices per agent. Dana has two agents, each on its own gateway; `agentId` (query for GET, body field
  // for POST) names which, and without it the spec's behaviour stays: the account's primary agent (the newest).
  describe('two agents of one user', () => {
    let dana: { cookie: string; userId: string };
    let gatewayC: FakeGatewayWs;
    let gatewayD: FakeGatewayWs;
    let older: string;
    let newer: string;
    const list = (cookie: string, agentId?: string) =>
      request(`${web.url}/api/devices${agentId === undefined ? '' : `?agentId=${encodeURIComponent(agentId)}`}`, { headers: { cookie } });

    beforeAll(async () => {
      gatewayC = await startFakeGatewayWs({ token: GATEWAY_TOKEN, pairedDeviceIds: [] });
      gatewayD = await startFakeGatewayWs({ token: GATEWAY_TOKEN, pairedDeviceIds: [] });
      dana = await web.signIn({ isAdmin: true });
      older = await provisionAgent(dana.cookie, gatewayC);
      newer = await provisionAgent(dana.cookie, gatewayD);
    });
    afterAll(async () => {
      await gatewayC.close();
      await gatewayD.close();
    });

    it('GET lists the named agent’s gateway’s devices; without agentId the primary agent’s', async () => {
      const onOlder = await ask(gatewayC);
      const onNewer = await ask(gatewayD);
      const a = await list(dana.cookie, older);
      const b = await list(dana.cookie, newer);
      expect(a.status).toBe(200);
      expect(ids(a.body.pending)).toEqual([onOlder.deviceId]);
      expect(ids(b.body.pending)).toEqual([onNewer.deviceId]);
      // The spec's GET, with no agent named: the primary agent (the newest one provisioned).
      expect((await list(dana.cookie)).body).toEqual(b.body);
      // A blank agentId is no agent named.
      expect((await list(dana.cookie, ' ')).body).toEqual(b.body);
      const rows = await web.database.db.kysely
        .selectFrom('devices')
        .select(['agent_id', 'device_id'])
        .where('user_id', '=', dana.userId)
        .execute();
      // Compared as a set: Postgres's collation and PGlite's C order sort these ids differently.
      const byAgent = (x: { agent_id: string }, y: { agent_id: string }) => (x.agent_id < y.agent_id ? -1 : 1);
      expect(rows.sort(byAgent)).toEqual(
        [
          { agent_id: older, device_id: onOlder.deviceId },
          { agent_id: newer, device_id: onNewer.deviceId },
        ].sort(byAgent),
      );
    });

    it('POST with agentId moves the device on that agent’s gateway only; the other agent does not know it', async () => {
      const device = await ask(gatewayC);
      await list(dana.cookie, older);
      // Named as the other agent's device: not on that agent's record.
      expect(await post(dana.cookie, { deviceId: device.deviceId, action: 'approve', agentId: newer })).toMatchObject({
        status: 404,
        body: { error: 'Device not found' },
      });
      // Without agentId the spec's behaviour: the primary (newer) agent's, where the device is not either.
      expect((await post(dana.cookie, { deviceId: device.deviceId, action: 'approve' })).status).toBe(404);
      const res = await post(dana.cookie, { deviceId: device.deviceId, action: 'approve', agentId: older });
      expect(res.status).toBe(200);
      expect(ids(res.body.approved)).toEqual([device.deviceId]);
      expect(gatewayC.pairing.paired.has(device.deviceId)).toBe(true);
      expect(gatewayD.received.filter((f) => f.method === 'device.pair.approve')).toEqual([]);
      expect(ids((await list(dana.cookie, newer)).body.approved)).toEqual([]);

      const revoked = await post(dana.cookie, { deviceId: device.deviceId, action: 'revoke', agentId: older });
      expect(revoked.status).toBe(200);
      expect(gatewayC.pairing.paired.has(device.deviceId)).toBe(false);
    });

    it('owner only: another user’s agent is 404 Agent not found, and its gateway is not asked', async () => {
      const device = await ask(gatewayC);
      await list(dana.cookie, older);
      const calls = gatewayC.received.length;
      for (const res of [
        await list(bob.cookie, older),
        await post(bob.cookie, { deviceId: device.deviceId, action: 'approve', agentId: older }),
        await list(dana.cookie, 'agt_does_not_exist'),
      ]) {
        expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { error: 'Agent not found' } });
      }
      expect(gatewayC.received.length).toBe(calls);
      expect(ids((await list(dana.cookie, older)).body.pending)).toContain(device.deviceId);
    });

    it('400 Invalid request body for an agentId that is not a string; the field checks come first', async () => {
      for (const agentId of [5, null, ['x'], 'x'.repeat(65)]) {
        expect(await post(dana.cookie, { deviceId: 'abc', action: 'approve', agentId })).toMatchObject({
          status: 400,
          body: { error: 'Invalid request body' },
        });
      }
      expect(await post(dana.cookie, { action: 'approve', agentId: older })).toMatchObject({
        status: 400,
        body: { error: 'Missing required fields: deviceId, action' },
      });
      expect((await list(dana.cookie, 'x'.repeat(65))).status).toBe(400);
    });

    it('an agent without a gateway address lists from the record and refuses moves with 409', async () => {
      const device = await ask(gatewayC);
      await list(dana.cookie, older);
      await web.database.db.kysely.updateTable('agents').set({ url: null }).where('id', '=', older).execute();
      try {
        const res = await list(dana.cookie, older);
        expect(res.status).toBe(200);
        expect(ids(res.body.pending)).toContain(device.deviceId);
        expect(await post(dana.cookie, { deviceId: device.deviceId, action: 'approve', agentId: older })).toMatchObject({
          status: 409,
          body: { error: 'Agent is not deployed' },
        });
      } finally {
        await pointAgentAt(older, `http://127.0.0.1:${gatewayC.port}`);
      }
    });
  });

  describe('when the gateway is unreachable or forgets', () => {
    it('GET answers from the record; POST refuses with 502 and records nothing', async () => {
      const waiting = await ask(gatewayA);
      const member = await ask(gatewayA);
      await get(alice.cookie);
      expect((await post(alice.cookie, { deviceId: member.deviceId, action: 'approve' })).status).toBe(200);
      const live = await get(alice.cookie);

      const gone = await startFakeGatewayWs({ token: GATEWAY_TOKEN });
      const closedUrl = `http://127.0.0.1:${gone.port}`;
      await gone.close();
      await pointAgentAt(aliceAgent, closedUrl);
      try {
        const offline = await get(alice.cookie);
        expect(offline.status).toBe(200);
        expect(offline.body).toEqual(live.body);
        // The agent is live by its host's word, so its gateway not answering is a failure: warned, not kept quiet.
        expect(web.logs.filter((line) => line.msg.startsWith('device list: agent gateway unavailable')).at(-1)).toMatchObject({
          level: LOG_LEVEL.warn,
          agentId: aliceAgent,
          state: 'live',
        });
        expect(ids(offline.body.pending)).toContain(waiting.deviceId);
        expect(ids(offline.body.approved)).toContain(member.deviceId);

        for (const [deviceId, action] of [
          [waiting.deviceId, 'approve'],
          [waiting.deviceId, 'deny'],
          [member.deviceId, 'revoke'],
        ]) {
          const res = await post(alice.cookie, { deviceId, action });
          expect(res.status).toBe(502);
          expect(res.body.error).toMatch(/^Agent gateway error: /);
        }
        // The refusals that need no gateway still come first.
        expect((await post(alice.cookie, { deviceId: member.deviceId, action: 'approve' })).body).toEqual({
          error: 'Device is not pending',
        });
        expect((await post(alice.cookie, { deviceId: 'f'.repeat(64), action: 'approve' })).status).toBe(404);
        expect((await get(alice.cookie)).body).toEqual(live.body);
      } finally {
        await pointAgentAt(aliceAgent, `http://127.0.0.1:${gatewayA.port}`);
      }
    });

    it('an approved device stays on record when the gateway forgets it, and can still be revoked', async () => {
      const device = await ask(gatewayA);
      await get(alice.cookie);
      expect((await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' })).status).toBe(200);
      const firstSeen = (await get(alice.cookie)).body.approved.find((d: { id: string }) => d.id === device.deviceId).firstSeen;

      gatewayA.pairing.paired.delete(device.deviceId);
      const list = await get(alice.cookie);
      expect(list.body.approved.find((d: { id: string }) => d.id === device.deviceId)).toMatchObject({ status: 'approved', firstSeen });

      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'revoke' });
      expect(res.status).toBe(200);
      expect(ids(res.body.approved)).not.toContain(device.deviceId);
    });

    it('a request that expired on the gateway leaves the pending list until the device asks again', async () => {
      const device = await ask(gatewayA);
      const first = (await get(alice.cookie)).body.pending.find((d: { id: string }) => d.id === device.deviceId);
      expect(first).toBeDefined();

      for (const [id, r] of gatewayA.pairing.pending) if (r.deviceId === device.deviceId) gatewayA.pairing.pending.delete(id);
      expect(ids((await get(alice.cookie)).body.pending)).not.toContain(device.deviceId);
      const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Device is not pending' });

      await new Promise((r) => setTimeout(r, 5));
      await ask(gatewayA, device);
      const again = (await get(alice.cookie)).body.pending.find((d: { id: string }) => d.id === device.deviceId);
      expect(again.firstSeen).toBe(first.firstSeen);
      expect(Date.parse(again.lastSeen)).toBeGreaterThan(Date.parse(first.lastSeen));
      expect((await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' })).status).toBe(200);
    });

    it('a gateway that fails the move leaves the record as it was (502)', async () => {
      const slow = await startFakeGatewayWs({
        token: GATEWAY_TOKEN,
        pairedDeviceIds: [],
        methodDelayMs: { 'device.pair.approve': Number.POSITIVE_INFINITY },
      });
      await pointAgentAt(aliceAgent, `http://127.0.0.1:${slow.port}`);
      try {
        const device = await ask(slow);
        await get(alice.cookie);
        const res = await post(alice.cookie, { deviceId: device.deviceId, action: 'approve' });
        expect(res.status).toBe(502);
        expect(res.body.error).toMatch(/^Agent gateway error: /);
        expect(ids((await get(alice.cookie)).body.pending)).toContain(device.deviceId);
      } finally {
        await pointAgentAt(aliceAgent, `http://127.0.0.1:${gatewayA.port}`);
        await slow.close();
      }
    });
  });
});
