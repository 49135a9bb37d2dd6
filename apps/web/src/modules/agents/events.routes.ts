import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../platform/http/auth.js';
import type { AgentDoneEvent, AgentStatusEvent } from './agents.schemas.js';
import { findAgentProgress } from './agents.service.js';
import { probeGateway } from '../../platform/clients/gateway-probe.js';

const POLL_MS = 1_000;
const HEARTBEAT_MS = 15_000;
const MAX_STREAM_MS = 10 * 60_000;

interface Snapshot {
  status: string;
  url: string | null;
  live: boolean;
  ready: boolean;
}

/** What the gateway itself says: `/healthz` live, `/readyz` ready (5-second timeout each). */
async function probe(url: string | null): Promise<{ live: boolean; ready: boolean }> {
  if (!url) return { live: false, ready: false };
  const get = async (path: '/healthz' | '/readyz') => {
    const probe = await probeGateway(url, path);
    return (probe.reached && probe.ok && probe.body ? probe.body : {}) as { ok?: boolean; ready?: boolean };
  };
  const [health, ready] = await Promise.all([get('/healthz'), get('/readyz')]);
  return { live: health.ok === true, ready: ready.ready === true };
}

/**
 * `GET /api/agents/:id/events`: server-sent events a person can follow while an
 * agent is provisioned and starts. Each change of the record's status or of the
 * gateway's liveness/readiness is one `status` event; the stream ends with `done`
 * once the gateway is ready or the agent is in `error`, or after ten minutes.
 */
export async function agentEventRoutes(app: App): Promise<void> {
  app.get(
    '/api/agents/:id/events',
    { schema: { tags: ['agents'], params: Type.Object({ id: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const user = await requireUser(request);
      const read = () => findAgentProgress(app.db, user.id, request.params.id);
      if (!(await read())) throw new DomainError('AGENT_NOT_FOUND');

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-request-id': request.id,
      });
      // The payloads are written by hand (no serializer): their types are the schemas the dashboard reads them with.
      function send(event: 'status', data: AgentStatusEvent): void;
      function send(event: 'done', data: AgentDoneEvent): void;
      function send(event: string, data: unknown): void {
        res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      }

      let closed = false;
      request.raw.on('close', () => {
        closed = true;
      });
      const started = Date.now();
      let last = '';
      let beat = Date.now();
      while (!closed && Date.now() - started < MAX_STREAM_MS) {
        const row = await read();
        if (!row) {
          send('done', { status: 'deleted' });
          break;
        }
        const snapshot: Snapshot = { status: row.status, url: row.url, ...(await probe(row.url)) };
        const key = JSON.stringify(snapshot);
        if (key !== last) {
          last = key;
          send('status', { agentId: request.params.id, ...snapshot, at: new Date(app.clock()).toISOString() });
        } else if (Date.now() - beat > HEARTBEAT_MS) {
          res.write(': keep-alive\n\n');
          beat = Date.now();
        }
        if (snapshot.ready || snapshot.status === 'error') {
          send('done', { status: snapshot.status, ready: snapshot.ready });
          break;
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      res.end();
    },
  );
}
