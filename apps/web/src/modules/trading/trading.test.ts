import { decryptSecret, loggerOptions, newId, parseEncryptionKey } from '@aop/core';
import {
  type FakeTradingApi,
  type TestDatabase,
  type TestResponse,
  createTestDatabase,
  listen,
  request,
  startFakeTradingApi,
  tempDataDir,
  testCounters,
  testEnv,
  unreachableUrl,
} from '@aop/testing';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { type WebConfig, loadWebConfig } from '../../config.js';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { SESSION_COOKIE, createSession } from '../../platform/sessions.js';
import { NO_KEY_MESSAGE, UNREADABLE_KEY_MESSAGE } from './trading.service.js';

// Spec §4.13 trading service, §8 trading key max 512.

const PLATFORM_KEY = `platform-${newId('apiKey')}`;
const PERSONAL_KEY = `personal-${newId('apiKey')}`;
const OTHER_PERSONAL_KEY = `personal2-${newId('apiKey')}`;
const UNKNOWN_KEY = `unknown-${newId('apiKey')}`;
const ALL_KEYS = [PLATFORM_KEY, PERSONAL_KEY, OTHER_PERSONAL_KEY, UNKNOWN_KEY];

interface Web {
  url: string;
  config: WebConfig;
  database: TestDatabase;
  /** Every log line the service wrote, at trace level. */
  logs: string[];
  signIn(): Promise<{ userId: string; cookie: string }>;
  close(): Promise<void>;
}

/** A real web service whose pino logger writes into an array, so the tests can read every line. */
async function startLoggedWeb(env: Record<string, string>): Promise<Web> {
  const data = tempDataDir();
  const config = loadWebConfig(testEnv(data.dir, env));
  const database = await createTestDatabase();
  const counters = testCounters();
  const logs: string[] = [];
  const logger = pino(loggerOptions('trace'), { write: (line: string) => void logs.push(line) });
  const app = await buildApp({ config, db: database.db, counters, logger });
  const running = await listen(app);
  return {
    url: running.url,
    config,
    database,
    logs,
    async signIn() {
      const userId = newId('user');
      await database.db.kysely
        .insertInto('users')
        .values({ id: userId, email: `${userId}@example.com`, name: 'Trader' })
        .execute();
      const { token } = await createSession(database.db.kysely, userId);
      return { userId, cookie: `${SESSION_COOKIE}=${token}` };
    },
    async close() {
      await running.close();
      await counters.close();
      await database.close();
      data.remove();
    },
  };
}

/** Every answer any test got, to prove no key ever came back. */
const answers: TestResponse[] = [];
async function call(url: string, options: Parameters<typeof request>[1] = {}): Promise<TestResponse> {
  const res = await request(url, options);
  answers.push(res);
  return res;
}

const expectError = (res: TestResponse, status: number, body: Record<string, unknown>) => {
  expect(res.status).toBe(status);
  expect(res.body).toEqual(body);
};

