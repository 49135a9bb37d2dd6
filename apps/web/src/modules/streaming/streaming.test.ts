import {
  closedPort,
  type FakeStreamingApi,
  type RunningService,
  type TestChain,
  type TestDatabase,
  createTestDatabase,
  listen,
  request,
  signStreamingWebhook,
  startFakeStreamingApi,
  startTestChain,
  testCounters,
  testEnv,
  walletSalt,
} from '@aop/testing';
import type { Address, Hex } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { loadWebConfig } from '../../config.js';
import { decideAsset, maskStreamKey } from './streaming.service.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

const LIVE = '/api/radio/live';
const STREAMS = '/api/radio/streams';
const WEBHOOK = '/api/webhooks/streaming';
const SECRET = 'whsec_streaming_test_secret_0123456789';
const RTMP = 'rtmps://global-live.mux.com:443/app';

/** Waits until `check` holds (the deletion worker runs after the webhook answer). */
async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
let eventSeq = 0;
const eventId = () => `evt-${Date.now()}-${++eventSeq}`;

// Spec §2.11, §3.4 (live stream), §4.16, §5 (webhook signatures), §6 (streaming provider events), §8 (gate-token
// threshold 1,250,000; webhook tolerance 5 minutes). The provider is a local Mux-compatible API; gate tokens and
// smart wallets live on an in-process hardhat chain read over JSON-RPC.
describe('live streaming: /api/radio/live, /api/radio/streams, /api/webhooks/streaming', () => {
  let chain: TestChain;
  let provider: FakeStreamingApi;
  let web: TestWeb;
  let token: Address;
  let exact: Address;
  let short: Address;
  let rich: Address;
  let eoa: Address;
  let counterfactual: Address;
  let delegated: Address;
  const variants: Array<{ close(): Promise<void> }> = [];
  let baseEnv: Record<string, string>;

  /** Another web service on the same database (or its own) with a different environment. */
  const startVariant = async (env: Record<string, string | undefined>, database?: TestDatabase): Promise<RunningService> => {
    const counters = testCounters();
    const running = await listen(
      await buildApp({ config: loadWebConfig(testEnv(web.config.dataDir, env)), db: (database ?? web.database).db, counters }),
    );
    const variant = {
      ...running,
      async close() {
        await running.close();
        await counters.close();
      },
    };
    variants.push(variant);
    return variant;
  };

  const post = (url: string, body: unknown, headers: Record<string, string> = {}) => request(`${url}${STREAMS}`, { json: body, headers });

  /** Sends `event` signed like the provider (now, unless told). */
  const deliver = (event: unknown, { url = web.url, secret = SECRET, at = nowSeconds() } = {}) => {
    const body = JSON.stringify(event);
    return request(`${url}${WEBHOOK}`, {
      body,
      headers: { 'content-type': 'application/json', 'streaming-signature': signStreamingWebhook(secret, body, at) },
    });
  };

  const assetReady = (asset: Record<string, unknown>, id = eventId()) => ({
    type: 'video.asset.ready',
    id,
    created_at: new Date().toISOString(),
    object: { type: 'asset', id: asset.id },
    environment: { name: 'Production', id: 'env1' },
    data: { status: 'ready', playback_ids: [{ id: `pb-${String(asset.id)}`, policy: 'public' }], ...asset },
  });

  const streamEvent = (type: 'active' | 'idle', streamId: string, createdAt = new Date(), id = eventId()) => ({
    type: `video.live_stream.${type}`,
    id,
    created_at: createdAt.toISOString(),
    object: { type: 'live', id: streamId },
    data: { id: streamId, status: type },
  });

  const assetRow = (id: string) => web.database.db.kysely.selectFrom('stream_assets').selectAll().where('id', '=', id).executeTakeFirst();
  const streamRow = (id: string) => web.database.db.kysely.selectFrom('live_streams').selectAll().where('id', '=', id).executeTakeFirst();

  beforeAll(async () => {
    chain = await startTestChain();
    provider = await startFakeStreamingApi();
    token = await chain.deployToken({ decimals: 18 });
    const factory = await chain.deployWalletFactory();
    const owner = chain.accounts[1]!.address;
    exact = await chain.deployWallet(factory, owner, walletSalt(1));
    short = await chain.deployWallet(factory, owner, walletSalt(2));
    rich = await chain.deployWallet(factory, owner, walletSalt(3));
    counterfactual = await chain.walletAddress(factory, owner, walletSalt(4));
    eoa = chain.accounts[2]!.address;
    delegated = chain.accounts[3]!.address;
    // An EIP-7702 delegation: an EOA whose code points at a wallet implementation.
    await chain.setCode(delegated, `0xef0100${rich.slice(2)}` as Hex);
    await chain.mintTokens(token, exact, '1250000');
    await chain.mintTokens(token, short, '1249999');
    await chain.mintTokens(token, rich, '2000000');
    await chain.mintTokens(token, eoa, '5000000');
    await chain.mintTokens(token, counterfactual, '5000000');
    await chain.mintTokens(token, delegated, '5000000');
    baseEnv = {
      GATING_RPC_URL: chain.rpcUrl,
      GATE_TOKEN_ADDRESS: token,
      STREAMING_API_URL: provider.url,
      STREAMING_API_KEY: provider.apiKey,
      STREAMING_LIVE_CACHE_MS: '0',
      STREAM_SIGNING_SECRET: SECRET,
      STREAM_ASSET_DELETE_DELAY_MINUTES: '0',
    };
    web = await startWeb(baseEnv);
  });
  afterEach(() => {
    provider.behaviour = {};
  });
  afterAll(async () => {
    for (const v of variants) await v.close();
    await web?.close();
    await provider?.close();
    await chain?.close();
  });

  describe('POST /api/radio/streams', () => {
    it('creates a stream for a smart wallet holding exactly 1,250,000 gate tokens, in the spec’s shape', async () => {
      const res = await post(web.url, { wallet: exact, name: '  DJ Exact  ' });
      expect(res.status).toBe(200);
      const created = provider.liveStreams.get(res.body.stream.id)!;
      expect(created).toBeDefined();
      expect(res.body).toEqual({
        success: true,
        stream: {
          id: created.id,
          name: 'DJ Exact',
          wallet: exact.toLowerCase(),
          streamKey: created.stream_key,
          rtmpUrl: RTMP,
          fullRtmpUrl: `${RTMP}/${created.stream_key}`,
          playbackId: created.playback_ids[0]!.id,
          status: 'created',
        },
        obsSettings: {
          server: RTMP,
          streamKey: created.stream_key,
          recommended: { audioBitrate: 160, encoder: 'AAC', sampleRate: 48000, channels: 2 },
        },
      });
      // The provider was asked for public playback of the stream and its recordings, with our HTTP Basic key.
      const call = provider.requests.find((r) => r.method === 'POST')!;
      expect(call.authorization).toBe(`Basic ${Buffer.from(provider.apiKey).toString('base64')}`);
      expect(call.body).toEqual({
        playback_policy: ['public'],
        new_asset_settings: { playback_policy: ['public'] },
        passthrough: `radio:${exact.toLowerCase()}`,
      });
      // Recorded without the stream key (a publishing credential the provider keeps).
      const row = await streamRow(created.id);
      expect(row).toMatchObject({
        name: 'DJ Exact',
        wallet: exact.toLowerCase(),
        playback_id: created.playback_ids[0]!.id,
        status: 'created',
      });
      expect(JSON.stringify(row)).not.toContain(created.stream_key);
    });

    it('takes a wallet with surrounding whitespace as the address it surrounds', async () => {
      const res = await post(web.url, { wallet: `\t ${rich.toUpperCase().replace('0X', '0x')} \n` });
      expect(res.status).toBe(200);
      expect(res.body.stream.wallet).toBe(rich.toLowerCase());
    });

    it('names the stream Anonymous DJ when no (or a blank) name is given', async () => {
      for (const body of [{ wallet: rich }, { wallet: rich, name: '   ' }, { wallet: rich, name: null }]) {
        const res = await post(web.url, body);
        expect(res.status).toBe(200);
        expect(res.body.stream.name).toBe('Anonymous DJ');
      }
    });

    it('403 for a smart wallet holding one token less than the threshold, with the numbers; nothing is created', async () => {
      const before = provider.liveStreams.size;
      const res = await post(web.url, { wallet: short, name: 'Short' });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({
        error: 'Insufficient gate tokens: 1250000 required, wallet holds 1249999',
        required: '1250000',
        balance: '1249999',
      });
      expect(provider.liveStreams.size).toBe(before);
    });

    it.each([
      ['an EOA holding plenty', () => eoa],
      ['an undeployed (counterfactual) smart wallet holding plenty', () => counterfactual],
      ['an EIP-7702-delegated EOA holding plenty', () => delegated],
    ])('403 for %s: only deployed smart-contract wallets may stream', async (_name, wallet) => {
      const before = provider.liveStreams.size;
      const res = await post(web.url, { wallet: wallet() });
      expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'Wallet must be a smart-contract wallet' } });
      expect(provider.liveStreams.size).toBe(before);
    });

    it.each([
      ['no body', () => request(`${web.url}${STREAMS}`, { method: 'POST' })],
      ['an empty object', () => post(web.url, {})],
      ['an empty wallet', () => post(web.url, { wallet: '' })],
      ['a wallet that is not a string', () => post(web.url, { wallet: 12345 })],
      ['a null wallet', () => post(web.url, { wallet: null })],
      ['a blank wallet, even with a name that is not a string', () => post(web.url, { wallet: '   ', name: 42 })],
      ['a JSON array', () => post(web.url, [exact])],
      ['a non-JSON body', () => request(`${web.url}${STREAMS}`, { body: 'wallet=0x1', headers: { 'content-type': 'text/plain' } })],
    ])('400 Wallet address required for %s', async (_name, send) => {
      const res = await send();
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Wallet address required' } });
    });

    it.each([
      [{ wallet: '0x1234' }, 'Invalid wallet address'],
      [{ wallet: 'not-a-wallet' }, 'Invalid wallet address'],
      // The wallet is checked before the name.
      [{ wallet: 'not-a-wallet', name: 42 }, 'Invalid wallet address'],
      [{ wallet: '0x0000000000000000000000000000000000000001x' }, 'Invalid wallet address'],
      [{ wallet: '0x0000000000000000000000000000000000000001', name: ['DJ'] }, 'Name must be a string'],
      [{ wallet: '0x0000000000000000000000000000000000000001', name: 42 }, 'Name must be a string'],
      [{ wallet: '0x0000000000000000000000000000000000000001', name: 'x'.repeat(101) }, 'Name must be at most 100 characters'],
    ])('400 for %j', async (body, error) => {
      const res = await post(web.url, body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error } });
    });

    it('500 Failed to create stream when the provider refuses', async () => {
      provider.behaviour = { failCreate: true };
      const res = await post(web.url, { wallet: exact });
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Failed to create stream' } });
    });

    it('500 Streaming not configured without STREAMING_API_KEY, or without gating (RPC or token)', async () => {
      const { STREAMING_API_KEY: _key, ...noKey } = baseEnv;
      const { GATE_TOKEN_ADDRESS: _token, ...noToken } = baseEnv;
      const { GATING_RPC_URL: _rpc, ...noRpc } = baseEnv;
      for (const env of [noKey, noToken, noRpc]) {
        const variant = await startVariant(env);
        const res = await post(variant.url, { wallet: exact });
        expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Streaming not configured' } });
      }
    });

    it('500 Failed to create stream when the provider does not accept our key', async () => {
      const variant = await startVariant({ ...baseEnv, STREAMING_API_KEY: 'wrong:key' });
      const res = await post(variant.url, { wallet: exact });
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Failed to create stream' } });
    });

    it('502 Gate check failed when the gating network cannot be reached', async () => {
      const variant = await startVariant({ ...baseEnv, GATING_RPC_URL: `http://127.0.0.1:${await closedPort()}` });
      const res = await post(variant.url, { wallet: exact });
      expect({ status: res.status, body: res.body }).toEqual({ status: 502, body: { error: 'Gate check failed' } });
    });

    it('scales the threshold by the token’s own decimals (a 6-decimal token)', async () => {
      const six = await chain.deployToken({ name: 'Six', symbol: 'SIX', decimals: 6 });
      await chain.mintTokens(six, exact, '1250000');
      await chain.mintTokens(six, short, '1249999.999999');
      const variant = await startVariant({ ...baseEnv, GATE_TOKEN_ADDRESS: six });
      expect((await post(variant.url, { wallet: exact })).status).toBe(200);
      const refused = await post(variant.url, { wallet: short });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ required: '1250000', balance: '1249999.999999' });
    });
  });

  describe('GET /api/radio/live', () => {
    it('lists the provider’s active streams joined with our records (§2.11), not the idle ones', async () => {
      const mine = await post(web.url, { wallet: exact, name: 'Night Shift' });
      const id: string = mine.body.stream.id;
      const idle = await post(web.url, { wallet: rich, name: 'Still Idle' });
      provider.setStatus(id, 'active');
      const wentLive = new Date(Date.now() - 90_000);
      expect((await deliver(streamEvent('active', id, wentLive))).body).toEqual({ received: true });
      // Created at the provider's dashboard: no record here.
      const foreign = provider.addLiveStream({ status: 'active', createdAt: 1_700_000_000 });
      const signedOnly = provider.addLiveStream({ status: 'active', playback: 'signed', createdAt: 1_700_000_100 });

      const res = await request(`${web.url}${LIVE}`);
      expect(res.status).toBe(200);
      const byId = new Map((res.body.djs as Array<{ id: string }>).map((d) => [d.id, d]));
      expect(res.body.count).toBe(res.body.djs.length);
      expect(byId.has(idle.body.stream.id)).toBe(false);
      const key = provider.liveStreams.get(id)!.stream_key;
      const playbackId = mine.body.stream.playbackId;
      expect(byId.get(id)).toEqual({
        id,
        name: 'Night Shift',
        wallet: exact.toLowerCase(),
        playbackId,
        streamKey: `****${key.slice(-4)}`,
        status: 'active',
        startedAt: Math.floor(wentLive.getTime() / 1000),
        hlsUrl: `https://stream.mux.com/${playbackId}.m3u8`,
        embedUrl: `https://player.mux.com/${playbackId}`,
      });
      expect(byId.get(foreign.id)).toEqual({
        id: foreign.id,
        name: 'Anonymous DJ',
        wallet: null,
        playbackId: foreign.playback_ids[0]!.id,
        streamKey: maskStreamKey(foreign.stream_key),
        status: 'active',
        startedAt: 1_700_000_000,
        hlsUrl: `https://stream.mux.com/${foreign.playback_ids[0]!.id}.m3u8`,
        embedUrl: `https://player.mux.com/${foreign.playback_ids[0]!.id}`,
      });
      expect(byId.get(signedOnly.id)).toMatchObject({ playbackId: null, hlsUrl: null, embedUrl: null, startedAt: 1_700_000_100 });
      // The full publishing key never appears in the public list.
      expect(res.text).not.toContain(key);
      expect(res.text).not.toContain(foreign.stream_key);
      const listCall = provider.requests.filter((r) => r.method === 'GET' && r.path === '/video/v1/live-streams').at(-1)!;
      expect(listCall.query).toMatchObject({ status: 'active', limit: '100', page: '1' });
      provider.setStatus(id, 'idle');
      provider.setStatus(foreign.id, 'idle');
      provider.setStatus(signedOnly.id, 'idle');
    });

    it('answers { djs: [], count: 0 } when nobody is live, even from a provider that ignores the status filter', async () => {
      for (const s of provider.liveStreams.values()) s.status = 'idle';
      provider.behaviour = { ignoreStatusFilter: true };
      const res = await request(`${web.url}${LIVE}`);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { djs: [], count: 0 } });
    });

    it('500 Streaming not configured without STREAMING_API_KEY', async () => {
      const { STREAMING_API_KEY: _key, ...env } = baseEnv;
      const variant = await startVariant(env);
      const res = await request(`${variant.url}${LIVE}`);
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Streaming not configured' } });
    });

    it('500 Failed to fetch live streams when the provider fails or cannot be reached', async () => {
      provider.behaviour = { failList: true };
      const failing = await request(`${web.url}${LIVE}`);
      expect({ status: failing.status, body: failing.body }).toEqual({ status: 500, body: { error: 'Failed to fetch live streams' } });
      const variant = await startVariant({ ...baseEnv, STREAMING_API_URL: `http://127.0.0.1:${await closedPort()}` });
      const down = await request(`${variant.url}${LIVE}`);
      expect({ status: down.status, body: down.body }).toEqual({ status: 500, body: { error: 'Failed to fetch live streams' } });
    });

    it('shares one provider call between callers for STREAMING_LIVE_CACHE_MS', async () => {
      const variant = await startVariant({ ...baseEnv, STREAMING_LIVE_CACHE_MS: '60000' });
      const count = () => provider.requests.filter((r) => r.path === '/video/v1/live-streams' && r.method === 'GET').length;
      const before = count();
      const answers = await Promise.all([1, 2, 3].map(() => request(`${variant.url}${LIVE}`)));
      await request(`${variant.url}${LIVE}`);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(count() - before).toBe(1);
    });
  });

  describe('POST /api/webhooks/streaming: signature', () => {
    const sample = () => streamEvent('idle', 'no-such-stream');

    it('accepts a valid signature: { received: true }', async () => {
      const res = await deliver(sample());
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { received: true } });
    });

    it('401 Missing signature without the header', async () => {
      const res = await request(`${web.url}${WEBHOOK}`, { json: sample() });
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'Missing signature' } });
    });

    it.each(['v1=abcdef', `t=${nowSeconds()}`, 'garbage', `t=soon,v1=${'a'.repeat(64)}`])(
      '401 Malformed signature for %s',
      async (header) => {
        const res = await request(`${web.url}${WEBHOOK}`, { json: sample(), headers: { 'streaming-signature': header } });
        expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'Malformed signature' } });
      },
    );

    it('403 for a timestamp older than 5 minutes (or more than 5 minutes ahead); 4:50 old still passes', async () => {
      const old = await deliver(sample(), { at: nowSeconds() - 5 * 60 - 5 });
      const ahead = await deliver(sample(), { at: nowSeconds() + 5 * 60 + 5 });
      for (const res of [old, ahead]) {
        expect({ status: res.status, body: res.body }).toEqual({
          status: 403,
          body: { error: 'Signature timestamp outside the 5-minute tolerance' },
        });
      }
      expect((await deliver(sample(), { at: nowSeconds() - 290 })).status).toBe(200);
    });

    it('403 Invalid signature for a tampered body, another secret, or a signature of another timestamp', async () => {
      const body = JSON.stringify(sample());
      const header = signStreamingWebhook(SECRET, body);
      const tampered = await request(`${web.url}${WEBHOOK}`, {
        body: body.replace('idle', 'active'),
        headers: { 'content-type': 'application/json', 'streaming-signature': header },
      });
      const otherSecret = await deliver(sample(), { secret: 'another-secret' });
      const t = nowSeconds();
      const moved = await request(`${web.url}${WEBHOOK}`, {
        body,
        headers: {
          'content-type': 'application/json',
          'streaming-signature': signStreamingWebhook(SECRET, body, t).replace(`t=${t}`, `t=${t - 1}`),
        },
      });
      for (const res of [tampered, otherSecret, moved]) {
        expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'Invalid signature' } });
      }
    });

    it('accepts any matching v1 among several (secret rotation) and a body sent as text/plain', async () => {
      const body = JSON.stringify(sample());
      const t = nowSeconds();
      const good = signStreamingWebhook(SECRET, body, t).split('v1=')[1];
      const res = await request(`${web.url}${WEBHOOK}`, {
        body,
        headers: { 'content-type': 'text/plain', 'streaming-signature': `t=${t},v1=${'0'.repeat(64)},v1=${good}` },
      });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { received: true } });
    });

    it('with no secret configured every request is rejected: 503 Webhook signing secret not configured', async () => {
      const { STREAM_SIGNING_SECRET: _secret, ...env } = baseEnv;
      const variant = await startVariant(env);
      const signed = await deliver(sample(), { url: variant.url });
      const unsigned = await request(`${variant.url}${WEBHOOK}`, { json: sample() });
      for (const res of [signed, unsigned]) {
        expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { error: 'Webhook signing secret not configured' } });
      }
    });

    it('uses STREAM_WEBHOOK_SECRET when STREAM_SIGNING_SECRET is unset', async () => {
      const { STREAM_SIGNING_SECRET: _secret, ...env } = baseEnv;
      const variant = await startVariant({ ...env, STREAM_WEBHOOK_SECRET: 'the-fallback-secret' });
      expect((await deliver(sample(), { url: variant.url, secret: 'the-fallback-secret' })).status).toBe(200);
      expect((await deliver(sample(), { url: variant.url })).status).toBe(403);
    });

    it('400 for a signed body that is not JSON or not an event', async () => {
      for (const [body, error] of [
        ['not json', 'Invalid request body'],
        ['', 'Invalid request body'],
        [JSON.stringify({ type: 'video.asset.ready' }), 'Invalid event'],
        [JSON.stringify({ id: 'x' }), 'Invalid event'],
      ] as const) {
        const res = await request(`${web.url}${WEBHOOK}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'streaming-signature': signStreamingWebhook(SECRET, body) },
        });
        expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error } });
      }
    });

    it('400 Invalid request body for a signed event holding U+0000 or nested deeper than 64 levels', async () => {
      const nul = await deliver(streamEvent('idle', 'no-such-stream', new Date(), `${eventId()}\u0000`));
      const deep = await deliver({ ...sample(), data: JSON.parse(`${'['.repeat(64)}${']'.repeat(64)}`) });
      for (const res of [nul, deep]) {
        expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Invalid request body' } });
      }
    });

    it('500 Webhook processing failed when the event cannot be stored (the provider retries)', async () => {
      const broken = await createTestDatabase();
      const variant = await startVariant(baseEnv, broken);
      await broken.close();
      const res = await deliver(sample(), { url: variant.url });
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'Webhook processing failed' } });
    });
  });

  describe('POST /api/webhooks/streaming: events (§6)', () => {
    it('video.asset.ready: 1080p of exactly 15:00 is queued for deletion and deleted at the provider', async () => {
      provider.addAsset({ id: 'asset-1080-900' });
      const res = await deliver(assetReady({ id: 'asset-1080-900', resolution_tier: '1080p', duration: 900, live_stream_id: 'ls-1' }));
      expect(res.body).toEqual({ received: true });
      await until(() => provider.deletedAssets.includes('asset-1080-900'));
      await until(async () => (await assetRow('asset-1080-900'))?.status === 'deleted');
      expect(await assetRow('asset-1080-900')).toMatchObject({
        decision: 'delete',
        reason: 'not longer than 15 minutes (15m00s)',
        resolution: 1080,
        duration_seconds: 900,
        live_stream_id: 'ls-1',
        playback_id: 'pb-asset-1080-900',
        deleted_at: expect.any(Date),
      });
    });

    it('video.asset.ready: 1080p of 15:01 is archived and never deleted', async () => {
      provider.addAsset({ id: 'asset-1080-901' });
      await deliver(assetReady({ id: 'asset-1080-901', resolution_tier: '1080p', duration: 901 }));
      expect(await assetRow('asset-1080-901')).toMatchObject({
        decision: 'archive',
        status: 'archived',
        reason: '1080p, 15m01s',
        delete_after: null,
      });
      // Another delivery that does queue something runs the worker; the archived asset stays.
      provider.addAsset({ id: 'asset-trigger' });
      await deliver(assetReady({ id: 'asset-trigger', resolution_tier: '720p', duration: 10 }));
      await until(() => provider.deletedAssets.includes('asset-trigger'));
      expect(provider.deletedAssets).not.toContain('asset-1080-901');
      expect(provider.assets.has('asset-1080-901')).toBe(true);
    });

    it('video.asset.ready: 720p of an hour is queued for deletion', async () => {
      provider.addAsset({ id: 'asset-720-long' });
      await deliver(assetReady({ id: 'asset-720-long', resolution_tier: '720p', duration: 3600 }));
      await until(() => provider.deletedAssets.includes('asset-720-long'));
      expect(await assetRow('asset-720-long')).toMatchObject({ decision: 'delete', reason: 'below 1080p (720p)', status: 'deleted' });
    });

    it('records the decision once: a redelivered event (same id) and a second event for the asset change nothing', async () => {
      const event = assetReady({ id: 'asset-dup', resolution_tier: '2160p', duration: 4000 });
      expect((await deliver(event)).body).toEqual({ received: true });
      expect((await deliver(event)).body).toEqual({ received: true });
      await deliver(assetReady({ id: 'asset-dup', resolution_tier: '480p', duration: 10 }));
      expect(await assetRow('asset-dup')).toMatchObject({ decision: 'archive', status: 'archived', resolution: 2160 });
      const events = await web.database.db.kysely.selectFrom('stream_webhook_events').selectAll().where('id', '=', event.id).execute();
      expect(events).toHaveLength(1);
    });

    it('an asset already gone at the provider counts as deleted; a failing DELETE is recorded and retried later', async () => {
      await deliver(assetReady({ id: 'asset-gone', resolution_tier: '720p', duration: 60 }));
      await until(async () => (await assetRow('asset-gone'))?.status === 'deleted');

      provider.behaviour = { failDeleteAsset: true };
      provider.addAsset({ id: 'asset-stuck' });
      await deliver(assetReady({ id: 'asset-stuck', resolution_tier: '720p', duration: 60 }));
      await until(async () => (await assetRow('asset-stuck'))?.deletion_attempts === 1);
      const row = await assetRow('asset-stuck');
      expect(row).toMatchObject({ status: 'pending_deletion', last_error: 'delete asset answered 500' });
      expect(row!.delete_after!.getTime()).toBeGreaterThan(Date.now() + 10 * 60_000);
      expect(provider.assets.has('asset-stuck')).toBe(true);
    });

    it('waits STREAM_ASSET_DELETE_DELAY_MINUTES (a day by default) before deleting', async () => {
      const { STREAM_ASSET_DELETE_DELAY_MINUTES: _delay, ...env } = baseEnv;
      const variant = await startVariant(env);
      provider.addAsset({ id: 'asset-later' });
      const before = Date.now();
      await deliver(assetReady({ id: 'asset-later', resolution_tier: '720p', duration: 60 }), { url: variant.url });
      const row = await assetRow('asset-later');
      expect(row).toMatchObject({ status: 'pending_deletion', decision: 'delete' });
      expect(row!.delete_after!.getTime()).toBeGreaterThanOrEqual(before + 24 * 60 * 60_000 - 1_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(provider.deletedAssets).not.toContain('asset-later');
    });

    it('video.live_stream.active / idle update the stream; an older event after a newer one is ignored', async () => {
      const created = await post(web.url, { wallet: rich, name: 'Status DJ' });
      const id: string = created.body.stream.id;
      const t0 = new Date(Date.now() - 60_000);
      await deliver(streamEvent('active', id, t0));
      expect(await streamRow(id)).toMatchObject({ status: 'active', active_since: t0 });
      // A reconnect in the same broadcast keeps the start.
      await deliver(streamEvent('active', id, new Date(t0.getTime() + 10_000)));
      expect((await streamRow(id))!.active_since).toEqual(t0);
      const t1 = new Date(t0.getTime() + 30_000);
      await deliver(streamEvent('idle', id, t1));
      expect(await streamRow(id)).toMatchObject({ status: 'idle', active_since: null, last_event_at: t1 });
      // Delivered late: the stream stays idle.
      expect((await deliver(streamEvent('active', id, new Date(t0.getTime() + 20_000)))).body).toEqual({ received: true });
      expect(await streamRow(id)).toMatchObject({ status: 'idle' });
    });

    it('acknowledges event types it does not act on', async () => {
      const res = await deliver({ type: 'video.asset.created', id: eventId(), data: { id: 'a-new-asset' } });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { received: true } });
      expect(await assetRow('a-new-asset')).toBeUndefined();
    });
  });

  describe('archive rule (§6)', () => {
    it.each([
      [{ resolution_tier: '1080p', duration: 900 }, 'delete'],
      [{ resolution_tier: '1080p', duration: 901 }, 'archive'],
      [{ resolution_tier: '1080p', duration: 900.5 }, 'archive'],
      [{ resolution_tier: '720p', duration: 7200 }, 'delete'],
      [{ resolution_tier: '2160p', duration: 3600 }, 'archive'],
      [{ resolution_tier: 'audio-only', duration: 7200 }, 'delete'],
      [{ duration: 3600 }, 'delete'],
      [{ resolution_tier: '1080p' }, 'delete'],
      // Without a tier: the largest video track's short side (portrait 1080×1920 is 1080p).
      [{ tracks: [{ type: 'video', max_width: 1080, max_height: 1920 }, { type: 'audio' }], duration: 1000 }, 'archive'],
      [{ tracks: [{ type: 'video', max_width: 1280, max_height: 720 }], duration: 1000 }, 'delete'],
      [{ tracks: [{ type: 'audio' }], duration: 1000 }, 'delete'],
      [{ max_stored_resolution: 'FHD', duration: 1000 }, 'archive'],
      [{ max_stored_resolution: 'HD', duration: 1000 }, 'delete'],
    ])('%j → %s', (asset, decision) => {
      expect(decideAsset(asset).decision).toBe(decision);
    });
  });
});
