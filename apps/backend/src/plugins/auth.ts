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

/**
 * `Authorization: Bearer <INTERNAL_API_KEY>`, compared in constant time (spec §5):
 * 401 `Unauthorized` without a Bearer header, 403 `Forbidden` on a mismatch,
 * 500 `Server misconfigured` when the key is unset.
 */
export function requireInternalKey(internalApiKey: string | undefined): Hook {
  return async (request) => {
    if (!internalApiKey) throw new HttpError(500, 'Server misconfigured');
    const header = request.headers.authorization;
    if (!header?.startsWith('Bearer ')) throw new HttpError(401, 'Unauthorized');
    const presented = header.slice('Bearer '.length).trim();
    if (!presented) throw new HttpError(401, 'Unauthorized');
    if (!safeEqual(presented, internalApiKey)) throw new HttpError(403, 'Forbidden');
  };
}

/** The signature is 64 lowercase hex characters; anything else is refused before comparing. */
const SIGNATURE_FORMAT = /^[0-9a-f]{64}$/;

const headerValue = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

/** The string the web layer signs: `{userId}:{userEmail}:{userRole}`. */
export const userContextPayload = (ctx: UserContext): string => `${ctx.userId}:${ctx.email ?? ''}:${ctx.role}`;

/**
 * Reads `x-user-id` (default `anonymous`), `x-user-email`, `x-user-role` (default
 * `user`) and, when a secret is configured, checks `x-user-signature`: HMAC-SHA256
 * of the payload in lowercase hex (401 `SIGNATURE_REQUIRED` / `INVALID_SIGNATURE`).
 */
export function verifyUserContext(secret: string | undefined): Hook {
  return async (request) => {
    const ctx: UserContext = {
      userId: headerValue(request, 'x-user-id') ?? 'anonymous',
      email: headerValue(request, 'x-user-email'),
      role: headerValue(request, 'x-user-role') ?? 'user',
    };
    if (secret) {
      const signature = headerValue(request, 'x-user-signature');
      if (!signature) throw new HttpError(401, 'SIGNATURE_REQUIRED');
      if (!SIGNATURE_FORMAT.test(signature) || !safeEqual(signature, hmacSha256Hex(secret, userContextPayload(ctx)))) {
        throw new HttpError(401, 'INVALID_SIGNATURE');
      }
    }
    request.userContext = ctx;
  };
}

/** Admin endpoints: the context email must be in ADMIN_EMAILS, compared lowercased (403 `ADMIN_REQUIRED`). */
export function requireAdmin(adminEmails: ReadonlySet<string>): Hook {
  return async (request) => {
    const email = request.userContext?.email?.toLowerCase();
    if (!email || !adminEmails.has(email)) throw new HttpError(403, 'ADMIN_REQUIRED');
  };
}
