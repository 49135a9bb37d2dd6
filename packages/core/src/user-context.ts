import { hmacSha256Hex } from './crypto.js';

/**
 * A user context as the web service asserts it to the backend (spec §5 "User-context headers"), with the moment it
 * was signed. The signer (web) and the verifier (backend) both build the signed string here, so they cannot drift.
 */
export interface UserContextClaims {
  userId: string;
  email?: string | undefined;
  role: string;
  /** Unix seconds when the context was signed (`x-user-ts`). */
  ts: number;
}

/** What an absent `x-user-id` / `x-user-role` stands for; the signature covers these values, not the absence. */
export const ANONYMOUS_USER_ID = 'anonymous';
export const DEFAULT_USER_ROLE = 'user';

/**
 * The signed string: `{userId}:{userEmail}:{userRole}:{ts}`. The spec signs the first three only; the timestamp is
 * our addition so that a captured header set stops being accepted once the backend's freshness window has passed,
 * instead of standing for that user forever.
 */
export const userContextPayload = (claims: UserContextClaims): string =>
  `${claims.userId}:${claims.email ?? ''}:${claims.role}:${claims.ts}`;

/** `x-user-signature`: HMAC-SHA256 of the payload, lowercase hex. */
export const signUserContext = (secret: string, claims: UserContextClaims): string => hmacSha256Hex(secret, userContextPayload(claims));

/**
 * The headers that carry a user context: `x-user-id` (left out for the anonymous caller), `x-user-email` (when
 * known), `x-user-role` and, when a secret is configured, `x-user-ts` and `x-user-signature` signed at `nowMs`.
 * Without a secret nothing is signed: the backend then checks no signature either.
 */
export function userContextHeaders(
  context: { userId?: string | undefined; email?: string | undefined; role?: string | undefined },
  secret: string | undefined,
  // The real time by default: the backend judges `x-user-ts` by its own wall clock, not by the sender's app clock.
  nowMs: number = Date.now(),
): Record<string, string> {
  // Empty values count as absent, as the backend reads them, so what is signed is what the backend will rebuild.
  const role = context.role || DEFAULT_USER_ROLE;
  const headers: Record<string, string> = { 'x-user-role': role };
  if (context.userId) headers['x-user-id'] = context.userId;
  if (context.email) headers['x-user-email'] = context.email;
  if (secret) {
    const ts = Math.floor(nowMs / 1000);
    headers['x-user-ts'] = String(ts);
    headers['x-user-signature'] = signUserContext(secret, { userId: context.userId || ANONYMOUS_USER_ID, email: context.email, role, ts });
  }
  return headers;
}
