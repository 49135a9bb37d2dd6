import { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import { Transform } from 'node:stream';
import { type App, DomainError, errorResponse, isPublicError } from '@aop/core';
import type { AgentHost } from '@aop/provisioner';
import type { BackendConfig } from '../../config.js';
import { checkInternalKey, isAdminContext, readUserContext } from '../../plugins/auth.js';
import { findAnyDeployment, findDeployment, onHost } from '../../services/agents.js';

/** Spec §4: request bodies are at most 1 MB, proxied ones included. */
const MAX_BODY_BYTES = 1_048_576;
/** Chat completions can think for a while; the gateway's own HTTP timeout is longer than this. */
const UPSTREAM_TIMEOUT_MS = 120_000;
const PREFIX = '/api/runtime/proxy/';

/** Headers that describe one hop, or our own credentials, never forwarded to an agent. */
const DROPPED_REQUEST_HEADERS = new Set([
  'authorization',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'cookie',
  'x-user-id',
  'x-user-email',
  'x-user-role',
  'x-user-ts',
  'x-user-signature',
]);
const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'trailer', 'upgrade', 'set-cookie']);

interface ProxyTarget {
  /** The agent's gateway base URL. */
  url: URL;
  token: string;
}

/**
 * `ALL /api/runtime/proxy/:agentId/*` (spec §4.18 Runtime): HTTP and WebSocket traffic to one agent's gateway.
 * Internal key plus a signed user context that owns the agent (or an administrator's). The caller's credentials stop
 * here; the gateway sees its own token (`Authorization: Bearer <gateway token>`), so the web service can reach an
 * agent without ever holding the token.
 */
