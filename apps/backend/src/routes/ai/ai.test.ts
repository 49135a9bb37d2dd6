import { PLAN_NAMES, isPaidPlan, userContextHeaders } from '@aop/core';
import { LLM_PRICES } from '@aop/core/llm-prices';
import { type FakeLlm, type TestResponse, lastUserText, request, startFakeLlm, unreachableUrl } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend, signedCaller } from '../../backend.test-support.js';
import { PAID_PLAN_REQUIRED, SUBSCRIPTION_REQUIRED } from '../../plugins/plan.js';
import { DEFAULT_MODELS } from '../../services/agents.js';
import { AI_MODEL_CATALOG, PROVIDER_IDS } from '../../services/ai.js';

// Spec §4.18 "AI (backend)", §5 internal key + user context + plan middleware, §8 AI rate 30/min,
// not-shown-facts "AI providers" (openrouter default, gemini/google, groq, anthropic, openai).

const KEY = 'internal-key-for-ai-tests-0123';
const HMAC = 'hmac-secret-for-ai-tests-0123';
const OPENROUTER_KEY = 'sk-or-platform-0123456789';
const GROQ_KEY = 'gsk-platform-0123456789';
const ANTHROPIC_KEY = 'sk-ant-platform-0123456789';
const OPENAI_KEY = 'sk-openai-platform-0123456789';
const PLATFORM_KEYS = [OPENROUTER_KEY, GROQ_KEY, ANTHROPIC_KEY, OPENAI_KEY];

let client = 0;
/** A distinct client address per call (TRUST_PROXY=127.0.0.1), so only the rate-limit test meets the 30/min limit. */
const freshIp = () => `203.0.113.${++client % 250}`;

/** Headers the web service sends for a user (spec §5). */
/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);
const PAID = { 'x-user-plan': 'solo', 'x-billing-subscription-id': 'sub_1Pxyz' };

const answers: TestResponse[] = [];

