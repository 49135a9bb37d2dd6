import { HttpError, hmacSha256Hex, safeEqual } from '@aop/core';
import type { FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the web layer says is calling; set by `verifyUserContext`. */
    userContext?: UserContext;
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
  if (!internalApiKey) throw new HttpError(500, 'Server misconfigured');
  const header = headers.authorization;
  if (!header?.startsWith('Bearer ')) throw new HttpError(401, 'Unauthorized');
  const presented = header.slice('Bearer '.length).trim();
  if (!presented) throw new HttpError(401, 'Unauthorized');
  if (!safeEqual(presented, internalApiKey)) throw new HttpError(403, 'Forbidden');
}

export function requireInternalKey(internalApiKey: string | undefined): Hook {
  return async (request) => checkInternalKey(request.headers, internalApiKey);
}

/** The signature is 64 lowercase hex characters; anything else is refused before comparing. */
const SIGNATURE_FORMAT = /^[0-9a-f]{64}$/;

const headerValue = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

/** The string the web layer signs: `{userId}:{userEmail}:{userRole}`. */
export const userContextPayload = (ctx: UserContext): string => `${ctx.userId}:${ctx.email ?? ''}:${ctx.role}`;

/**
 * Reads `x-user-id` (default `anonymous`), `x-user-email`, `x-user-role` (default
 * `user`) and, when a secret is configured, checks `x-user-signature`: HMAC-SHA256
 * of the payload in lowercase hex (401 `SIGNATURE_REQUIRED` / `INVALID_SIGNATURE`).
 */
export function readUserContext(headers: Headers, secret: string | undefined): UserContext {
  const ctx: UserContext = {
    userId: headerValue(headers, 'x-user-id') ?? 'anonymous',
    email: headerValue(headers, 'x-user-email'),
    role: headerValue(headers, 'x-user-role') ?? 'user',
  };
  if (secret) {
    const signature = headerValue(headers, 'x-user-signature');
    if (!signature) throw new HttpError(401, 'SIGNATURE_REQUIRED');
    if (!SIGNATURE_FORMAT.test(signature) || !safeEqual(signature, hmacSha256Hex(secret, userContextPayload(ctx)))) {
      throw new HttpError(401, 'INVALID_SIGNATURE');
    }
  }
  return ctx;
}

export function verifyUserContext(secret: string | undefined): Hook {
  return async (request) => {
    request.userContext = readUserContext(request.headers, secret);
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
    if (!isAdminContext(request.userContext, adminEmails)) throw new HttpError(403, 'ADMIN_REQUIRED');
  };
}