export async function runtimeProxyRoutes(app: App, { config, host }: { config: BackendConfig; host: AgentHost }): Promise<void> {
  /** Authenticates the caller and finds the agent's gateway; throws the spec's answers as domain errors. */
  async function resolveTarget(headers: IncomingHttpHeaders, agentId: string): Promise<ProxyTarget> {
    checkInternalKey(headers, config.internalApiKey);
    const ctx = readUserContext(headers, config.userContextSecret, app.clock());
    if (ctx.userId === 'anonymous') throw new DomainError('USER_CONTEXT_REQUIRED');
    // Administrators reach any agent (operators debugging a gateway); everyone else only their own, under RLS.
    const deployment = isAdminContext(ctx, config.adminEmails)
      ? await findAnyDeployment(app.db, agentId)
      : await app.db.withUser(ctx.userId, (trx) => findDeployment(trx, agentId));
    if (!deployment) throw new DomainError('AGENT_NOT_FOUND');
    const [state, spec] = await onHost(() => Promise.all([host.status(agentId), host.spec(agentId)]));
    if (!state.url || state.status !== 'running') throw new DomainError('AGENT_NOT_RUNNING_STATE', { status: state.status });
    return { url: new URL(state.url), token: spec.gatewayToken };
  }

  /** `/api/runtime/proxy/<agentId>/<rest>?q` → the agent id and the gateway URL of `/<rest>?q`. */
  function split(rawUrl: string): { agentId: string; path: string } | null {
    if (!rawUrl.startsWith(PREFIX)) return null;
    const rest = rawUrl.slice(PREFIX.length);
    const slash = rest.search(/[/?]/);
    const agentId = decodeURIComponent(slash === -1 ? rest : rest.slice(0, slash));
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(agentId)) return null;
    const tail = slash === -1 ? '/' : rest.slice(slash);
    return { agentId, path: tail.startsWith('?') ? `/${tail}` : tail };
  }

  function upstreamHeaders(headers: IncomingHttpHeaders, target: ProxyTarget, clientIp: string | undefined): OutgoingHttpHeaders {
    const out: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined && !DROPPED_REQUEST_HEADERS.has(name)) out[name] = value;
    }
    out.host = target.url.host;
    out.authorization = `Bearer ${target.token}`;
    if (clientIp) out['x-forwarded-for'] = clientIp;
    return out;
  }

  const send = (url: URL) => (url.protocol === 'https:' ? httpsRequest : httpRequest);

  // Bodies go through untouched (any content type, streamed), so this scope parses nothing.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    scope.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url: '/runtime/proxy/:agentId/*',
      schema: { tags: ['runtime'], hide: true },
      handler: async (request, reply) => {
        const parts = split(request.raw.url ?? '');
        if (!parts) throw new DomainError('NOT_FOUND');
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > MAX_BODY_BYTES) throw new DomainError('REQUEST_BODY_TOO_LARGE');
        const target = await resolveTarget(request.headers, parts.agentId);
        const url = new URL(parts.path, target.url);

        const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
          const req = send(url)(url, {
            method: request.method,
            headers: upstreamHeaders(request.headers, target, request.ip),
            timeout: UPSTREAM_TIMEOUT_MS,
          });
          req.on('response', resolve);
          req.on('timeout', () => req.destroy(new DomainError('AGENT_GATEWAY_TIMEOUT')));
          req.on('error', (err) => reject(isPublicError(err) ? err : new DomainError('AGENT_GATEWAY_UNREACHABLE')));
          if (request.method === 'GET' || request.method === 'HEAD') req.end();
          else request.raw.pipe(limitBytes(MAX_BODY_BYTES, () => req.destroy(new DomainError('REQUEST_BODY_TOO_LARGE')))).pipe(req);
        });

        reply.code(upstream.statusCode ?? 502);
        for (const [name, value] of Object.entries(upstream.headers)) {
          if (value !== undefined && !DROPPED_RESPONSE_HEADERS.has(name)) reply.header(name, value);
        }
        return reply.send(upstream);
      },
    });
  });

  // WebSocket upgrades never reach Fastify's router: they arrive on the HTTP server's `upgrade` event.
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const parts = split(req.url ?? '');
    if (!parts) {
      refuse(socket, 404, 'Not found');
      return;
    }
    socket.on('error', () => socket.destroy());
    resolveTarget(req.headers, parts.agentId).then(
      (target) => pipeUpgrade(req, socket, head, target, new URL(parts.path, target.url)),
      (err: unknown) => {
        if (isPublicError(err)) refuse(socket, errorResponse(err).status, err.message);
        else {
          app.log.error({ err, agentId: parts.agentId }, 'runtime proxy upgrade failed');
          refuse(socket, 500, 'Internal server error');
        }
      },
    );
  });

  function pipeUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: ProxyTarget, url: URL): void {
    const headers = upstreamHeaders(req.headers, target, req.socket.remoteAddress);
    headers.connection = 'Upgrade';
    headers.upgrade = req.headers.upgrade ?? 'websocket';
    const upstreamReq = send(url)(url, { method: 'GET', headers, timeout: UPSTREAM_TIMEOUT_MS });
    upstreamReq.on('timeout', () => upstreamReq.destroy());
    upstreamReq.on('error', () => refuse(socket, 502, 'Agent gateway unreachable'));
    upstreamReq.on('response', (res) => {
      // The gateway refused the upgrade: relay its answer as-is.
      socket.write(`HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n${rawHeaders(res.headers)}\r\n`);
      res.pipe(socket);
    });
    upstreamReq.on('upgrade', (res, upstream, upstreamHead) => {
      upstreamReq.setTimeout(0);
      socket.write(`HTTP/1.1 101 Switching Protocols\r\n${rawHeaders(res.headers)}\r\n`);
      if (upstreamHead.length) socket.write(upstreamHead);
      if (head.length) upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
      const close = () => {
        upstream.destroy();
        socket.destroy();
      };
      upstream.on('error', close).on('close', close);
      socket.on('error', close).on('close', close);
    });
    upstreamReq.end();
  }
}

function rawHeaders(headers: IncomingHttpHeaders): string {
  let out = '';
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'set-cookie') continue;
    for (const v of Array.isArray(value) ? value : [value]) out += `${name}: ${v}\r\n`;
  }
  return out;
}

/** Answers a refused upgrade with a JSON error, as the HTTP routes would. */
function refuse(socket: Duplex, status: number, error: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error });
  socket.end(
    `HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : 'Error'}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** Passes bytes through until `max`, then calls `onExceeded` (which tears the upstream request down). */
function limitBytes(max: number, onExceeded: () => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > max) {
        onExceeded();
        callback();
        return;
      }
      callback(null, chunk);
    },
  });
}
