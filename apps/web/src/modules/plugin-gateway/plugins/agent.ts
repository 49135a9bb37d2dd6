import { DomainError } from '@aop/core';
import { GatewayError, type RestChatOptions, restChat, restChatStream } from '@aop/gateway-client';
import { BackendUnavailableError } from '../../../platform/clients/backend-client.js';
import { checkMessage, checkSessionKey, providerKeyWords, restChatUser } from '../../chat/agent-chat.service.js';
import type { AuthUser } from '../../../platform/sessions.js';
import {
  type GatewayDeps,
  type GatewayTarget,
  GatewayUnavailableError,
  gatewayUnavailableError,
  resolveGateway,
  assertTakesTurns,
  gatewayModel,
} from '../../../platform/clients/user-gateway.js';
import { type GatewayPlugin, type PluginCaller, isAbsent, pluginFailed, pluginUnavailable } from './types.js';

/** Who the backend is told asks for the shared gateway's token when the caller has no account (spec §5 default). */
const ANONYMOUS_CALLER = { id: 'anonymous' };

/**
 * The shared platform gateway for a caller without an account: its token from the backend. No owner tag: such a
 * caller has no conversation to come back to, so each of their turns runs in a session of its own (no OpenAI `user`).
 */
async function anonymousTarget(deps: GatewayDeps, sharedUrl: string): Promise<GatewayTarget> {
  let answer: Awaited<ReturnType<GatewayDeps['backend']['request']>>;
  try {
    answer = await deps.backend.request<{ token?: unknown } | null>('/api/gateway/token', { caller: ANONYMOUS_CALLER });
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw new GatewayUnavailableError('backend-unreachable', 'Backend unreachable');
    throw err;
  }
  const token = (answer.body as { token?: unknown } | null)?.token;
  if (answer.status !== 200 || typeof token !== 'string' || !token)
    throw new GatewayUnavailableError('no-token', 'No gateway token available');
  return {
    kind: 'shared',
    baseUrl: sharedUrl,
    wsUrl: sharedUrl.replace(/^http/, 'ws'),
    token,
    agentId: null,
    agentName: null,
    ownerTag: null,
    openclawAgentId: null,
    stopped: false,
  };
}

/** A failed turn in fixed words; the gateway's own message is logged, never sent. */
function turnFailure(err: unknown): DomainError {
  if (err instanceof GatewayError) {
    if (err.code === 'TIMEOUT') return pluginFailed('agent', 'The agent gateway timed out');
    if (err.code === 'CONNECT_FAILED') return pluginFailed('agent', 'The agent gateway is unreachable');
  }
  return pluginFailed('agent', 'The agent gateway failed');
}

/**
 * `agent` (default plugin): one turn with the caller's agent over OpenClaw's OpenAI-compatible REST endpoint, as
 * `POST /api/chat` does: a signed-in caller reaches their own agent, else the shared platform gateway, in the
 * conversation `sessionKey` (default `main`, owner-tagged so it is theirs alone). A caller without an account reaches
 * the shared gateway when one is configured, one stateless turn each (`sessionKey` is refused: nothing could keep
 * that conversation private). Body: `message` (required), `sessionKey` (optional). Streams.
 */
export function agentPlugin(deps: GatewayDeps, priceUsd: string | null): GatewayPlugin {
  return {
    id: 'agent',
    auth: false,
    streaming: true,
    priceUsd,
    prepare(fields, caller: PluginCaller) {
      const message = checkMessage(fields.message);
      const user: AuthUser | null = caller.user;
      let sessionKey: string | null = null;
      if (user) sessionKey = checkSessionKey(fields.sessionKey);
      else {
        if (!isAbsent(fields.sessionKey)) throw new DomainError('SESSIONKEY_NEEDS_SIGNED_CALLER_SESSION');
        if (!deps.config.gateway.sharedUrl) {
          throw pluginUnavailable('agent', 'No shared agent gateway is configured: sign in and use your own agent');
        }
      }
      const sharedUrl = deps.config.gateway.sharedUrl;

      return async (run) => {
        let target: GatewayTarget;
        try {
          target = user ? await resolveGateway(deps, user) : await anonymousTarget(deps, sharedUrl as string);
        } catch (err) {
          if (err instanceof GatewayUnavailableError) throw gatewayUnavailableError(err);
          throw err;
        }
        try {
          assertTakesTurns(target);
        } catch (err) {
          throw pluginFailed('agent', (err as Error).message);
        }
        const options: RestChatOptions = {
          baseUrl: target.baseUrl,
          token: target.token,
          // Named: a gateway the customer's agents share refuses a turn that names none (issue #20).
          model: gatewayModel(target),
          messages: [{ role: 'user', content: message }],
          timeoutMs: deps.config.gateway.chatTimeoutMs,
          ...(user && sessionKey ? { user: restChatUser(user.id, sessionKey) } : {}),
        };
        let result: Awaited<ReturnType<typeof restChat>>;
        try {
          result = run.onDelta ? await restChatStream(options, run.onDelta, run.signal) : await restChat(options);
        } catch (err) {
          const reason = err instanceof GatewayError ? { code: err.code, reason: err.message } : { reason: String(err) };
          run.log.warn({ ...reason, agentId: target.agentId, gateway: target.kind }, 'gateway plugin agent: turn failed');
          // A missing or refused provider key is said in the chat's words (issue #19), not as a generic failure.
          const keyWords = await providerKeyWords(deps, run.log, user, target, err);
          throw keyWords ? pluginFailed('agent', keyWords) : turnFailure(err);
        }
        const extra: Record<string, unknown> = {};
        if (sessionKey) extra.sessionKey = sessionKey;
        if (target.agentId) extra.agentId = target.agentId;
        if (result.usage) extra.usage = result.usage;
        return { message: result.text, extra };
      };
    },
  };
}
