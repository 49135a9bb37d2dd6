import { sql } from '@aop/db';
import {
  COLONY_EXTRA_ENDPOINT,
  type FakeColony,
  colonyFitnessScore,
  colonyTier,
  request,
  startFakeColony,
  unreachableUrl,
} from '@aop/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { isRecipientAddress, publicGatewayUrl } from './x402.service.js';
import { type TestWeb, startWeb } from '../../web.test-support.js';

// Spec §4.5 x402 payment gateway, §7 (x402 errors add `success: false`), §8 (amount > 0 and <= 100; join 10 s).

const INVALID_ACTION = 'Invalid action. Use: join-colony, fitness, pricing, endpoints, or pay';
const OVER_LIMIT = 'Amount exceeds $100 limit. Contact support for higher limits.';
/** The spec's fallback list, word for word. */
const FALLBACK_ENDPOINTS = {
  success: true,
  endpoints: [
    { slug: '/gateway/colony/join', description: 'Join agent colony', price: 'Free' },
    { slug: '/gateway/fitness/:agentId', description: 'Get agent fitness score', price: 'Free' },
    { slug: '/gateway/pricing/:agentId', description: 'Get dynamic pricing', price: 'Free' },
    { slug: '/gateway/pay', description: 'Make payment', price: 'Variable' },
  ],
};
const FALLBACK_FITNESS = { score: 50, tier: 'new', details: null };
const fallbackPricing = (agentId: string) => ({
  agentId,
  tier: 'basic',
  pricing: { rate: 0.01, discount: 0 },
  fitness: { score: 50, tier: 'new' },
});

const EVM = '0x52908400098527886E0F7030069857D2E4169EE7';
const SOLANA_44 = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const SOLANA_43 = 'So11111111111111111111111111111111111111112';
const SOLANA_32 = '11111111111111111111111111111111';
const WALLET = '0x1234567890abcdef1234567890ABCDEF12345678';

/** Join waits at most this long (the spec's 10 s, shortened); every other call JOIN < OTHER. */
const JOIN_TIMEOUT_MS = 400;
const OTHER_TIMEOUT_MS = 1200;

let colony: FakeColony;
let web: TestWeb;
let downWeb: TestWeb;
let bareWeb: TestWeb;
let downUrl: string;

beforeAll(async () => {
  colony = await startFakeColony();
  downUrl = await unreachableUrl();
  [web, downWeb, bareWeb] = await Promise.all([
    startWeb({
      X402_GATEWAY_URL: `${colony.url}/`,
      X402_JOIN_TIMEOUT_MS: String(JOIN_TIMEOUT_MS),
      X402_TIMEOUT_MS: String(OTHER_TIMEOUT_MS),
    }),
    startWeb({ X402_GATEWAY_URL: downUrl }),
    startWeb({}),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([web?.close(), downWeb?.close(), bareWeb?.close()]);
  await colony?.close();
});

beforeEach(() => {
  colony.behaviour = {};
  colony.requests.length = 0;
});

const post = (target: TestWeb, json: unknown, cookie?: string) =>
  request(`${target.url}/api/x402`, { json, headers: cookie ? { cookie } : {} });

interface AuditRow {
  user_id: string | null;
  action: string;
  target: string | null;
  ip: string | null;
  metadata: Record<string, unknown>;
}
const auditRows = (target: TestWeb, userId: string): Promise<AuditRow[]> =>
  target.database.db.kysely
    .selectFrom('audit_log')
    .select(['user_id', 'action', 'target', 'ip', 'metadata'])
    .where('user_id', '=', userId)
    .where('action', 'like', 'x402.%')
    .orderBy('created_at')
    .orderBy('id')
    .execute() as Promise<AuditRow[]>;

describe('GET /api/x402', () => {
  it('answers the configured gateway and the upstream health fields, without credentials', async () => {
    const res = await request(`${web.url}/api/x402`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      gateway: colony.url,
      status: 'healthy',
      service: 'colony-gateway',
      agents: expect.any(Number),
      colonies: 1,
      timestamp: expect.any(String),
    });
    expect(colony.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /health']);
  });

  it('is 503 unreachable when nothing listens at the gateway', async () => {
    const res = await request(`${downWeb.url}/api/x402`);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ success: false, gateway: downUrl, status: 'unreachable', error: expect.stringMatching(/^unreachable/) });
  });

  it('is 503 unreachable when the gateway drops the connection, fails, answers HTML or is too slow', async () => {
    const cases: [FakeColony['behaviour'], RegExp][] = [
      [{ down: true }, /^unreachable/],
      [{ failWith: 500 }, /^upstream answered HTTP 500$/],
      [{ nonJson: true }, /^upstream health answer is not a JSON object$/],
      [{ delayMs: OTHER_TIMEOUT_MS + 600 }, new RegExp(`^timed out after ${OTHER_TIMEOUT_MS} ms$`)],
    ];
    for (const [behaviour, error] of cases) {
      colony.behaviour = behaviour;
      const res = await request(`${web.url}/api/x402`);
      expect(res.status, JSON.stringify(behaviour)).toBe(503);
      expect(res.body).toEqual({ success: false, gateway: colony.url, status: 'unreachable', error: expect.stringMatching(error) });
    }
  });

  it('is 503 unreachable, gateway null, when no gateway is configured', async () => {
    const res = await request(`${bareWeb.url}/api/x402`);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ success: false, gateway: null, status: 'unreachable', error: 'x402 gateway not configured' });
  });

  it('never shows user info, query or fragment of the configured URL', () => {
    const x402 = { gatewayUrl: 'https://user:secret@colony.example.com/x402?key=abc#frag', timeoutMs: 1, joinTimeoutMs: 1 };
    expect(publicGatewayUrl({ x402 })).toBe('https://colony.example.com/x402');
    expect(publicGatewayUrl({ x402: { ...x402, gatewayUrl: undefined } })).toBeNull();
  });
});

