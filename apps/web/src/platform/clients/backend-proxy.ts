import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { DomainError } from '@aop/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type BackendClient, BackendUnavailableError } from './backend-client.js';
import { type AuthUser, backendCaller } from '../sessions.js';

/**
 * Relaying a browser's call to the same path on the backend for the signed-in user: the user travels only as the
 * signed user context (never as something the client sent), the query string and JSON body as sent, and the
 * backend's status and JSON body come back unchanged. A backend that gives no answer is 502 `Backend unreachable`.
 */

export type ProxyMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface ProxyCall {
  method: ProxyMethod;
  /** The backend path, without a query string (see `backendPath`). */
  path: string;
  user: AuthUser;
  /** JSON to send; `undefined` sends no body. */
  body?: unknown;
  timeoutMs?: number;
}

/**
 * A route's URL pattern with its parameters filled in, each encoded as one path segment. `.` and `..` are refused:
 * URL parsing would resolve them and the call would reach a different backend route than the one proxied.
 */
export function backendPath(pattern: string, params: Record<string, string | undefined>): string {
  return pattern.replace(/:(\w+)/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined || value === '' || value === '.' || value === '..') throw new DomainError('INVALID_PARAMETER', { name });
    return encodeURIComponent(value);
  });
}

/** The query string exactly as the client sent it (`''` or `?…`), so repeated and unknown parameters survive. */
function rawQuery(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at);
}

/**
 * The request id, so one call is traceable across both services (the client's address goes with every backend call:
 * `BackendClient`).
 */
const forwardedHeaders = (request: FastifyRequest): Record<string, string> => ({ 'x-request-id': request.id });

function unreachable(request: FastifyRequest, err: BackendUnavailableError): DomainError {
  request.log.warn({ attempts: err.attempts }, 'backend unreachable');
  return new DomainError('BACKEND_UNREACHABLE');
}

/** Sends `body` as the backend's JSON, byte for byte what it meant (a JSON string stays a JSON string). */
function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  if (body === null || body === undefined) return reply.code(status).send();
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** One JSON call relayed: the backend's status and body, or 502. */
export async function relayJson(backend: BackendClient, request: FastifyRequest, reply: FastifyReply, call: ProxyCall) {
  try {
    const answer = await backend.request(`${call.path}${rawQuery(request)}`, {
      method: call.method,
      caller: backendCaller(call.user),
      headers: forwardedHeaders(request),
      ...(call.body === undefined ? {} : { body: call.body }),
      ...(call.timeoutMs === undefined ? {} : { timeoutMs: call.timeoutMs }),
    });
    return sendJson(reply, answer.status, answer.body);
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw unreachable(request, err);
    throw err;
  }
}

/**
 * A server-sent-event `GET` relayed as a stream: each chunk goes to the browser as it arrives (no buffering here or
 * in a proxy in front, `x-accel-buffering: no`), and the upstream connection is closed as soon as the browser goes
 * away. A JSON answer instead of a stream (the backend refused: 404, 409, 429, 501…) is relayed like any other.
 */
export async function relayEventStream(
  backend: BackendClient,
  request: FastifyRequest,
  reply: FastifyReply,
  call: Omit<ProxyCall, 'method' | 'body'>,
  /** Holds a way to end the stream while it is open, so a shutting-down server can end it (see `endEventStreams`). */
  open: Set<() => void>,
) {
  const res = reply.raw;
  // The browser may leave at any point, even while the backend is still being reached: the upstream call follows.
  const upstream = new AbortController();
  res.once('close', () => upstream.abort());
  let response: Response;
  try {
    ({ response } = await backend.stream(`${call.path}${rawQuery(request)}`, {
      caller: backendCaller(call.user),
      headers: forwardedHeaders(request),
      signal: upstream.signal,
      ...(call.timeoutMs === undefined ? {} : { timeoutMs: call.timeoutMs }),
    }));
  } catch (err) {
    if (upstream.signal.aborted) return reply.hijack(); // nobody is left to answer
    if (err instanceof BackendUnavailableError) throw unreachable(request, err);
    throw err;
  }

  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('text/event-stream') || !response.body) {
    const text = await response.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      request.log.warn({ status: response.status }, 'backend answered malformed JSON');
      throw new DomainError('BACKEND_UNREACHABLE');
    }
    return sendJson(reply, response.status, body);
  }

  // From here the response is written by hand; the headers hooks already set (security, rate limit) are kept.
  reply.hijack();
  if (upstream.signal.aborted) {
    await response.body.cancel().catch(() => undefined);
    return reply;
  }
  res.writeHead(response.status, {
    ...(reply.getHeaders() as Record<string, string | number | string[]>),
    'content-type': type,
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
  });
  res.socket?.setNoDelay(true);
  res.flushHeaders();
  const source = Readable.fromWeb(response.body as unknown as NodeReadableStream<Uint8Array>);
  /** Ends the browser's response cleanly; unpiped first, as a chunk written after the end would be an error. */
  const end = () => {
    source.unpipe(res);
    source.destroy();
    res.end();
  };
  open.add(end);
  // A hijacked response has no one else listening: a late socket error is logged, never thrown.
  res.on('error', (err) => request.log.debug({ err }, 'event stream to the browser failed'));
  // `pipe` ends the browser's response when the backend ends the stream, and waits for the browser when it is slow.
  source.pipe(res);
  // The backend broke off mid-stream: end ours cleanly; the browser reconnects after the announced `retry:`.
  source.on('error', (err) => {
    if (!upstream.signal.aborted) request.log.warn({ err }, 'event stream from the backend failed');
    end();
  });
  // The browser went away (or the stream ended): stop reading; the abort above closes the upstream connection.
  res.once('close', () => {
    open.delete(end);
    source.destroy();
  });
  return reply;
}

/**
 * Ends every relayed stream (for `preClose`): an open stream would otherwise keep the server from closing until the
 * backend ended it. Ending the response closes the upstream too; the browser reconnects after the announced `retry:`.
 */
export function endEventStreams(open: Set<() => void>): void {
  for (const end of [...open]) end();
}
