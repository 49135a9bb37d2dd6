import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// The request bodies of POST /api/chat, /api/gateway/chat and /api/agent as TypeBox schemas: each field answers with the
// spec's message for it, in the order the handlers checked them, and only after authentication. (Chatting itself, with a
// gateway, is test/integration/chat.test.ts' and agent-interaction.test.ts'.)
describe('chat request bodies', () => {
  let web: TestWeb;
  let cookie: string;
  let ip = 0;
  beforeAll(async () => {
    web = await startWeb({ TRUST_PROXY: '127.0.0.1' });
    ({ cookie } = await web.signIn());
  });
  afterAll(async () => {
    await web?.close();
  });

  // Each request from its own address, so the per-client chat budget never bites here.
  const post = (path: string, json: unknown, headers: Record<string, string> = { cookie }) =>
    request(`${web.url}${path}`, { json, headers: { 'x-forwarded-for': `198.18.9.${(++ip % 250) + 1}`, ...headers } });
  const SESSION_KEY = 'Invalid sessionKey: letters, digits, dot, dash and underscore, at most 100 characters';

  it('POST /api/chat and /api/gateway/chat: message, then sessionKey, then agentId', async () => {
    const cases: [string, unknown, string][] = [
      ['/api/chat', { message: 5, sessionKey: 'a:b' }, 'Message required'],
      ['/api/chat', { message: ' \n', agentId: 5 }, 'Message required'],
      ['/api/chat', { message: 'x'.repeat(32_001), sessionKey: 'a:b' }, 'Message too long (max 32000 characters)'],
      // Lengths count UTF-16 units, as String.length: 16,001 emoji are 32,002.
      ['/api/chat', { message: '😀'.repeat(16_001) }, 'Message too long (max 32000 characters)'],
      ['/api/chat', { message: 'hi', sessionKey: 'a:b', agentId: 5 }, SESSION_KEY],
      ['/api/chat', { message: 'hi', sessionKey: 42 }, SESSION_KEY],
      ['/api/chat', { message: 'hi', sessionKey: 'k'.repeat(101) }, SESSION_KEY],
      ['/api/chat', { message: 'hi', agentId: '' }, 'Invalid agentId'],
      ['/api/chat', { message: 'hi', agentId: 'a'.repeat(65) }, 'Invalid agentId'],
      ['/api/chat', { message: 'hi', agentId: ['agt'] }, 'Invalid agentId'],
      ['/api/gateway/chat', { message: null, sessionKey: 5 }, 'Message required'],
      ['/api/gateway/chat', { message: 'hi', sessionKey: '.hidden' }, SESSION_KEY],
    ];
    for (const [path, json, error] of cases) {
      const res = await post(path, json);
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 400, body: { error } });
    }
    // Null or empty is the default session and null no agent: past the body checks (to the gateway, absent here).
    for (const json of [
      { message: 'hi', sessionKey: null, agentId: null },
      { message: 'hi', sessionKey: '' },
    ]) {
      const res = await post('/api/chat', json);
      expect([SESSION_KEY, 'Invalid agentId', 'Message required']).not.toContain(res.body.error);
    }
  });

  it('POST /api/agent: the action first; an action ignores the fields it does not read', async () => {
    const INVALID_ACTION = 'Invalid action. Must be: chat, create-session, update-skill, set-credential';
    for (const json of [{}, { action: 5, message: 5 }, { action: 'Chat' }, { action: null }]) {
      const res = await post('/api/agent', json);
      expect({ json, status: res.status, body: res.body }).toEqual({ json, status: 400, body: { error: INVALID_ACTION } });
    }
    const ignored = await post('/api/agent', { action: 'create-session', agentId: 9, message: 5, value: [] });
    expect(ignored.body).toEqual({ error: 'Invalid agentId' });
    expect((await post('/api/agent', { action: 'chat', message: 5, label: 7 })).body).toEqual({ error: 'Message required' });
  });

  it('401 without a session whatever the body', async () => {
    for (const [path, json] of [
      ['/api/chat', { message: 5 }],
      ['/api/gateway/chat', [1]],
      ['/api/agent', { action: 5 }],
    ] as const) {
      const res = await post(path, json, {});
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 401, body: { error: 'Unauthorized' } });
    }
  });
});
