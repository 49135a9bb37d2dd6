import { GatewayError } from '@aop/gateway-client';
import { describe, expect, it } from 'vitest';
import { providerKeyError, providerKeyFailureOf } from './agent-chat.service.js';

// Issue #19: a chat that failed on the agent's provider key is said in words. The failures below are the ones the
// pinned OpenClaw (2026.9.6) gave, recorded against a real gateway: its `/v1/chat/completions` answer as `restChat`
// throws it (`HTTP_<status>`, details `{ status, body }`) and its `chat` error event as `chatSend` throws it.
const rest = (status: number, error: { message: string; type: string }) =>
  new GatewayError(`HTTP_${status}`, error.message, { details: { status, body: { error } } });
const socket = (payload: Record<string, unknown>) =>
  new GatewayError('CHAT_ERROR', String(payload.errorMessage), {
    details: { runId: 'r1', sessionKey: 'agent:main:x', state: 'error', ...payload },
  });

const AUTH_TEXT =
  'Authentication failed (provider returned HTTP 401). Your provider token may have expired — try the request again in a moment. If the failure persists, re-authenticate this provider.';

describe('providerKeyFailureOf', () => {
  it('REST: `authentication_error` is the provider key, missing or refused by its words', () => {
    expect(providerKeyFailureOf(rest(401, { message: '401 Incorrect API key provided', type: 'authentication_error' }))).toEqual({
      kind: 'refused',
      provider: null,
    });
    expect(
      providerKeyFailureOf(
        rest(401, { message: 'No route-compatible authentication source is configured for openai.', type: 'authentication_error' }),
      ),
    ).toEqual({ kind: 'missing', provider: 'openai' });
    expect(
      providerKeyFailureOf(
        rest(401, {
          message: 'No API key found for provider "anthropic". Auth store: /x/auth.json. Configure an API key (…)',
          type: 'authentication_error',
        }),
      ),
    ).toEqual({ kind: 'missing', provider: 'anthropic' });
    expect(providerKeyFailureOf(rest(403, { message: '403 Your key was revoked', type: 'permission_error' }))).toEqual({
      kind: 'refused',
      provider: null,
    });
  });

  it('REST, streamed: the `error` event carries the same error object, read the same way', () => {
    // `restChatStream` throws an event's error as STREAM_ERROR with the error object as details.
    const streamed = (error: { message: string; type: string }) => new GatewayError('STREAM_ERROR', error.message, { details: error });
    expect(
      providerKeyFailureOf(
        streamed({ message: 'No route-compatible authentication source is configured for openai.', type: 'authentication_error' }),
      ),
    ).toEqual({ kind: 'missing', provider: 'openai' });
    expect(providerKeyFailureOf(streamed({ message: '401 Incorrect API key provided', type: 'authentication_error' }))).toEqual({
      kind: 'refused',
      provider: null,
    });
    expect(providerKeyFailureOf(streamed({ message: 'internal error', type: 'api_error' }))).toBeNull();
  });

  it('REST: the gateway refusing its own token, a tool refusing the requester and other failures are not the key', () => {
    expect(providerKeyFailureOf(rest(401, { message: 'Unauthorized', type: 'unauthorized' }))).toBeNull();
    expect(providerKeyFailureOf(rest(403, { message: 'Conversation tools require owner access', type: 'permission_error' }))).toBeNull();
    expect(providerKeyFailureOf(rest(500, { message: 'internal error', type: 'api_error' }))).toBeNull();
    expect(
      providerKeyFailureOf(rest(404, { message: 'Unknown model: openai/gpt-4.1-mini. Run …', type: 'invalid_request_error' })),
    ).toBeNull();
    expect(providerKeyFailureOf(new GatewayError('TIMEOUT', 'timed out'))).toBeNull();
    expect(providerKeyFailureOf(new Error('Authentication failed (provider returned HTTP 401)'))).toBeNull();
  });

  it('WebSocket: the error event’s `errorDetail` (failover reason `auth`), the cool-down and the missing-key words', () => {
    expect(
      providerKeyFailureOf(
        socket({
          errorMessage: AUTH_TEXT,
          errorDetail: {
            provider: 'platform',
            model: 'gpt-4.1-mini',
            failoverReason: 'auth',
            providerRuntimeFailureKind: 'auth_invalid_token',
          },
        }),
      ),
    ).toEqual({ kind: 'refused', provider: 'platform' });
    expect(
      providerKeyFailureOf(
        socket({
          errorMessage:
            'Inline API key for provider "platform" is temporarily disabled after a provider auth/billing failure. Retry after about 1 minute, or switch to a different auth profile/API key.',
        }),
      ),
    ).toEqual({ kind: 'refused', provider: 'platform' });
    expect(providerKeyFailureOf(socket({ errorMessage: 'No route-compatible authentication source is configured for openai.' }))).toEqual({
      kind: 'missing',
      provider: 'openai',
    });
    expect(providerKeyFailureOf(socket({ errorMessage: 'model provider failed' }))).toBeNull();
    expect(
      providerKeyFailureOf(socket({ errorMessage: 'x', errorDetail: { provider: 'openai', failoverReason: 'rate_limit' } })),
    ).toBeNull();
  });
});

describe('providerKeyError', () => {
  const applied = { model: 'platform/gpt-4.1-mini', provider: 'openai', source: 'platform' as const };

  it('names the provider the user chose for the one the platform wrote (`platform`), else the one OpenClaw named', () => {
    expect(providerKeyError({ kind: 'refused', provider: 'platform' }, applied)).toMatchObject({
      code: 'AGENT_PROVIDER_KEY_REFUSED',
      message: "The agent's AI provider refused its key (openai): check the key in the agent's configuration",
    });
    expect(providerKeyError({ kind: 'refused', provider: null }, applied).message).toContain('(openai)');
    expect(providerKeyError({ kind: 'missing', provider: 'anthropic' }, applied)).toMatchObject({
      code: 'AGENT_PROVIDER_KEY_MISSING',
      message: "The agent has no key for its AI provider (anthropic): add one in the agent's configuration",
    });
  });

  it('leaves the provider out when nobody named it', () => {
    expect(providerKeyError({ kind: 'refused', provider: null }, { model: null, provider: null, source: 'unknown' }).message).toBe(
      "The agent's AI provider refused its key: check the key in the agent's configuration",
    );
  });
});