describe('trading', () => {
  let fake: FakeTradingApi;
  let web: Web;
  let keyless: Web;
  let offline: Web;

  beforeAll(async () => {
    fake = await startFakeTradingApi({ keys: [PLATFORM_KEY, PERSONAL_KEY, OTHER_PERSONAL_KEY] });
    [web, keyless, offline] = await Promise.all([
      startLoggedWeb({ TRADING_API_URL: fake.url, TRADING_API_KEY: PLATFORM_KEY, TRADING_TIMEOUT_MS: '1000' }),
      startLoggedWeb({ TRADING_API_URL: fake.url }),
      startLoggedWeb({ TRADING_API_URL: await unreachableUrl(), TRADING_API_KEY: PLATFORM_KEY }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([web?.close(), keyless?.close(), offline?.close()]);
    await fake?.close();
  });
  beforeEach(() => {
    fake.behaviour = {};
  });

  const keyUrl = (w: Web = web) => `${w.url}/api/user/trading-key`;
  const saveKey = (cookie: string, json: unknown, w: Web = web) => call(keyUrl(w), { method: 'POST', headers: { cookie }, json });
  const configured = async (cookie: string, w: Web = web) => (await call(keyUrl(w), { headers: { cookie } })).body;
  const lastUpstream = () => fake.requests.at(-1)!;

  describe('authentication', () => {
    const endpoints: [string, string, unknown?][] = [
      ['GET', '/api/user/trading-key'],
      ['POST', '/api/user/trading-key', { apiKey: 'x' }],
      ['DELETE', '/api/user/trading-key'],
      ['GET', '/api/trading/balances'],
      ['POST', '/api/trading/prompt', { prompt: 'hi' }],
      ['GET', '/api/trading/prompt?jobId=job_1'],
    ];

    it('401 { error: Unauthorized } without a session, and nothing reaches upstream', async () => {
      const before = fake.requests.length;
      for (const [method, path, json] of endpoints) {
        expectError(await call(`${web.url}${path}`, { method, ...(json ? { json } : {}) }), 401, { error: 'Unauthorized' });
        expectError(
          await call(`${web.url}${path}`, {
            method,
            headers: { cookie: `${SESSION_COOKIE}=${'f'.repeat(64)}` },
            ...(json ? { json } : {}),
          }),
          401,
          {
            error: 'Unauthorized',
          },
        );
      }
      expect(fake.requests.length).toBe(before);
    });

    it('401 without a session before any field is checked; a body that is not a JSON object is still 400', async () => {
      for (const [path, json, message] of [
        ['/api/user/trading-key', { apiKey: 42 }, 'apiKey is required'],
        ['/api/trading/prompt', { prompt: 7, threadId: 1 }, 'prompt is required'],
      ] as const) {
        expectError(await call(`${web.url}${path}`, { method: 'POST', json: {} }), 401, { error: 'Unauthorized' });
        expectError(await call(`${web.url}${path}`, { method: 'POST', json }), 401, { error: 'Unauthorized' });
        expectError(await call(`${web.url}${path}`, { method: 'POST', json: [json] }), 400, { error: message });
      }
    });

    it('403 for a user API key: trading needs a signed-in session', async () => {
      const { userId } = await web.signIn();
      const { key } = await web.database.db.withUser(userId, (trx) => createApiKey(trx, userId, 'automation'));
      for (const [method, path, json] of endpoints) {
        expectError(
          await call(`${web.url}${path}`, { method, headers: { authorization: `Bearer ${key}` }, ...(json ? { json } : {}) }),
          403,
          {
            error: 'This action needs a signed-in session, not an API key',
          },
        );
      }
    });
  });

  describe('personal key storage', () => {
    it('400 for a missing, empty, non-string or over-long apiKey; 512 characters are accepted', async () => {
      const { cookie } = await web.signIn();
      expectError(await call(keyUrl(), { method: 'POST', headers: { cookie } }), 400, { error: 'apiKey is required' });
      expectError(await call(keyUrl(), { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{oops' }), 400, {
        error: 'apiKey is required',
      });
      for (const json of [{}, { apiKey: '' }, { apiKey: '   ' }, { apiKey: 42 }, { apiKey: null }, { apiKey: ['k'] }]) {
        expectError(await saveKey(cookie, json), 400, { error: 'apiKey is required' });
      }
      expectError(await saveKey(cookie, { apiKey: 'k'.repeat(513) }), 400, { error: 'apiKey must be at most 512 characters' });
      expect(await configured(cookie)).toEqual({ configured: false });

      const res = await saveKey(cookie, { apiKey: 'k'.repeat(512) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expect(await configured(cookie)).toEqual({ configured: true });
    });

    it('stores the key sealed with AES-256-GCM bound to the user id, and replaces it on a second save', async () => {
      const { userId, cookie } = await web.signIn();
      expect(await configured(cookie)).toEqual({ configured: false });
      expect((await saveKey(cookie, { apiKey: OTHER_PERSONAL_KEY })).body).toEqual({ success: true });
      expect((await saveKey(cookie, { apiKey: `  ${PERSONAL_KEY}  ` })).body).toEqual({ success: true });
      expect(await configured(cookie)).toEqual({ configured: true });

      const rows = await web.database.db.kysely.selectFrom('trading_keys').selectAll().where('user_id', '=', userId).execute();
      expect(rows).toHaveLength(1);
      const sealed = rows[0]!.key_enc;
      expect(sealed).not.toContain(PERSONAL_KEY);
      expect(sealed).toMatch(/^v1\./);
      const key = parseEncryptionKey(web.config.encryptionKey);
      expect(decryptSecret(key, sealed, userId)).toBe(PERSONAL_KEY);
      // Bound to its owner: moved to another user's row it does not open.
      expect(() => decryptSecret(key, sealed, newId('user'))).toThrow();

      const res = await call(`${web.url}/api/trading/balances`, { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(lastUpstream().apiKey).toBe(PERSONAL_KEY);
    });

    it('DELETE removes the key ({ success: true } even when there is none); later calls use the platform key', async () => {
      const { cookie } = await web.signIn();
      await saveKey(cookie, { apiKey: PERSONAL_KEY });
      await call(`${web.url}/api/trading/balances`, { headers: { cookie } });
      expect(lastUpstream().apiKey).toBe(PERSONAL_KEY);

      const res = await call(keyUrl(), { method: 'DELETE', headers: { cookie } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expect(await configured(cookie)).toEqual({ configured: false });
      expect((await call(keyUrl(), { method: 'DELETE', headers: { cookie } })).body).toEqual({ success: true });

      expect((await call(`${web.url}/api/trading/balances`, { headers: { cookie } })).status).toBe(200);
      expect(lastUpstream().apiKey).toBe(PLATFORM_KEY);
    });

    it('isolation: another user neither sees, uses nor deletes the key', async () => {
      const a = await web.signIn();
      const b = await web.signIn();
      await saveKey(a.cookie, { apiKey: PERSONAL_KEY });
      expect(await configured(b.cookie)).toEqual({ configured: false });

      await call(`${web.url}/api/trading/balances`, { headers: { cookie: b.cookie } });
      expect(lastUpstream().apiKey).toBe(PLATFORM_KEY);

      expect((await call(keyUrl(), { method: 'DELETE', headers: { cookie: b.cookie } })).body).toEqual({ success: true });
      expect(await configured(a.cookie)).toEqual({ configured: true });
      await call(`${web.url}/api/trading/balances`, { headers: { cookie: a.cookie } });
      expect(lastUpstream().apiKey).toBe(PERSONAL_KEY);

      // B saving a key of its own leaves A's in place.
      await saveKey(b.cookie, { apiKey: OTHER_PERSONAL_KEY });
      await call(`${web.url}/api/trading/balances`, { headers: { cookie: a.cookie } });
      expect(lastUpstream().apiKey).toBe(PERSONAL_KEY);
      await call(`${web.url}/api/trading/balances`, { headers: { cookie: b.cookie } });
      expect(lastUpstream().apiKey).toBe(OTHER_PERSONAL_KEY);
    });
  });

  describe('GET /api/trading/balances', () => {
    it('asks for the default chains with X-API-Key and passes the answer through', async () => {
      const { cookie } = await web.signIn();
      const res = await call(`${web.url}/api/trading/balances`, { headers: { cookie } });
      expect(res.status).toBe(200);
      const upstream = lastUpstream();
      expect(upstream).toMatchObject({ method: 'GET', path: '/agent/balances', query: { chains: 'base,polygon,mainnet,solana,unichain' } });
      expect(upstream.headers['x-api-key']).toBe(PLATFORM_KEY);
      expect(Object.keys(res.body.balances)).toEqual(['base', 'polygon', 'mainnet', 'solana', 'unichain']);
      expect(res.body).toMatchObject({ success: true, evmAddress: expect.stringMatching(/^0x[0-9a-f]{40}$/) });
    });

    it('forwards the chains asked for, and an upstream error with its own status and body', async () => {
      const { cookie } = await web.signIn();
      const res = await call(`${web.url}/api/trading/balances?chains=base,solana`, { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(lastUpstream().query).toEqual({ chains: 'base,solana' });
      expect(Object.keys(res.body.balances)).toEqual(['base', 'solana']);

      const bad = await call(`${web.url}/api/trading/balances?chains=base,dogechain`, { headers: { cookie } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ success: false, error: 'Unsupported chain: dogechain' });
    });

    it("passes the upstream's 401 through when the personal key is refused", async () => {
      const { cookie } = await web.signIn();
      await saveKey(cookie, { apiKey: UNKNOWN_KEY });
      const res = await call(`${web.url}/api/trading/balances`, { headers: { cookie } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
      expect(lastUpstream().apiKey).toBe(UNKNOWN_KEY);
    });
  });

  describe('prompts and jobs', () => {
    it('400 prompt is required, without calling upstream', async () => {
      const { cookie } = await web.signIn();
      const before = fake.requests.length;
      const url = `${web.url}/api/trading/prompt`;
      expectError(await call(url, { method: 'POST', headers: { cookie } }), 400, { error: 'prompt is required' });
      for (const json of [{}, { prompt: '' }, { prompt: '  ' }, { prompt: 7 }, { threadId: 't' }]) {
        expectError(await call(url, { method: 'POST', headers: { cookie }, json }), 400, { error: 'prompt is required' });
      }
      expectError(await call(url, { method: 'POST', headers: { cookie }, json: { prompt: 'buy', threadId: { a: 1 } } }), 400, {
        error: 'threadId must be a string',
      });
      // The prompt is checked before the thread, a blank one included.
      expectError(await call(url, { method: 'POST', headers: { cookie }, json: { prompt: ' ', threadId: 5 } }), 400, {
        error: 'prompt is required',
      });
      for (const threadId of [5, false, ['t']]) {
        expectError(await call(url, { method: 'POST', headers: { cookie }, json: { prompt: 'buy', threadId } }), 400, {
          error: 'threadId must be a string',
        });
      }
      expectError(await call(url, { headers: { cookie } }), 400, { error: 'jobId is required' });
      expectError(await call(`${url}?jobId=`, { headers: { cookie } }), 400, { error: 'jobId is required' });
      expect(fake.requests.length).toBe(before);
    });

    it('submits a prompt (202 passed through) and polls its job until it completes', async () => {
      const { cookie } = await web.signIn();
      const submitted = await call(`${web.url}/api/trading/prompt`, {
        method: 'POST',
        headers: { cookie },
        json: { prompt: 'What is my ETH balance?' },
      });
      expect(submitted.status).toBe(202);
      expect(submitted.body).toMatchObject({ success: true, status: 'pending', jobId: expect.any(String), threadId: expect.any(String) });
      const upstream = lastUpstream();
      expect(upstream).toMatchObject({ method: 'POST', path: '/agent/prompt', apiKey: PLATFORM_KEY });
      expect(upstream.body).toEqual({ prompt: 'What is my ETH balance?' });
      expect(upstream.headers['content-type']).toBe('application/json');

      const jobUrl = `${web.url}/api/trading/prompt?jobId=${submitted.body.jobId}`;
      const first = await call(jobUrl, { headers: { cookie } });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ jobId: submitted.body.jobId, status: 'processing' });
      expect(lastUpstream()).toMatchObject({ method: 'GET', path: `/agent/job/${submitted.body.jobId}` });
      const second = await call(jobUrl, { headers: { cookie } });
      expect(second.body).toMatchObject({ status: 'completed', response: 'Done: What is my ETH balance?' });
    });

    it('sends threadId when given, and encodes the job id into the path', async () => {
      const { cookie } = await web.signIn();
      const res = await call(`${web.url}/api/trading/prompt`, {
        method: 'POST',
        headers: { cookie },
        json: { prompt: 'and SOL?', threadId: 'thr_42' },
      });
      expect(res.status).toBe(202);
      expect(res.body.threadId).toBe('thr_42');
      expect(lastUpstream().body).toEqual({ prompt: 'and SOL?', threadId: 'thr_42' });
      for (const threadId of [null, '']) {
        const fresh = await call(`${web.url}/api/trading/prompt`, {
          method: 'POST',
          headers: { cookie },
          json: { prompt: 'and BTC?', threadId },
        });
        expect(fresh.status).toBe(202);
        expect(lastUpstream().body).toEqual({ prompt: 'and BTC?' });
      }

      const odd = await call(`${web.url}/api/trading/prompt?jobId=${encodeURIComponent('a/b?c=d')}`, { headers: { cookie } });
      expect(odd.status).toBe(404);
      expect(odd.body).toEqual({ success: false, error: 'Job not found' });
      expect(lastUpstream().path).toBe('/agent/job/a%2Fb%3Fc%3Dd');
    });

    it("isolation: a job made with one user's key is not found with another's", async () => {
      const a = await web.signIn();
      const b = await web.signIn();
      await saveKey(a.cookie, { apiKey: PERSONAL_KEY });
      const job = await call(`${web.url}/api/trading/prompt`, { method: 'POST', headers: { cookie: a.cookie }, json: { prompt: 'sell' } });
      expect(job.status).toBe(202);
      const res = await call(`${web.url}/api/trading/prompt?jobId=${job.body.jobId}`, { headers: { cookie: b.cookie } });
      expect(res.status).toBe(404);
      expect(lastUpstream().apiKey).toBe(PLATFORM_KEY);
      expect((await call(`${web.url}/api/trading/prompt?jobId=${job.body.jobId}`, { headers: { cookie: a.cookie } })).status).toBe(200);
    });
  });

  describe('failures', () => {
    it('503 needsKey when neither a personal nor a platform key exists; a personal key then works', async () => {
      const { cookie } = await keyless.signIn();
      const expected = { error: NO_KEY_MESSAGE, needsKey: true };
      expect(NO_KEY_MESSAGE).toBe('No trading API key configured. Add your personal key in settings.');
      expectError(await call(`${keyless.url}/api/trading/balances`, { headers: { cookie } }), 503, expected);
      expectError(
        await call(`${keyless.url}/api/trading/prompt`, { method: 'POST', headers: { cookie }, json: { prompt: 'x' } }),
        503,
        expected,
      );
      expectError(await call(`${keyless.url}/api/trading/prompt?jobId=j`, { headers: { cookie } }), 503, expected);

      await saveKey(cookie, { apiKey: PERSONAL_KEY }, keyless);
      const res = await call(`${keyless.url}/api/trading/balances`, { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(lastUpstream().apiKey).toBe(PERSONAL_KEY);

      await call(keyUrl(keyless), { method: 'DELETE', headers: { cookie } });
      expectError(await call(`${keyless.url}/api/trading/balances`, { headers: { cookie } }), 503, expected);
    });

    it('503 needsKey when the stored key cannot be opened (sealed for another user)', async () => {
      const a = await keyless.signIn();
      const b = await keyless.signIn();
      await saveKey(a.cookie, { apiKey: PERSONAL_KEY }, keyless);
      const { key_enc } = await keyless.database.db.kysely
        .selectFrom('trading_keys')
        .select('key_enc')
        .where('user_id', '=', a.userId)
        .executeTakeFirstOrThrow();
      await keyless.database.db.kysely.insertInto('trading_keys').values({ user_id: b.userId, key_enc }).execute();
      expectError(await call(`${keyless.url}/api/trading/balances`, { headers: { cookie: b.cookie } }), 503, {
        error: UNREADABLE_KEY_MESSAGE,
        needsKey: true,
      });
    });

    it('500 after the timeout when upstream is slow', async () => {
      const { cookie } = await web.signIn();
      fake.behaviour = { delayMs: 2500 };
      const started = Date.now();
      const res = await call(`${web.url}/api/trading/balances`, { headers: { cookie } });
      expectError(res, 500, { error: 'Trading service request failed: timed out after 1000 ms' });
      expect(Date.now() - started).toBeLessThan(2400);
    });

    it('500 when upstream answers something other than JSON', async () => {
      const { cookie } = await web.signIn();
      fake.behaviour = { nonJson: true };
      expectError(await call(`${web.url}/api/trading/balances`, { headers: { cookie } }), 500, {
        error: 'Trading service request failed: response was not JSON (HTTP 502)',
      });
      expectError(await call(`${web.url}/api/trading/prompt`, { method: 'POST', headers: { cookie }, json: { prompt: 'x' } }), 500, {
        error: 'Trading service request failed: response was not JSON (HTTP 502)',
      });
    });

    it('500 when upstream is unreachable', async () => {
      const { cookie } = await offline.signIn();
      expectError(await call(`${offline.url}/api/trading/balances`, { headers: { cookie } }), 500, {
        error: 'Trading service request failed: service unreachable (ECONNREFUSED)',
      });
      expectError(await call(`${offline.url}/api/trading/prompt?jobId=j`, { headers: { cookie } }), 500, {
        error: 'Trading service request failed: service unreachable (ECONNREFUSED)',
      });
    });
  });

  // Runs last (vitest keeps declaration order): everything above has been answered and logged.
  describe('secrecy', () => {
    it('no key appears in any answer or any log line', async () => {
      expect(answers.length).toBeGreaterThan(50);
      for (const res of answers) {
        const seen = `${res.text}\n${JSON.stringify([...res.headers.entries()])}`;
        for (const key of ALL_KEYS) expect(seen).not.toContain(key);
      }
      // Upstream did receive them, so the check above looks for strings that exist.
      expect(new Set(fake.requests.map((r) => r.apiKey))).toEqual(new Set([PLATFORM_KEY, PERSONAL_KEY, OTHER_PERSONAL_KEY, UNKNOWN_KEY]));

      const logs = [...web.logs, ...keyless.logs, ...offline.logs];
      expect(logs.some((line) => line.includes('/api/user/trading-key'))).toBe(true);
      expect(logs.some((line) => line.includes('trading request failed'))).toBe(true);
      for (const line of logs) for (const key of ALL_KEYS) expect(line).not.toContain(key);
    });
  });
});