describe('POST /api/x402: action and body', () => {
  it('refuses a missing, unknown or mistyped action with the spec message', async () => {
    for (const body of [{}, { action: 'refund' }, { action: 'PAY' }, { action: 5 }, { action: null }, { action: ['pay'] }]) {
      const res = await post(web, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ success: false, error: INVALID_ACTION });
    }
    expect(colony.requests).toEqual([]);
  });

  it('refuses bodies that are not a JSON object in the same words', async () => {
    const url = `${web.url}/api/x402`;
    const answers = [
      await request(url, { body: '{"action": "fitness"', headers: { 'content-type': 'application/json' } }),
      await request(url, { body: 'action=fitness', headers: { 'content-type': 'text/plain' } }),
      await request(url, { body: 'action=fitness', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      await request(url, { json: ['fitness'] }),
      await request(url, { json: 'fitness' }),
      await request(url, { method: 'POST' }),
    ];
    for (const res of answers) {
      expect(res.status, res.text).toBe(400);
      expect(res.body).toEqual({ success: false, error: INVALID_ACTION });
    }
  });

  it('a body above 1 MB is 413 in the x402 shape', async () => {
    const res = await post(web, { action: 'fitness', agentId: 'x'.repeat(1_100_000) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ success: false, error: 'Request body too large' });
  });
});

describe('POST /api/x402 public actions', () => {
  it('endpoints: the upstream list, as it comes', async () => {
    const res = await post(web, { action: 'endpoints' });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.endpoints).toContainEqual(COLONY_EXTRA_ENDPOINT);
    expect(colony.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /gateway/endpoints']);
  });

  it('endpoints: the spec fallback list when the upstream is down, unset, failing, HTML, misshapen or slow', async () => {
    const answers = [await post(downWeb, { action: 'endpoints' }), await post(bareWeb, { action: 'endpoints' })];
    for (const behaviour of [{ failWith: 500 }, { nonJson: true }, { delayMs: OTHER_TIMEOUT_MS + 600 }, { failWith: 404 }]) {
      colony.behaviour = behaviour;
      answers.push(await post(web, { action: 'endpoints' }));
    }
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(FALLBACK_ENDPOINTS);
    }
  });

  it('fitness: the upstream score, tier and details for the agent asked for', async () => {
    const res = await post(web, { action: 'fitness', agentId: 'nova' });
    const score = colonyFitnessScore('nova');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ score, tier: colonyTier(score), details: { member: false, uptime: 0.99, tasksCompleted: score * 3 } });
    expect(colony.requests.map((r) => r.path)).toEqual(['/gateway/fitness/nova']);
  });

  it('fitness: agentId defaults to atlas (also for a blank or mistyped one) and is path-encoded', async () => {
    for (const agentId of [undefined, '', '   ', 42, null]) {
      const res = await post(web, { action: 'fitness', ...(agentId !== undefined ? { agentId } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.score).toBe(colonyFitnessScore('atlas'));
    }
    expect(new Set(colony.requests.map((r) => r.path))).toEqual(new Set(['/gateway/fitness/atlas']));
    colony.requests.length = 0;
    await post(web, { action: 'fitness', agentId: '../admin?x=1' });
    expect(colony.requests.map((r) => r.path)).toEqual(['/gateway/fitness/..%2Fadmin%3Fx%3D1']);
  });

  it('fitness: score 50, tier new, details null when the upstream has no usable answer', async () => {
    const answers = [await post(downWeb, { action: 'fitness' }), await post(bareWeb, { action: 'fitness', agentId: 'nova' })];
    for (const behaviour of [
      { failWith: 500 },
      { failWith: 402 },
      { nonJson: true },
      { down: true },
      { delayMs: OTHER_TIMEOUT_MS + 600 },
    ]) {
      colony.behaviour = behaviour;
      answers.push(await post(web, { action: 'fitness', agentId: 'nova' }));
    }
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(FALLBACK_FITNESS);
    }
  });

  it('fitness: a slow upstream inside the timeout is still answered', async () => {
    colony.behaviour = { delayMs: JOIN_TIMEOUT_MS + 300 };
    const res = await post(web, { action: 'fitness', agentId: 'nova' });
    expect(res.body.score).toBe(colonyFitnessScore('nova'));
  });

  it('pricing: the upstream tier, rate, discount and fitness', async () => {
    const res = await post(web, { action: 'pricing', agentId: 'nova' });
    const score = colonyFitnessScore('nova');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      agentId: 'nova',
      tier: expect.any(String),
      pricing: { rate: expect.any(Number), discount: expect.any(Number) },
      fitness: { score, tier: colonyTier(score) },
    });
    expect(colony.requests.map((r) => r.path)).toEqual(['/gateway/pricing/nova']);
    const atlas = await post(web, { action: 'pricing' });
    expect(atlas.body.agentId).toBe('atlas');
  });

  it('pricing: tier basic, rate 0.01, discount 0, fitness 50/new when the upstream has no usable answer', async () => {
    expect((await post(downWeb, { action: 'pricing' })).body).toEqual(fallbackPricing('atlas'));
    expect((await post(bareWeb, { action: 'pricing', agentId: 'nova' })).body).toEqual(fallbackPricing('nova'));
    for (const behaviour of [{ failWith: 503 }, { nonJson: true }, { delayMs: OTHER_TIMEOUT_MS + 600 }]) {
      colony.behaviour = behaviour;
      const res = await post(web, { action: 'pricing', agentId: 'nova' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(fallbackPricing('nova'));
    }
  });
});

