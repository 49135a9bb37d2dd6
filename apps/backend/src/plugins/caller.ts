import { beforeObjectBody, DomainError } from '@aop/core';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../config.js';
import { isAdminContext, requireInternalKey, verifyUserContext } from './auth.js';

/**
 * The identity headers of the endpoints behind the web proxy (spec §5): the internal key, then the signed user
 * context. Routes that hold user-owned rows also need a real user (`callerId`).
 */
export const identityAuth = (config: BackendConfig) => [
  requireInternalKey(config.internalApiKey),
  verifyUserContext(config.userContextSecret),
];

/** The caller from the signed user context; `anonymous` (no `x-user-id`) is 401 `User context required`. */
export function callerId(request: FastifyRequest): string {
  const id = request.userContext?.userId;
  if (!id || id === 'anonymous') throw new DomainError('USER_CONTEXT_REQUIRED');
  return id;
}

/** A path's `:userId` must be the caller, unless the caller is an administrator (403 `Forbidden`). */
export function checkSubject(request: FastifyRequest, subject: string, config: BackendConfig): void {
  const caller = callerId(request);
  if (caller !== subject && !isAdminContext(request.userContext, config.adminEmails)) throw new DomainError('FORBIDDEN');
}

/** `preValidation`: the calling user ahead of the body schema on routes that act for one (see `beforeObjectBody`). */
export const callerBeforeBody = beforeObjectBody(callerId);
