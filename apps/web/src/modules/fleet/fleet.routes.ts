import { type App, DomainError } from '@aop/core';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireSessionUser, requireUser } from '../../platform/http/auth.js';
import { type ProxyMethod, backendPath, endEventStreams, relayEventStream, relayJson } from '../../platform/clients/backend-proxy.js';

/** Who may call a proxied route: any signed-in caller, or only a cookie session (an API key gets 403). */
type Auth = 'user' | 'session';

interface Area {
  method: ProxyMethod;
  /** The same path on the web and on the backend. */
  url: string;
  tag: string;
  summary: string;
  auth?: Auth;
  params?: TObject;
  query?: TObject;
  /**
   * The backend's answer, for the OpenAPI document (the relayed JSON text is sent as it came, never re-serialized
   * through it).
   */
  response?: TSchema;
  /** Longer than the backend client's 15 s for calls the backend itself bounds later (git, the config validator). */
  timeoutMs?: number;
}

const AgentParams = Type.Object({ agentId: Type.String({ maxLength: 200 }) });
const JsonBody = Type.Unknown({ description: 'JSON, passed to the backend as sent; the backend checks each field.' });

/** Workspace git operations time out after 15 s (reads) or 60 s a step (add, commit, push) on the backend. */
const BROWSE_TIMEOUT_MS = 30_000;
const GIT_SYNC_TIMEOUT_MS = 200_000;
/** The validator runs 60 s at most, two at a time: room for one wait in the queue. */
const VALIDATE_TIMEOUT_MS = 130_000;

/**
 * The backend's user areas (spec §4.11 underground, §4.18 installations, metrics, coordination, tool host, logs,
 * workspace browse) are reachable only with the internal key and a signed user context. These routes give a browser
 * (cookie session) or an API-key client the same paths on the web: the caller is the signed-in user, whatever a body
 * or query says. Creating an agent wallet, recording a royalty split, setting where an agent's bus messages are
 * delivered (its signing secret is shown once) and linking a home installation need a cookie session. The
 * agent-to-agent bus (`/api/underground/bus/send`) is not proxied: agents call the backend directly.
 */
const AREAS: Area[] = [
  { method: 'GET', url: '/api/underground/events', tag: 'underground', summary: 'Events of the user’s agents' },
  { method: 'POST', url: '/api/underground/events', tag: 'underground', summary: 'Create an event' },
  { method: 'POST', url: '/api/underground/wallets', tag: 'underground', summary: 'Create an agent’s wallet', auth: 'session' },
  {
    method: 'GET',
    url: '/api/underground/wallets/:address/balance',
    tag: 'underground',
    summary: 'USDC balance of one of the user’s agent wallets',
    params: Type.Object({ address: Type.String({ maxLength: 200 }) }),
  },
  { method: 'POST', url: '/api/underground/splits', tag: 'underground', summary: 'Record a royalty split', auth: 'session' },
  {
    method: 'PUT',
    url: '/api/underground/agents/:agentId/webhook',
    tag: 'underground',
    summary: 'Set the agent’s bus webhook (secret shown once)',
    auth: 'session',
    params: AgentParams,
  },
  {
    method: 'DELETE',
    url: '/api/underground/agents/:agentId/webhook',
    tag: 'underground',
    summary: 'Remove the agent’s bus webhook',
    params: AgentParams,
  },

  ...(['tree', 'read', 'git-status', 'git-diff', 'git-log'] as const).map(
    (what): Area => ({
      method: 'GET',
      url: `/api/browse/${what}`,
      tag: 'browse',
      summary: `Workspace ${what} of one of the user’s agents (\`?agentId=\`)`,
      timeoutMs: BROWSE_TIMEOUT_MS,
    }),
  ),
  { method: 'POST', url: '/api/browse/write', tag: 'browse', summary: 'Write a workspace file', timeoutMs: BROWSE_TIMEOUT_MS },
  {
    method: 'POST',
    url: '/api/browse/git-sync',
    tag: 'browse',
    summary: 'Commit the workspace and push to its upstream',
    timeoutMs: GIT_SYNC_TIMEOUT_MS,
  },

  { method: 'GET', url: '/api/logs/active', tag: 'logs', summary: 'The user’s open log streams' },
  {
    method: 'GET',
    url: '/api/logs/:agentId/history',
    tag: 'logs',
    summary: 'Recent gateway output',
    params: AgentParams,
    query: Type.Object({ limit: Type.Optional(Type.String({ description: 'how many lines, newest last' })) }),
    response: Type.Object({
      agentId: Type.String(),
      provider: Type.String(),
      limit: Type.Integer(),
      count: Type.Integer(),
      lines: Type.Array(Type.Unknown(), { description: 'the gateway’s log lines as its host reports them' }),
    }),
  },
  { method: 'POST', url: '/api/logs/:agentId/stop', tag: 'logs', summary: 'End the user’s log streams of an agent', params: AgentParams },

  { method: 'POST', url: '/api/register-home', tag: 'installations', summary: 'Register a self-hosted home' },
  { method: 'POST', url: '/api/register-link', tag: 'installations', summary: 'Link a registered home', auth: 'session' },
  { method: 'GET', url: '/api/installations', tag: 'installations', summary: 'The user’s installations' },

  { method: 'GET', url: '/api/swarms', tag: 'coordination', summary: 'The user’s swarms' },
  { method: 'POST', url: '/api/swarms', tag: 'coordination', summary: 'Create a swarm' },
  {
    method: 'DELETE',
    url: '/api/swarms/:id',
    tag: 'coordination',
    summary: 'Delete a swarm',
    params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
  },
  { method: 'GET', url: '/api/colony/status', tag: 'coordination', summary: 'The user’s agents as a colony' },

  ...(['health', 'info', 'setup', 'tools', 'examples', 'docs', 'github'] as const).map(
    (what): Area => ({ method: 'GET', url: `/api/tool-host/${what}`, tag: 'tool-host', summary: `Tool host: ${what}` }),
  ),
  {
    method: 'POST',
    url: '/api/tool-host/validate-config',
    tag: 'tool-host',
    summary: 'Validate an agent config with the runtime’s validator',
    timeoutMs: VALIDATE_TIMEOUT_MS,
  },
];

