import { DomainError } from '@aop/core';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';
import { platformKeyCheck } from './provisioning.service.js';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof DomainError ? [err.code, err.message] : err;
  }
  return 'accepted';
};

// Issue #19: an agent with no model key fails every chat, so "Platform default" needs a platform key for agents and a
// named provider needs the owner's key.
describe('the agent model key at provisioning', () => {
  it('"platform" stands for the first provider the platform has a key for, and is refused when it has none', () => {
    expect(platformKeyCheck('platform', undefined, ['openai', 'groq'])).toBe('openai');
    expect(refusal(() => platformKeyCheck('platform', undefined, []))).toEqual([
      'PLATFORM_AI_KEY_MISSING',
      'This platform has no AI provider key for agents: choose an AI provider and give your own API key',
    ]);
    // Bringing a key does not make "platform" mean anything else.
    expect(refusal(() => platformKeyCheck('platform', 'sk-own', []))).toEqual(['PLATFORM_AI_KEY_MISSING', expect.any(String)]);
  });

  it('a named provider needs the owner’s key unless the platform has one for it', () => {
    expect(platformKeyCheck('openai', 'sk-own', [])).toBe('openai');
    expect(platformKeyCheck('openai', undefined, ['openai'])).toBe('openai');
    expect(refusal(() => platformKeyCheck('anthropic', undefined, ['openai']))).toEqual([
      'AI_PROVIDER_KEY_REQUIRED',
      'An API key for anthropic is required: this platform has no anthropic key for agents',
    ]);
    // Not naming a provider keeps the spec's default; a fallback-only provider is still refused first.
    expect(platformKeyCheck(undefined, undefined, [])).toBeUndefined();
    expect(refusal(() => platformKeyCheck('deepinfra', undefined, []))).toEqual(['AI_PROVIDER_NOT_SELECTABLE', expect.any(String)]);
  });

  describe('POST /api/provision on a platform with no key for agents', () => {
    let web: TestWeb;
    let admin: { cookie: string };
    beforeAll(async () => {
      web = await startWeb();
      admin = await web.signIn({ isAdmin: true });
    });
    afterAll(async () => {
      await web?.close();
    });
    const provision = (json: Record<string, unknown>) => request(`${web.url}/api/provision`, { json, headers: { cookie: admin.cookie } });

    it('400 in words for "platform", and for a provider without a key; no agent record is made', async () => {
      const platform = await provision({ autoProvision: true, aiProvider: 'platform' });
      expect([platform.status, platform.body]).toEqual([
        400,
        { error: 'This platform has no AI provider key for agents: choose an AI provider and give your own API key' },
      ]);
      const keyless = await provision({ autoProvision: true, aiProvider: 'openai', apiKey: '  ' });
      expect([keyless.status, keyless.body]).toEqual([
        400,
        { error: 'An API key for openai is required: this platform has no openai key for agents' },
      ]);
      const rows = await web.database.db.kysely.selectFrom('agents').select('id').execute();
      expect(rows).toEqual([]);
    });
  });
});