describe('POST /api/x402 join-colony', () => {
  it('401 { success: false, error } without a session, before anything reaches the upstream', async () => {
    const res = await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ success: false, error: 'Authentication required' });
    expect(colony.requests).toEqual([]);
  });

  it('401 for an API key: money needs a signed-in session', async () => {
    const { userId } = await web.signIn();
    const { key } = await web.database.db.withUser(userId, (trx) => createApiKey(trx, userId, 'x402'));
    for (const action of ['join-colony', 'pay']) {
      const res = await request(`${web.url}/api/x402`, {
        json: { action, agentId: 'nova', walletAddress: WALLET, amount: 1, recipient: EVM },
        headers: { authorization: `Bearer ${key}` },
      });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ success: false, error: 'Authentication required' });
    }
    expect(colony.requests).toEqual([]);
  });

  it('agentId required: missing, blank or not a string', async () => {
    const { cookie } = await web.signIn();
    for (const agentId of [undefined, '', '  ', 42, { id: 'nova' }]) {
      const res = await post(web, { action: 'join-colony', agentId, walletAddress: WALLET }, cookie);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ success: false, error: 'agentId required' });
    }
    expect(colony.requests).toEqual([]);
  });

  it('answers the upstream answer on 200 and sends agent, wallet and user id', async () => {
    const { userId, cookie } = await web.signIn();
    const res = await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET }, cookie);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      colony: 'main',
      agentId: 'nova',
      walletAddress: WALLET,
      joinedAt: expect.any(String),
      members: expect.any(Number),
    });
    expect(colony.requests).toHaveLength(1);
    expect(colony.requests[0]).toMatchObject({ method: 'POST', path: '/gateway/colony/join' });
    expect(colony.requests[0]?.body).toEqual({ agentId: 'nova', walletAddress: WALLET, userId });
    expect(colony.members.get('nova')?.userId).toBe(userId);
  });

  it('a mistyped walletAddress is not forwarded; the upstream refusal is 502 with its words', async () => {
    const { cookie } = await web.signIn();
    const res = await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: 12345 }, cookie);
    expect(colony.requests[0]?.body).not.toHaveProperty('walletAddress');
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ success: false, error: 'Colony join failed: 400 A valid walletAddress is required' });
  });

  it('upstream 402 is 402 Colony join failed: 402 ...', async () => {
    const { cookie } = await web.signIn();
    colony.behaviour = { failWith: 402 };
    const res = await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET }, cookie);
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ success: false, error: 'Colony join failed: 402 Payment required to join this colony' });
  });

  it('other upstream non-OK answers are 502 Colony join failed: <status> ...', async () => {
    const { cookie } = await web.signIn();
    const cases: [FakeColony['behaviour'], string][] = [
      [{ failWith: 500 }, 'Colony join failed: 500 Colony Internal Server Error'],
      [{ failWith: 404 }, 'Colony join failed: 404 Colony Not Found'],
      [{ failWith: 503, nonJson: true }, 'Colony join failed: 503 Service Unavailable'],
      [{ nonJson: true }, 'Colony join failed: 200 Invalid response'],
    ];
    for (const [behaviour, error] of cases) {
      colony.behaviour = behaviour;
      const res = await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET }, cookie);
      expect(res.status, JSON.stringify(behaviour)).toBe(502);
      expect(res.body).toEqual({ success: false, error });
    }
  });

  it('gives up after the join timeout with 503 Colony gateway unreachable', async () => {
    const { cookie } = await web.signIn();
    // Slower than the join timeout but faster than the timeout of every other call: join has its own.
    colony.behaviour = { delayMs: JOIN_TIMEOUT_MS + 500 };
    const started = Date.now();
    const res = await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET }, cookie);
    const elapsed = Date.now() - started;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ success: false, error: 'Colony gateway unreachable' });
    expect(elapsed).toBeGreaterThanOrEqual(JOIN_TIMEOUT_MS - 50);
    // The upstream would have answered 200 at JOIN_TIMEOUT_MS + 500: the 503 alone proves the join timeout fired first.
    expect(elapsed).toBeLessThan(OTHER_TIMEOUT_MS);
  });

  it('the join timeout is 10 seconds unless shortened', () => {
    expect(bareWeb.config.x402.joinTimeoutMs).toBe(10_000);
    expect(bareWeb.config.x402.timeoutMs).toBe(10_000);
  });

  it('503 Colony gateway unreachable when the gateway is down, drops the connection or is not configured', async () => {
    const answers = [];
    for (const target of [downWeb, bareWeb]) {
      const { cookie } = await target.signIn();
      answers.push(await post(target, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET }, cookie));
    }
    const { cookie } = await web.signIn();
    colony.behaviour = { down: true };
    answers.push(await post(web, { action: 'join-colony', agentId: 'nova', walletAddress: WALLET }, cookie));
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ success: false, error: 'Colony gateway unreachable' });
    }
  });
});