const METRICS = ['historical', 'performance', 'summary'] as const;

export async function backendAreaRoutes(app: App): Promise<void> {
  const caller = (request: FastifyRequest, auth: Auth = 'user') =>
    auth === 'session' ? requireSessionUser(request) : requireUser(request);

  for (const area of AREAS) {
    const hasBody = area.method === 'POST' || area.method === 'PUT';
    app.route({
      method: area.method,
      url: area.url,
      schema: {
        tags: [area.tag],
        summary: area.summary,
        ...(area.params ? { params: area.params } : {}),
        ...(area.query ? { querystring: area.query } : {}),
        ...(area.response ? { response: { 200: area.response } } : {}),
        ...(hasBody ? { body: JsonBody } : {}),
      },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const user = await caller(request, area.auth);
        return relayJson(app.backend, request, reply, {
          method: area.method,
          path: backendPath(area.url, request.params as Record<string, string>),
          user,
          ...(hasBody ? { body: request.body } : {}),
          ...(area.timeoutMs === undefined ? {} : { timeoutMs: area.timeoutMs }),
        });
      },
    });
  }

  // Live gateway output as server-sent events (`ready`, `log`, `end`), relayed unbuffered.
  const streams = new Set<() => void>();
  app.addHook('preClose', async () => endEventStreams(streams));
  app.get(
    '/api/logs/:agentId/stream',
    { schema: { tags: ['logs'], summary: 'Follow the gateway log (text/event-stream; `?tail=`)', params: AgentParams } },
    async (request, reply) => {
      const user = await requireUser(request);
      return relayEventStream(
        app.backend,
        request,
        reply,
        { path: backendPath('/api/logs/:agentId/stream', request.params), user },
        streams,
      );
    },
  );

  // The user's own metrics only: a `:userId` the client names is never taken on trust (administrators excepted; the
  // backend checks those again against its ADMIN_EMAILS).
  for (const what of METRICS) {
    const url = `/api/metrics/:userId/${what}`;
    app.get(
      url,
      {
        schema: {
          tags: ['metrics'],
          summary: `Backend metrics: ${what} (\`?days=\` for historical and performance)`,
          params: Type.Object({ userId: Type.String({ minLength: 1, maxLength: 128 }) }),
        },
      },
      async (request, reply) => {
        const user = await requireUser(request);
        if (request.params.userId !== user.id && !user.isAdmin) throw new DomainError('FORBIDDEN');
        return relayJson(app.backend, request, reply, { method: 'GET', path: backendPath(url, request.params), user });
      },
    );
  }
}