describe('backend AI endpoints', () => {
  let openrouter: FakeLlm;
  let groq: FakeLlm;
  let anthropic: FakeLlm;
  let backend: TestBackend;
  let broken: TestBackend;

  beforeAll(async () => {
    const echo = (name: string) => (body: Record<string, unknown>) => `${name}(${String(body.model)}): ${lastUserText(body)}`;
    [openrouter, groq, anthropic] = await Promise.all([
      startFakeLlm({ apiKey: OPENROUTER_KEY, reply: echo('openrouter') }),
      startFakeLlm({ apiKey: GROQ_KEY, reply: echo('groq') }),
      startFakeLlm({ apiKey: ANTHROPIC_KEY, reply: echo('anthropic') }),
    ]);
    const down = await unreachableUrl();
    [backend, broken] = await Promise.all([
      // gemini has no key; openai has one but is down; anthropic is the fallback-only provider.
      startBackend({
        INTERNAL_API_KEY: KEY,
        HMAC_SECRET: HMAC,
        TRUST_PROXY: '127.0.0.1',
        OPENROUTER_BASE_URL: openrouter.url,
        OPENROUTER_API_KEY: OPENROUTER_KEY,
        GROQ_BASE_URL: groq.url,
        GROQ_API_KEY: GROQ_KEY,
        ANTHROPIC_BASE_URL: anthropic.url,
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        OPENAI_BASE_URL: down,
        OPENAI_API_KEY: OPENAI_KEY,
        AI_FALLBACK_PROVIDER: 'anthropic',
        AI_TIMEOUT_MS: '2000',
      }),
      // Everything configured is down, the fallback (groq) included.
      startBackend({
        INTERNAL_API_KEY: KEY,
        HMAC_SECRET: HMAC,
        TRUST_PROXY: '127.0.0.1',
        OPENAI_BASE_URL: down,
        OPENAI_API_KEY: OPENAI_KEY,
        GROQ_BASE_URL: down,
        GROQ_API_KEY: GROQ_KEY,
        AI_FALLBACK_PROVIDER: 'groq',
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([backend?.close(), broken?.close()]);
    await Promise.all([openrouter?.close(), groq?.close(), anthropic?.close()]);
  });

  async function call(
    method: string,
    path: string,
    options: { user?: string; headers?: Record<string, string>; json?: unknown; on?: TestBackend } = {},
  ): Promise<TestResponse> {
    const res = await request(`${(options.on ?? backend).url}/api/ai${path}`, {
      method,
      headers: { 'x-forwarded-for': freshIp(), ...(options.user ? as(options.user) : {}), ...options.headers },
      ...(options.json === undefined ? {} : { json: options.json }),
    });
    answers.push(res);
    return res;
  }
  const chat = (user: string, json: unknown, headers: Record<string, string> = PAID, on?: TestBackend) =>
    call('POST', '/chat', { user, json, headers, ...(on ? { on } : {}) });
  const hello = { messages: [{ role: 'user', content: 'hello' }] };

  describe('authentication (internal key, then the signed user context)', () => {
    const endpoints: [string, string, unknown?][] = [
      ['GET', '/health'],
      ['GET', '/models'],
      ['GET', '/models/openrouter'],
      ['POST', '/models/select', { provider: 'groq', model: 'llama-3.1-8b-instant' }],
      ['POST', '/chat', hello],
      ['POST', '/estimate-cost', { promptTokens: 10 }],
    ];
    it.each(endpoints)('%s %s: 401 Unauthorized, 403 Forbidden, 401 SIGNATURE_REQUIRED / INVALID_SIGNATURE', async (method, path, json) => {
      const before = openrouter.requests.length;
      const expectError = async (headers: Record<string, string>, status: number, error: string) => {
        const res = await call(method, path, { headers: { ...PAID, ...headers }, json });
        expect(res.status).toBe(status);
        expect(res.body).toEqual({ error });
      };
      await expectError({}, 401, 'Unauthorized');
      await expectError({ authorization: KEY }, 401, 'Unauthorized');
      await expectError({ authorization: `Bearer ${KEY}x` }, 403, 'Forbidden');
      await expectError({ authorization: `Bearer ${KEY}`, 'x-user-id': 'usr_a' }, 401, 'SIGNATURE_REQUIRED');
      await expectError({ ...as('usr_a'), 'x-user-id': 'usr_b' }, 401, 'INVALID_SIGNATURE');
      expect(openrouter.requests.length).toBe(before);
    });
  });

  describe('GET /api/ai/health', () => {
    it('probes each configured provider with its platform key and reports which answer', async () => {
      const res = await call('GET', '/health', { user: 'usr_health' });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('degraded');
      expect(res.body.defaultProvider).toBe('openrouter');
      expect(res.body.fallbackProvider).toBe('anthropic');
      const byName = Object.fromEntries(res.body.providers.map((p: { provider: string }) => [p.provider, p]));
      expect(Object.keys(byName)).toEqual(['openrouter', 'gemini', 'groq', 'anthropic', 'openai']);
      expect(byName.openrouter).toMatchObject({ configured: true, reachable: true, fallbackOnly: false });
      expect(byName.groq).toMatchObject({ configured: true, reachable: true });
      expect(byName.anthropic).toMatchObject({ configured: true, reachable: true, fallbackOnly: true });
      expect(byName.gemini).toEqual({
        provider: 'gemini',
        configured: false,
        fallbackOnly: false,
        reachable: false,
        error: 'not configured',
      });
      expect(byName.openai).toMatchObject({ configured: true, reachable: false, error: expect.stringContaining('ECONNREFUSED') });
      const probe = openrouter.requests.find((r) => r.path === '/v1/models')!;
      expect(probe.headers.authorization).toBe(`Bearer ${OPENROUTER_KEY}`);
      const anthropicProbe = anthropic.requests.find((r) => r.path === '/v1/models')!;
      expect(anthropicProbe.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    });

    it('answers unavailable when no configured provider answers', async () => {
      const res = await call('GET', '/health', { user: 'usr_health', on: broken });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('unavailable');
      expect(res.body.providers.filter((p: { configured: boolean }) => p.configured).map((p: { provider: string }) => p.provider)).toEqual([
        'groq',
        'openai',
      ]);
    });
  });

  describe('GET /api/ai/models and /api/ai/models/:provider', () => {
    it('lists every provider with its models, default, prices, and whether the platform has a key', async () => {
      const res = await call('GET', '/models', { user: 'usr_list' });
      expect(res.status).toBe(200);
      expect(res.body.defaultProvider).toBe('openrouter');
      expect(res.body.fallbackProvider).toBe('anthropic');
      expect(res.body.selected).toEqual({ provider: 'openrouter', model: DEFAULT_MODELS.openrouter, source: 'default' });
      expect(res.body.providers.map((p: { provider: string }) => p.provider)).toEqual([...PROVIDER_IDS]);
      for (const view of res.body.providers) {
        expect(view.defaultModel).toBe(DEFAULT_MODELS[view.provider as keyof typeof DEFAULT_MODELS]);
        expect(view.models.filter((m: { default: boolean }) => m.default).map((m: { id: string }) => m.id)).toEqual([view.defaultModel]);
        for (const model of view.models) expect(model.pricing.inputPerMTok).toBeGreaterThan(0);
      }
      const configured = Object.fromEntries(
        res.body.providers.map((p: { provider: string; configured: boolean }) => [p.provider, p.configured]),
      );
      expect(configured).toEqual({ openrouter: true, gemini: false, groq: true, anthropic: true, openai: true });
    });

    it('every catalog model has a price, and every default model is in its catalog', () => {
      for (const provider of PROVIDER_IDS) {
        for (const model of AI_MODEL_CATALOG[provider]) expect(LLM_PRICES[model.id], model.id).toBeDefined();
        expect(AI_MODEL_CATALOG[provider].map((m) => m.id)).toContain(DEFAULT_MODELS[provider]);
      }
    });

    it('one provider; google is gemini; anything else is 400 Unsupported aiProvider', async () => {
      const groqView = await call('GET', '/models/groq', { user: 'usr_list' });
      expect(groqView.status).toBe(200);
      expect(groqView.body).toMatchObject({
        provider: 'groq',
        configured: true,
        fallbackOnly: false,
        defaultModel: 'llama-3.3-70b-versatile',
      });
      const google = await call('GET', '/models/google', { user: 'usr_list' });
      expect(google.body.provider).toBe('gemini');
      expect(google.body.configured).toBe(false);
      expect((await call('GET', '/models/anthropic', { user: 'usr_list' })).body.fallbackOnly).toBe(true);
      for (const bad of ['mistral', 'OPENAI', 'open%20ai']) {
        const res = await call('GET', `/models/${bad}`, { user: 'usr_list' });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'Unsupported aiProvider' });
      }
    });
  });

  describe('POST /api/ai/models/select', () => {
    it('stores the choice per user; another user keeps the default', async () => {
      const res = await call('POST', '/models/select', { user: 'usr_sel_a', json: { provider: 'groq', model: 'llama-3.1-8b-instant' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, provider: 'groq', model: 'llama-3.1-8b-instant', updatedAt: expect.any(String) });
      expect((await call('GET', '/models', { user: 'usr_sel_a' })).body.selected).toEqual({
        provider: 'groq',
        model: 'llama-3.1-8b-instant',
        source: 'user',
      });
      expect((await call('GET', '/models', { user: 'usr_sel_b' })).body.selected.source).toBe('default');

      // A new choice replaces the old one; `aiProvider` and the `google` alias are accepted.
      await call('POST', '/models/select', { user: 'usr_sel_a', json: { aiProvider: 'google', model: 'gemini-2.5-pro' } });
      expect((await call('GET', '/models', { user: 'usr_sel_a' })).body.selected).toMatchObject({
        provider: 'gemini',
        model: 'gemini-2.5-pro',
      });

      // Row-level security: the row belongs to its user only.
      const db = backend.database.db;
      expect(await db.withUser('usr_sel_b', (trx) => trx.selectFrom('ai_model_selections').selectAll().execute())).toEqual([]);
      const own = await db.withUser('usr_sel_a', (trx) => trx.selectFrom('ai_model_selections').selectAll().execute());
      expect(own.map((r) => [r.user_id, r.provider, r.model])).toEqual([['usr_sel_a', 'gemini', 'gemini-2.5-pro']]);
    });

    it.each([
      [{}, 'provider and model are required'],
      [{ provider: 'groq' }, 'provider and model are required'],
      [{ model: 'gpt-4o' }, 'provider and model are required'],
      [{ provider: 'mistral', model: 'x' }, 'Unsupported aiProvider'],
      [{ provider: 7, model: 'x' }, 'Unsupported aiProvider'],
      [{ provider: 'anthropic', model: 'claude-haiku-4-5' }, 'anthropic is the fallback provider and cannot be chosen'],
      [{ provider: 'openai', model: 'gpt-5-imaginary' }, 'Unsupported model for openai'],
      [{ provider: 'openai', model: 'anthropic/claude-sonnet-4.5' }, 'Unsupported model for openai'],
      [{ provider: 'openai', model: 42 }, 'Unsupported model for openai'],
      // Typed by the body schema: a wrong type answers the field's own message.
      [{ aiProvider: 7, model: 'x' }, 'Unsupported aiProvider'],
      [{ aiProvider: ['groq'], model: 'x' }, 'Unsupported aiProvider'],
    ])('400 for %j', async (json, error) => {
      const res = await call('POST', '/models/select', { user: 'usr_sel_bad', json });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error });
    });

    it('needs a real user: 401 User context required for anonymous', async () => {
      const headers = { authorization: `Bearer ${KEY}`, ...userContextHeaders({}, HMAC) };
      const res = await call('POST', '/models/select', { headers, json: { provider: 'groq', model: 'llama-3.1-8b-instant' } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'User context required' });
    });

    it('an anonymous caller gets 401 before its body is judged', async () => {
      const headers = { authorization: `Bearer ${KEY}`, ...userContextHeaders({}, HMAC) };
      const res = await call('POST', '/models/select', { headers, json: { aiProvider: 7 } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'User context required' });
    });
  });

  describe('POST /api/ai/chat', () => {
    it.each([
      [{}, PAID_PLAN_REQUIRED],
      [{ 'x-billing-subscription-id': 'sub_1' }, PAID_PLAN_REQUIRED],
      [{ 'x-user-plan': 'free', 'x-billing-subscription-id': 'sub_1' }, PAID_PLAN_REQUIRED],
      [{ 'x-user-plan': 'platinum', 'x-billing-subscription-id': 'sub_1' }, PAID_PLAN_REQUIRED],
      [{ 'x-user-plan': 'solo' }, SUBSCRIPTION_REQUIRED],
      [{ 'x-user-plan': 'solo', 'x-billing-subscription-id': '' }, SUBSCRIPTION_REQUIRED],
      [{ 'x-user-plan': 'solo', 'x-billing-subscription-id': 'bad id with spaces' }, SUBSCRIPTION_REQUIRED],
    ])('402 without a paid plan and a subscription (%j)', async (headers, error) => {
      const before = openrouter.chatRequests().length;
      const res = await chat('usr_plan', hello, headers);
      expect(res.status).toBe(402);
      expect(res.body).toEqual({ error });
      expect(openrouter.chatRequests().length).toBe(before);
    });

    it('the plan middleware admits exactly the plan catalogue’s paid tiers, in any case', async () => {
      for (const plan of [...PLAN_NAMES, 'mystery']) {
        const res = await chat('usr_tiers', hello, { 'x-user-plan': plan.toUpperCase(), 'x-billing-subscription-id': 'sub_tiers' });
        if (isPaidPlan(plan)) expect(res.status, plan).toBe(200);
        else expect([res.status, res.body], plan).toEqual([402, { error: PAID_PLAN_REQUIRED }]);
      }
    });

    it('proxies to the default provider and model with the platform key', async () => {
      const res = await chat(
        'usr_chat',
        { messages: [{ role: 'system', content: 'Be brief.' }, ...hello.messages] },
        {
          'x-user-plan': 'Collective',
          'x-billing-subscription-id': 'sub_2',
        },
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^chatcmpl-/),
        provider: 'openrouter',
        model: DEFAULT_MODELS.openrouter,
        message: { role: 'assistant', content: `openrouter(${DEFAULT_MODELS.openrouter}): hello` },
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        // $3 / $15 per million: 10 × 3 + 5 × 15 = 105 micro-dollars.
        costUsd: 0.000105,
        fallback: false,
      });
      const sent = openrouter.chatRequests().at(-1)!;
      expect(sent.headers.authorization).toBe(`Bearer ${OPENROUTER_KEY}`);
      expect(sent.body).toEqual({
        model: DEFAULT_MODELS.openrouter,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hello' },
        ],
        max_tokens: 1024,
        stream: false,
      });
      const rows = await backend.database.db.withUser('usr_chat', (trx) => trx.selectFrom('usage_events').selectAll().execute());
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ user_id: 'usr_chat', kind: 'ai-chat', model: DEFAULT_MODELS.openrouter, total_tokens: 15 });
      expect(Number(rows[0]!.cost_usd)).toBeCloseTo(0.000105, 6);
    });

    it("uses the user's selection, and a provider or model named in the request over it", async () => {
      await call('POST', '/models/select', { user: 'usr_pick', json: { provider: 'groq', model: 'llama-3.1-8b-instant' } });
      const selected = await chat('usr_pick', hello);
      expect(selected.body).toMatchObject({ provider: 'groq', model: 'llama-3.1-8b-instant', fallback: false });
      expect(groq.chatRequests().at(-1)!.headers.authorization).toBe(`Bearer ${GROQ_KEY}`);

      const otherModel = await chat('usr_pick', { ...hello, model: 'llama-3.3-70b-versatile', maxTokens: 200, temperature: 0.2 });
      expect(otherModel.body).toMatchObject({ provider: 'groq', model: 'llama-3.3-70b-versatile' });
      expect(groq.chatRequests().at(-1)!.body).toMatchObject({ max_tokens: 200, temperature: 0.2 });

      const otherProvider = await chat('usr_pick', { ...hello, aiProvider: 'openrouter' });
      expect(otherProvider.body).toMatchObject({ provider: 'openrouter', model: DEFAULT_MODELS.openrouter });

      // Someone else's selection is not theirs.
      expect((await chat('usr_not_pick', hello)).body.provider).toBe('openrouter');
    });

    it('400 Unsupported aiProvider, 400 for the fallback-only provider, 503 for a provider without a key', async () => {
      const unsupported = await chat('usr_c', { ...hello, aiProvider: 'mistral' });
      expect(unsupported.status).toBe(400);
      expect(unsupported.body).toEqual({ error: 'Unsupported aiProvider' });
      const fallbackOnly = await chat('usr_c', { ...hello, aiProvider: 'anthropic' });
      expect(fallbackOnly.status).toBe(400);
      expect(fallbackOnly.body).toEqual({ error: 'anthropic is the fallback provider and cannot be chosen' });
      const unconfigured = await chat('usr_c', { ...hello, aiProvider: 'google' });
      expect(unconfigured.status).toBe(503);
      expect(unconfigured.body).toEqual({ error: 'AI provider gemini is not configured' });
      const badModel = await chat('usr_c', { ...hello, aiProvider: 'groq', model: 'gpt-4o' });
      expect(badModel.status).toBe(400);
      expect(badModel.body).toEqual({ error: 'Unsupported model for groq' });
    });

    it('falls back to the fallback provider when the chosen one fails; 502 when no fallback answers', async () => {
      const res = await chat('usr_fb', { ...hello, aiProvider: 'openai' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ provider: 'anthropic', model: DEFAULT_MODELS.anthropic, fallback: true });
      expect(anthropic.chatRequests().at(-1)!.headers.authorization).toBe(`Bearer ${ANTHROPIC_KEY}`);

      const down = await chat('usr_fb', { ...hello, aiProvider: 'openai' }, PAID, broken);
      expect(down.status).toBe(502);
      expect(down.body).toEqual({ error: 'AI provider request failed' });
    });

    it.each([
      [{}, 'messages must be a non-empty array'],
      [{ messages: [] }, 'messages must be a non-empty array'],
      [{ messages: 'hello' }, 'messages must be a non-empty array'],
      [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role must be one of system, user, assistant'],
      [{ messages: [{ role: 'user', content: 'ok' }, { content: 'x' }] }, 'messages[1].role must be one of system, user, assistant'],
      [{ messages: [{ role: 'user', content: '' }] }, 'messages[0].content must be a non-empty string'],
      [{ messages: [{ role: 'user', content: { text: 'x' } }] }, 'messages[0].content must be a non-empty string'],
      [{ messages: [null] }, 'messages[0].role must be one of system, user, assistant'],
      [{ messages: Array.from({ length: 101 }, () => ({ role: 'user', content: 'x' })) }, 'messages must hold at most 100 entries'],
      [{ ...hello, maxTokens: 0 }, 'maxTokens must be an integer from 1 to 8192'],
      [{ ...hello, maxTokens: 9000 }, 'maxTokens must be an integer from 1 to 8192'],
      [{ ...hello, maxTokens: '100' }, 'maxTokens must be an integer from 1 to 8192'],
      [{ ...hello, temperature: 3 }, 'temperature must be a number from 0 to 2'],
      // Typed by the body schema (JSON is not coerced): a wrong type answers the field's own message.
      [{ messages: null }, 'messages must be a non-empty array'],
      [{ ...hello, maxTokens: 10.5 }, 'maxTokens must be an integer from 1 to 8192'],
      [{ ...hello, temperature: '0.5' }, 'temperature must be a number from 0 to 2'],
      [{ ...hello, aiProvider: 7 }, 'Unsupported aiProvider'],
    ])('400 for a bad body %#', async (json, error) => {
      const before = openrouter.chatRequests().length;
      const res = await chat('usr_bad', json);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error });
      expect(openrouter.chatRequests().length).toBe(before);
    });
  });

  describe('POST /api/ai/estimate-cost', () => {
    const estimate = (json: unknown) => call('POST', '/estimate-cost', { user: 'usr_est', json });

    it('prices token counts with the model price table', async () => {
      const res = await estimate({ model: 'gpt-4o', promptTokens: 1000, completionTokens: 500 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        provider: 'openai',
        model: 'gpt-4o',
        promptTokens: 1000,
        completionTokens: 500,
        tokensEstimated: false,
        pricing: { inputPerMTok: 2.5, outputPerMTok: 10, currency: 'USD' },
        // 1000 × 2.5 + 500 × 10 = 7500 micro-dollars.
        estimatedCostUsd: 0.0075,
      });
    });

    it('estimates prompt tokens from messages or a prompt; completion defaults to the 1024-token answer cap', async () => {
      const fromMessages = await estimate({ provider: 'groq', messages: [{ role: 'user', content: 'x'.repeat(400) }] });
      expect(fromMessages.body).toMatchObject({
        provider: 'groq',
        model: 'llama-3.3-70b-versatile',
        promptTokens: 104,
        completionTokens: 1024,
        tokensEstimated: true,
      });
      expect(fromMessages.body.estimatedCostUsd).toBeCloseTo((104 * 0.59 + 1024 * 0.79) / 1e6, 6);
      const fromPrompt = await estimate({ prompt: 'y'.repeat(40), completionTokens: 0 });
      expect(fromPrompt.body).toMatchObject({
        provider: 'openrouter',
        model: DEFAULT_MODELS.openrouter,
        promptTokens: 14,
        completionTokens: 0,
      });
      // The fallback provider may be priced: estimating spends nothing.
      expect((await estimate({ provider: 'anthropic', promptTokens: 1 })).status).toBe(200);
    });

    it.each([
      [{}, 'messages or promptTokens required'],
      [{ model: 'gpt-4o' }, 'messages or promptTokens required'],
      [{ provider: 'mistral', promptTokens: 1 }, 'Unsupported aiProvider'],
      [{ model: 'gpt-5-imaginary', promptTokens: 1 }, 'Unsupported model'],
      [{ provider: 'openai', model: 'gemini-2.5-pro', promptTokens: 1 }, 'Unsupported model for openai'],
      [{ model: 'gpt-4o', promptTokens: -1 }, `promptTokens must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`],
      [{ model: 'gpt-4o', promptTokens: 1.5 }, `promptTokens must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`],
      [
        { model: 'gpt-4o', promptTokens: 1, completionTokens: 'many' },
        `completionTokens must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`,
      ],
      [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role must be one of system, user, assistant'],
      [{ model: 'gpt-4o', promptTokens: '5' }, `promptTokens must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`],
      [{ aiProvider: false, promptTokens: 1 }, 'Unsupported aiProvider'],
    ])('400 for %j', async (json, error) => {
      const res = await estimate(json);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error });
    });
  });

  it('30 requests a minute per IP on /api/ai/*, then 429 "AI rate limit exceeded."', async () => {
    const ip = { 'x-forwarded-for': '198.18.0.30' };
    const results: TestResponse[] = [];
    for (let i = 0; i < 31; i++) results.push(await call('GET', '/models', { user: 'usr_rl', headers: ip }));
    expect(results.slice(0, 30).every((r) => r.status === 200)).toBe(true);
    expect(results[0]!.headers.get('ratelimit-limit')).toBe('30');
    expect(results[30]!.status).toBe(429);
    expect(results[30]!.body).toEqual({ error: 'AI rate limit exceeded.' });
    // The limit counts before authentication: unauthenticated probing is limited too.
    expect((await call('GET', '/health', { headers: ip })).status).toBe(429);
  });

  it('never answers with a platform key', () => {
    for (const res of answers) for (const key of PLATFORM_KEYS) expect(res.text).not.toContain(key);
  });
});
