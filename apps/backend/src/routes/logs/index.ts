import { type App, DomainError } from '@aop/core';
import type { AgentHost } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { checkedAgentId, deployedAgent, ownedAgent, requireCaller } from '../../services/agent-access.js';
import { onHost } from '../../services/agents.js';
import { LogStreamRegistry, SseWriter } from './streams.js';

export interface LogRoutesOptions {
  config: BackendConfig;
  host: AgentHost;
  /** Tuning, mostly for tests. */
  streams?: { maxPerUser?: number; heartbeatMs?: number; pollMs?: number };
}

export const MAX_STREAMS_PER_USER = 5;
/** For a provider that cannot follow an agent's output. */
const DEFAULT_HISTORY = 200;
/** The local host keeps 1000 lines in memory; other hosts ask their provider for the same tail. */
const MAX_HISTORY = 1_000;
const DEFAULT_STREAM_TAIL = 50;

const AgentParams = Type.Object({ agentId: Type.String({ maxLength: 200 }) });

function tailParam(value: string | undefined, name: string, fallback: number, min: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > MAX_HISTORY) {
    throw new DomainError('PARAMETER_OUT_OF_RANGE', { name, min, max: MAX_HISTORY });
  }
  return Number(value);
}

/**
 * Agent logs (spec §4.18 "Logs", shapes ours): the gateway's recent output (`history`, any provider), a live
 * server-sent-event stream of new lines (`stream`: the host's `followLogs`, on every provider that can follow its
 * agents' output), and the caller's open streams (`active`, `stop`). A user has at most five streams open at once.
 */
export async function logRoutes(app: App, { config, host, streams: tuning = {} }: LogRoutesOptions): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  app.addHook('onRequest', verifyUserContext(config.userContextSecret));

  const registry = new LogStreamRegistry(tuning.maxPerUser ?? MAX_STREAMS_PER_USER);
  // Open streams would keep the server from closing: end them first.
  app.addHook('preClose', async () => registry.stopAll('server shutting down'));

  app.get('/logs/active', { schema: { tags: ['logs'] } }, async (request) => {
    const userId = requireCaller(request.userContext?.userId);
    const streams = registry.listFor(userId).map(({ id, agentId, startedAt, linesSent }) => ({ id, agentId, startedAt, linesSent }));
    return { streams, count: streams.length, maxPerUser: registry.maxPerUser };
  });

  app.get(
    '/logs/:agentId/history',
    { schema: { tags: ['logs'], params: AgentParams, querystring: Type.Object({ limit: Type.Optional(Type.String()) }) } },
    async (request) => {
      const agentId = checkedAgentId(request.params.agentId);
      const limit = tailParam(request.query.limit, 'limit', DEFAULT_HISTORY, 1);
      await deployedAgent(app.db, host, requireCaller(request.userContext?.userId), agentId);
      const lines = await onHost(() => host.logs(agentId, { tail: limit }));
      return { agentId, provider: host.provider, limit, count: lines.length, lines };
    },
  );

  app.get(
    '/logs/:agentId/stream',
    { schema: { tags: ['logs'], params: AgentParams, querystring: Type.Object({ tail: Type.Optional(Type.String()) }) } },
    async (request, reply) => {
      const agentId = checkedAgentId(request.params.agentId);
      const tail = tailParam(request.query.tail, 'tail', DEFAULT_STREAM_TAIL, 0);
      const { userId } = await deployedAgent(app.db, host, requireCaller(request.userContext?.userId), agentId);
      if (!host.followLogs) throw new DomainError('LOG_STREAMING_NOT_AVAILABLE', { provider: host.provider });
      // Checked and registered with no await in between, so parallel requests cannot pass the cap together.
      if (registry.countFor(userId) >= registry.maxPerUser) {
        throw new DomainError('TOO_MANY_LOG_STREAMS', { max: registry.maxPerUser });
      }
      reply.hijack();
      const headers = { ...(reply.getHeaders() as Record<string, string | number | string[]>), 'x-request-id': request.id };
      const writer = new SseWriter(reply.raw, headers, tuning.heartbeatMs === undefined ? {} : { heartbeatMs: tuning.heartbeatMs });
      const stream = registry.add(userId, agentId, (reason) => writer.end(reason));
      writer.onClose(() => registry.remove(stream.id));
      writer.send('ready', { streamId: stream.id, agentId, startedAt: stream.startedAt });
      // The host follows the agent's output (a log file, the engine's or the cluster's log stream, the provider's log
      // query) until the stream closes, whoever closes it: the client, `stop`, or the server shutting down.
      const controller = new AbortController();
      writer.onClose(() => controller.abort());
      const lines = host.followLogs(agentId, {
        tail,
        signal: controller.signal,
        ...(tuning.pollMs === undefined ? {} : { pollMs: tuning.pollMs }),
      });
      void (async () => {
        try {
          for await (const line of lines) {
            writer.send('log', { line });
            stream.linesSent += 1;
          }
          writer.end('ended');
        } catch (err) {
          if (controller.signal.aborted) return;
          request.log.warn({ err }, 'log stream failed');
          writer.end('error');
        }
      })();
    },
  );

  app.post('/logs/:agentId/stop', { schema: { tags: ['logs'], params: AgentParams } }, async (request) => {
    const agentId = checkedAgentId(request.params.agentId);
    const { userId } = await ownedAgent(app.db, undefined, requireCaller(request.userContext?.userId), agentId);
    return { success: true, agentId, stopped: registry.stopFor(userId, agentId, 'stopped') };
  });
}
