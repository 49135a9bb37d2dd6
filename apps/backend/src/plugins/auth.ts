import { ANONYMOUS_USER_ID, DEFAULT_USER_ROLE, DomainError, safeEqual, signUserContext } from '@aop/core';
import type { FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the web layer says is calling; set by `verifyUserContext`. */
    userContext?: UserContext;
  }
  interface FastifyInstance {
    /** Milliseconds since the epoch; `buildApp` decorates it (`Date.now` unless a test injects its own). */
    clock: () => number;
  }
}

export interface UserContext {
  userId: string;
  email: string | undefined;
  role: string;
}

type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

type Headers = FastifyRequest['headers'];

/**
 * `Authorization: Bearer <INTERNAL_API_KEY>`, compared in constant time (spec §5):
 * 401 `Unauthorized` without a Bearer header, 403 `Forbidden` on a mismatch,
 * 500 `Server misconfigured` when the key is unset.
 */
export function checkInternalKey(headers: Headers, internalApiKey: string | undefined): void {
  if (!internalApiKey) throw new DomainError('SERVER_MISCONFIGURED');
  const header = headers.authorization;
  if (!header?.startsWith('Bearer ')) throw new DomainError('UNAUTHORIZED');
  const presented = header.slice('Bearer '.length).trim();
  if (!presented) throw new DomainError('UNAUTHORIZED');
  if (!safeEqual(presented, internalApiKey)) throw new DomainError('FORBIDDEN');
}

export function requireInternalKey(internalApiKey: string | undefined): Hook {
  return async (request) => checkInternalKey(request.headers, internalApiKey);
}

/** The signature is 64 lowercase hex characters; anything else is refused before comparing. */
const SIGNATURE_FORMAT = /^[0-9a-f]{64}$/;
/** `x-user-ts` is whole Unix seconds, digits only (no sign, fraction or exponent that `Number` would also accept). */
const TIMESTAMP_FORMAT = /^[0-9]{1,12}$/;
/**
 * How long a signed context stays valid: long enough for a request to cross the internal network and wait in a
 * queue, short enough that a captured header set is soon useless. A minute of clock skew is tolerated the other way.
 */
const MAX_CONTEXT_AGE_MS = 5 * 60_000;
const MAX_CONTEXT_AHEAD_MS = 60_000;

const headerValue = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

/**
 * Reads `x-user-id` (default `anonymous`), `x-user-email`, `x-user-role` (default `user`) and, when a secret is
 * configured, checks `x-user-signature` over them and `x-user-ts` (`userContextPayload` of @aop/core): 401
 * `SIGNATURE_REQUIRED` without a signature; 401 `INVALID_SIGNATURE` when it does not match, when `x-user-ts` is
 * missing or malformed, or when it is more than 5 minutes before or 1 minute after `nowMs` (a replayed header set).
 */
export function readUserContext(headers: Headers, secret: string | undefined, nowMs: number): UserContext {
  const ctx: UserContext = {
    userId: headerValue(headers, 'x-user-id') ?? ANONYMOUS_USER_ID,
    email: headerValue(headers, 'x-user-email'),
    role: headerValue(headers, 'x-user-role') ?? DEFAULT_USER_ROLE,
  };
  if (secret) {
    const signature = headerValue(headers, 'x-user-signature');
    if (!signature) throw new DomainError('SIGNATURE_REQUIRED');
    const ts = headerValue(headers, 'x-user-ts');
    if (!ts || !TIMESTAMP_FORMAT.test(ts) || !SIGNATURE_FORMAT.test(signature)) throw new DomainError('USER_CONTEXT_SIGNATURE_INVALID');
    const signedAtMs = Number(ts) * 1000;
    const fresh = nowMs - signedAtMs <= MAX_CONTEXT_AGE_MS && signedAtMs - nowMs <= MAX_CONTEXT_AHEAD_MS;
    if (!safeEqual(signature, signUserContext(secret, { ...ctx, ts: Number(ts) })) || !fresh) {
      throw new DomainError('USER_CONTEXT_SIGNATURE_INVALID');
    }
  }
  return ctx;
}

/** Sets `request.userContext` from the headers, judging the timestamp by the app's clock (`app.clock`). */
export function verifyUserContext(secret: string | undefined): Hook {
  return async (request) => {
    request.userContext = readUserContext(request.headers, secret, request.server.clock());
  };
}

/** Whether the context's email is in ADMIN_EMAILS, compared lowercased. */
export const isAdminContext = (ctx: UserContext | undefined, adminEmails: ReadonlySet<string>): boolean => {
  const email = ctx?.email?.toLowerCase();
  return Boolean(email && adminEmails.has(email));
};

/** Admin endpoints: the context email must be in ADMIN_EMAILS, compared lowercased (403 `ADMIN_REQUIRED`). */
export function requireAdmin(adminEmails: ReadonlySet<string>): Hook {
  return async (request) => {
    if (!isAdminContext(request.userContext, adminEmails)) throw new DomainError('ADMIN_REQUIRED');
  };
}