describe('recipient formats', () => {
  it('accepts EVM 0x + 40 hex (any case) and Solana base58 of 32 to 44 characters', () => {
    for (const address of [EVM, EVM.toLowerCase(), `0x${'A'.repeat(40)}`, SOLANA_32, SOLANA_43, SOLANA_44]) {
      expect(isRecipientAddress(address), address).toBe(true);
    }
  });

  it('refuses everything else', () => {
    const refused = [
      `0x${'a'.repeat(39)}`,
      `0x${'a'.repeat(41)}`,
      `0x${'a'.repeat(39)}g`,
      `0X${'a'.repeat(40)}`,
      `${'2'.repeat(39)}0`,
      `${'2'.repeat(39)}O`,
      `${'2'.repeat(39)}I`,
      `${'2'.repeat(39)}l`,
      '2'.repeat(31),
      '2'.repeat(45),
      ` ${EVM}`,
      `${SOLANA_44}\n`,
      '',
    ];
    for (const address of refused) expect(isRecipientAddress(address), address).toBe(false);
  });
});

describe('POST /api/x402 pay', () => {
  const valid = { action: 'pay', agentId: 'nova', amount: 1.5, recipient: EVM };

  it('401 { success: false, error } without a session; nothing audited, nothing forwarded', async () => {
    const res = await post(web, valid);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ success: false, error: 'Authentication required' });
    expect(colony.requests).toEqual([]);
  });

  it('every validation message of the spec, in its order; each refusal is audited and nothing is forwarded', async () => {
    const { userId, cookie } = await web.signIn();
    const cases: [Record<string, unknown>, string][] = [
      [{ agentId: undefined }, 'agentId required'],
      [{ agentId: '' }, 'agentId required'],
      [{ agentId: 7 }, 'agentId required'],
      [{ agentId: undefined, amount: -1, recipient: 'bad' }, 'agentId required'],
      [{ amount: undefined }, 'Invalid amount'],
      [{ amount: 0 }, 'Invalid amount'],
      [{ amount: -0.01 }, 'Invalid amount'],
      [{ amount: -100 }, 'Invalid amount'],
      [{ amount: '5' }, 'Invalid amount'],
      [{ amount: null }, 'Invalid amount'],
      [{ amount: true }, 'Invalid amount'],
      [{ amount: [5] }, 'Invalid amount'],
      [{ amount: { value: 5 } }, 'Invalid amount'],
      [{ amount: 0, recipient: 'bad' }, 'Invalid amount'],
      [{ amount: 100.01 }, OVER_LIMIT],
      [{ amount: 1000, recipient: undefined }, OVER_LIMIT],
      [{ recipient: undefined }, 'Recipient required'],
      [{ recipient: '' }, 'Recipient required'],
      [{ recipient: 42 }, 'Recipient required'],
      [{ recipient: `0x${'a'.repeat(39)}` }, 'Invalid recipient address'],
      [{ recipient: `0x${'a'.repeat(41)}` }, 'Invalid recipient address'],
      [{ recipient: `0x${'z'.repeat(40)}` }, 'Invalid recipient address'],
      [{ recipient: `${'2'.repeat(39)}0` }, 'Invalid recipient address'],
      [{ recipient: `${'2'.repeat(39)}O` }, 'Invalid recipient address'],
      [{ recipient: `${'2'.repeat(39)}I` }, 'Invalid recipient address'],
      [{ recipient: `${'2'.repeat(39)}l` }, 'Invalid recipient address'],
      [{ recipient: '2'.repeat(31) }, 'Invalid recipient address'],
      [{ recipient: '2'.repeat(45) }, 'Invalid recipient address'],
      [{ currency: 5 }, 'Invalid currency'],
      [{ currency: '' }, 'Invalid currency'],
      [{ method: ['x'] }, 'Invalid method'],
      [{ endpoint: { path: '/x' } }, 'Invalid endpoint'],
    ];
    for (const [change, error] of cases) {
      const res = await post(web, { ...valid, ...change }, cookie);
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect(res.body, JSON.stringify(change)).toEqual({ success: false, error });
    }
    expect(colony.requests).toEqual([]);
    const rows = await auditRows(web, userId);
    expect(rows).toHaveLength(cases.length);
    expect(rows.map((r) => [r.action, r.metadata.outcome, r.metadata.reason])).toEqual(
      cases.map(([, error]) => ['x402.pay', 'refused', error]),
    );
  });

  it('1e400 (Infinity) is above the limit', async () => {
    const { cookie } = await web.signIn();
    const res = await request(`${web.url}/api/x402`, {
      body: `{"action":"pay","agentId":"nova","amount":1e400,"recipient":"${EVM}"}`,
      headers: { 'content-type': 'application/json', cookie },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: OVER_LIMIT });
  });

  it('accepts the limits and both recipient formats, forwarding currency USDC and method default', async () => {
    const { userId, cookie } = await web.signIn();
    for (const [amount, recipient] of [
      [100, EVM],
      [0.01, SOLANA_44],
      [5, SOLANA_32],
    ] as const) {
      colony.requests.length = 0;
      const res = await post(web, { ...valid, amount, recipient }, cookie);
      expect(res.status, `${amount} ${recipient}`).toBe(200);
      expect(res.body).toEqual({
        success: true,
        status: 'settled',
        paymentId: expect.stringMatching(/^pay_/),
        agentId: 'nova',
        amount,
        currency: 'USDC',
        recipient,
        method: 'default',
        endpoint: null,
        txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      });
      expect(colony.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /gateway/pay']);
      expect(colony.requests[0]?.body).toEqual({ agentId: 'nova', amount, currency: 'USDC', recipient, method: 'default', userId });
    }
  });

  it('forwards currency as is, method and endpoint as given', async () => {
    const { cookie } = await web.signIn();
    const ok = await post(web, { ...valid, currency: 'ETH', method: 'x402', endpoint: '/gateway/colony/join' }, cookie);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ currency: 'ETH', method: 'x402', endpoint: '/gateway/colony/join' });
    // Not upper-cased: the upstream sees exactly what was sent, and its refusal comes back in the x402 shape.
    colony.requests.length = 0;
    const lower = await post(web, { ...valid, currency: 'usdc' }, cookie);
    expect(colony.requests[0]?.body).toMatchObject({ currency: 'usdc' });
    expect(lower.status).toBe(400);
    expect(lower.body).toEqual({ success: false, error: 'Unsupported currency: usdc' });
  });

  it('an upstream 402 comes back as 402 with its challenge and success: false', async () => {
    const { cookie } = await web.signIn();
    colony.behaviour = { failWith: 402 };
    const res = await post(web, valid, cookie);
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({
      success: false,
      error: 'Payment required to join this colony',
      x402Version: 1,
      accepts: [expect.objectContaining({ scheme: 'exact', maxAmountRequired: '10000' })],
    });
  });

  it('500 x402 gateway error when the upstream fails, answers HTML, is slow or cannot be reached', async () => {
    const { cookie } = await web.signIn();
    const answers = [];
    for (const behaviour of [{ failWith: 500 }, { nonJson: true }, { down: true }, { delayMs: OTHER_TIMEOUT_MS + 600 }]) {
      colony.behaviour = behaviour;
      answers.push(await post(web, valid, cookie));
    }
    for (const target of [downWeb, bareWeb]) {
      const session = await target.signIn();
      answers.push(await post(target, valid, session.cookie));
    }
    for (const res of answers) {
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ success: false, error: 'x402 gateway error' });
    }
  });

  it('audits each attempt with email, amount, currency, recipient and method, then the upstream verdict', async () => {
    const { userId, cookie } = await web.signIn({ email: 'payer@example.com' });
    await post(web, { ...valid, amount: 2, recipient: SOLANA_44, method: 'x402', endpoint: '/gateway/pay' }, cookie);
    await post(web, { ...valid, amount: 3, currency: 'DOGE' }, cookie);
    colony.behaviour = { failWith: 500 };
    await post(web, { ...valid, amount: 4 }, cookie);
    colony.behaviour = {};
    await post(web, { ...valid, amount: 250 }, cookie);

    const rows = await auditRows(web, userId);
    const payment = { email: 'payer@example.com', agentId: 'nova', currency: 'USDC', recipient: EVM, method: 'default', endpoint: null };
    expect(rows.map((r) => [r.action, r.metadata])).toEqual([
      ['x402.pay', { ...payment, amount: 2, recipient: SOLANA_44, method: 'x402', endpoint: '/gateway/pay', outcome: 'forwarded' }],
      [
        'x402.pay.result',
        { ...payment, amount: 2, recipient: SOLANA_44, method: 'x402', endpoint: '/gateway/pay', outcome: 'accepted', upstreamStatus: 200 },
      ],
      ['x402.pay', { ...payment, amount: 3, currency: 'DOGE', outcome: 'forwarded' }],
      ['x402.pay.result', { ...payment, amount: 3, currency: 'DOGE', outcome: 'rejected', upstreamStatus: 400 }],
      ['x402.pay', { ...payment, amount: 4, outcome: 'forwarded' }],
      ['x402.pay.result', { ...payment, amount: 4, outcome: 'failed', upstreamStatus: 500 }],
      ['x402.pay', { ...payment, amount: 250, currency: null, method: null, outcome: 'refused', reason: OVER_LIMIT }],
    ]);
    for (const row of rows) {
      expect(row.user_id).toBe(userId);
      expect(row.target).toBe('nova');
      expect(row.ip).toBe('127.0.0.1');
      // The session cookie never lands in the audit log.
      expect(JSON.stringify(row)).not.toContain(cookie.split('=')[1]);
    }
  });

  it('no payment without its audit row: a failed audit write is 500 and nothing is forwarded', async () => {
    const { userId, cookie } = await web.signIn();
    const { kysely } = web.database.db;
    await kysely.schema
      .alterTable('audit_log')
      .addCheckConstraint('x402_test_fail', sql`user_id is distinct from ${sql.lit(userId)}`)
      .execute();
    try {
      const res = await post(web, valid, cookie);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ success: false, error: 'x402 gateway error' });
      expect(colony.requests).toEqual([]);
    } finally {
      await kysely.schema.alterTable('audit_log').dropConstraint('x402_test_fail').execute();
    }
    expect((await post(web, valid, cookie)).status).toBe(200);
  });
});
