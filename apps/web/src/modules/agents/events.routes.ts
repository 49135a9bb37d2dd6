import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import { AgentDoneEvent, AgentStatusEvent } from './agents.schemas.js';
import { findAgentProgress } from './agents.service.js';
import { readAgentState } from './lifecycle.service.js';

const POLL_MS = 1_000;
const HEARTBEAT_MS = 15_000;
const MAX_STREAM_MS = 10 * 60_000;

/**
 * `GET /api/agents/:id/events`: server-sent events pushing the agent's state (the one state machine,
 * `@aop/core/agent-state`, issue #19). Each change of its state, the record's status or the gateway's
 * liveness/readiness is one `status` event. Without `follow` (the provisioning wizard) the stream ends with `done` once
 * the agent is live or failed; with `follow=1` (the agent page) it keeps pushing every change, stopped and started
 * again included. Either way it ends after ten minutes (an `EventSource` reconnects by itself).
 */
export async function agentEventRoutes(app: App): Promise<void> {
  app.get(
    '/api/agents/:id/events',
    {
      schema: {
        tags: ['agents'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({
          follow: Type.Optional(Type.Union([Type.Literal('1'), Type.Literal('true')], { description: 'keep the stream open past live' })),
        }),
        // For the document only (the stream is written by hand below): what each event's `data` holds.
        response: {
          200: {
            description: 'Server-sent events: `status` (the agent’s state) at each change, then `done` when the stream ends.',
            content: { 'text/event-stream': { schema: Type.Union([AgentStatusEvent, AgentDoneEvent]) } },
          },
        },
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const follow = request.query.follow !== undefined;
      const deps = { db: app.db, backend: app.backend, clock: app.clock };
      const read = async () => {
        const row = await findAgentProgress(app.db, user.id, request.params.id);
        return row ? { row, view: await readAgentState(deps, user, request.params.id) } : null;
      };
      if (!(await findAgentProgress(app.db, user.id, request.params.id))) throw new DomainError('AGENT_NOT_FOUND');

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-request-id': request.id,
      });
      // The payloads are written by hand (no serializer): their types are the schemas the response above declares.
      function send(event: 'status', data: AgentStatusEvent): void;
      function send(event: 'done', data: AgentDoneEvent): void;
      function send(event: string, data: unknown): void {
        res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      }

      let closed = false;
      request.raw.on('close', () => {
        closed = true;
      });
      // How long the stream has run and since the last keep-alive: durations, on the monotonic clock.
      const started = performance.now();
      let last = '';
      let beat = performance.now();
      while (!closed && performance.now() - started < MAX_STREAM_MS) {
        const now = await read();
        if (!now?.view) {
          send('done', { status: 'deleted' });
          break;
        }
        const { row, view } = now;
        const snapshot = {
          status: row.status,
          url: row.url,
          live: view.live,
          ready: view.ready === true,
          state: view.state,
          reason: view.reason,
          actions: view.actions,
          sharesGatewayWith: view.sharesGatewayWith,
          wakesAt: view.wakesAt,
        };
        const key = JSON.stringify(snapshot);
        if (key !== last) {
          last = key;
          send('status', { agentId: request.params.id, ...snapshot, at: new Date(app.clock()).toISOString() });
        } else if (performance.now() - beat > HEARTBEAT_MS) {
          res.write(': keep-alive\n\n');
          beat = performance.now();
        }
        if (!follow && (view.state === 'live' || view.state === 'failed')) {
          send('done', { status: row.status, ready: snapshot.ready });
          break;
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      res.end();
    },
  );
}
