import { createHmac } from 'node:crypto';
import { type App, DomainError, safeEqual } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyBaseLogger } from 'fastify';
import { isAddress } from 'viem';
import type { WebConfig } from '../../config.js';
import { gateConfigured, wholeTokens } from '../../platform/clients/chain.js';
import { SocialIdentityEndpoint } from './sign-in.schemas.js';
import { checkGateBalance } from './token-gating.routes.js';

const MINUTE = 60_000;
/** A social session token lives 24 hours from its issue (or its last refresh). */
export const SOCIAL_SESSION_TTL_MS = 24 * 60 * MINUTE;
/** The identity-verification endpoint must answer within this. */
export const SOCIAL_VERIFY_TIMEOUT_MS = 10_000;
const MAX_IDENTITY_TOKEN_LENGTH = 8_192;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export const SOCIAL_TOKEN_ERRORS = {
  format: 'SESSION_TOKEN_FORMAT_OUTDATED',
  invalid: 'INVALID_SESSION_TOKEN',
  expired: 'SESSION_TOKEN_EXPIRED',
} as const;

/** What a social session token asserts. Times are milliseconds since the epoch. */
export interface SocialSessionClaims {
  /** The first 64 characters of the identity token that was verified. */
  fidToken: string;
  /** The lower-case wallet address given at verification, or null. */
  address: string | null;
  verified: true;
  iat: number;
  exp: number;
  fid?: number;
}

const sign = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('base64url');

/** `{base64url(JSON claims)}.{base64url(HMAC-SHA256(secret, first part))}` (spec §4.1, §9). */
export function signSocialSessionToken(secret: string, claims: SocialSessionClaims): string {
  const data = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${data}.${sign(secret, data)}`;
}

/** The claims of a well-signed, unexpired token at `now`, or why not. */
export function verifySocialSessionToken(
  secret: string,
  token: string,
  now: number,
): { ok: true; claims: SocialSessionClaims } | { ok: false; reason: keyof typeof SOCIAL_TOKEN_ERRORS } {
  // Tokens issued before signing was introduced are plain base64 JSON: no dot at all.
  if (!token.includes('.')) return { ok: false, reason: 'format' };
  const parts = token.split('.');
  const [data, signature] = parts;
  if (parts.length !== 2 || !data || !signature || !BASE64URL.test(data) || !BASE64URL.test(signature))
    return { ok: false, reason: 'invalid' };
  if (!safeEqual(sign(secret, data), signature)) return { ok: false, reason: 'invalid' };
  let claims: SocialSessionClaims;
  try {
    claims = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as SocialSessionClaims;
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (typeof claims !== 'object' || claims === null || claims.verified !== true || typeof claims.exp !== 'number') {
    return { ok: false, reason: 'invalid' };
  }
  if (claims.exp <= now) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}

interface VerifiedIdentity {
  fid?: number;
  username?: string;
}

/**
 * Asks the verification endpoint about an identity token: `POST {token}` as
 * JSON, answer `{ valid, fid?, username? }`. A 4xx answer (other than 429) or
 * `valid !== true` means the token is not valid; anything else that is not a
 * clean answer is an upstream failure.
 */
async function verifyIdentityToken(verifyUrl: string, token: string, log: FastifyBaseLogger): Promise<VerifiedIdentity | null> {
  const upstreamFailure = (err: unknown) => {
    log.error({ err }, 'identity verification endpoint failed');
    return new DomainError('IDENTITY_VERIFICATION_FAILED');
  };
  let res: Response;
  try {
    res = await fetch(verifyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token }),
      signal: AbortSignal.timeout(SOCIAL_VERIFY_TIMEOUT_MS),
      redirect: 'error',
    });
  } catch (err) {
    throw upstreamFailure(err);
  }
  if (res.status >= 400 && res.status < 500 && res.status !== 429) return null;
  let body: { valid?: unknown; fid?: unknown; username?: unknown };
  try {
    if (!res.ok) throw new Error(`status ${res.status}`);
    body = (await res.json()) as typeof body;
  } catch (err) {
    throw upstreamFailure(err);
  }
  if (body?.valid !== true) return null;
  const fid =
    typeof body.fid === 'number' ? body.fid : typeof body.fid === 'string' && /^\d{1,18}$/.test(body.fid) ? Number(body.fid) : undefined;
  return {
    ...(fid !== undefined && Number.isSafeInteger(fid) ? { fid } : {}),
    ...(typeof body.username === 'string' ? { username: body.username.slice(0, 64) } : {}),
  };
}

// A request without a body is a request without a token (401), not a malformed one: null is accepted.
const VerifyBodySchema = Type.Union([
  Type.Object({ fidToken: Type.Optional(Type.String()), address: Type.Optional(Type.String()) }),
  Type.Null(),
]);
const RefreshBodySchema = Type.Union([Type.Object({ sessionToken: Type.Optional(Type.String()) }), Type.Null()]);

/**
 * Spec §4.1 social identity: `POST /api/auth/social-identity/verify` checks an
 * identity token with the configured verification endpoint (SOCIAL_VERIFY_URL)
 * and, given a wallet address, its gate-token holding; it answers an
 * HMAC-signed 24-hour session token that `POST /api/auth/social-identity/refresh`
 * renews. `GET` on either path describes it.
 */
export async function socialIdentityRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const verifyLimit = app.rateLimit({ name: 'social-verify', max: 30, windowMs: MINUTE, message: 'Too many requests' });
  const refreshLimit = app.rateLimit({ name: 'social-refresh', max: 60, windowMs: MINUTE, message: 'Too many requests' });
  const secret = config.social.sessionSecret;

  app.get('/api/auth/social-identity/verify', { schema: { tags: ['accounts'], response: { 200: SocialIdentityEndpoint } } }, async () => ({
    endpoint: '/api/auth/social-identity/verify',
    method: 'POST' as const,
    description:
      'Verifies a social identity token and, when a wallet address is given, that it holds enough gate tokens on the gating network. ' +
      'Answers a session token valid for 24 hours.',
    body: {
      fidToken: 'string (required): the identity token to verify',
      address: `string (optional): a wallet address; must hold at least ${config.gating.minBalance} gate tokens when gating is configured`,
    },
  }));

  app.get('/api/auth/social-identity/refresh', { schema: { tags: ['accounts'], response: { 200: SocialIdentityEndpoint } } }, async () => ({
    endpoint: '/api/auth/social-identity/refresh',
    method: 'POST' as const,
    description: 'Exchanges a valid, unexpired session token for a fresh one valid for 24 hours.',
    body: { sessionToken: 'string (required): a session token from /api/auth/social-identity/verify or from an earlier refresh' },
  }));

  app.post(
    '/api/auth/social-identity/verify',
    {
      onRequest: verifyLimit,
      config: { invalidBody: 'MISSING_IDENTITY_TOKEN' },
      schema: {
        tags: ['accounts'],
        body: VerifyBodySchema,
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            sessionToken: Type.String(),
            address: Type.Union([Type.String(), Type.Null()]),
            message: Type.String(),
            tokenGated: Type.Boolean(),
            accessLevel: Type.Union([Type.Literal('gated'), Type.Literal('basic')]),
          }),
        },
      },
    },
    async (request) => {
      const { fidToken, address } = request.body ?? {};
      if (!fidToken) throw new DomainError('MISSING_IDENTITY_TOKEN');
      if (!config.social.verifyUrl) throw new DomainError('SOCIAL_IDENTITY_NOT_CONFIGURED');
      if (address !== undefined && address !== '' && !isAddress(address, { strict: false })) throw new DomainError('INVALID_ADDRESS');
      const wallet = address ? address.toLowerCase() : null;

      const identity =
        fidToken.length <= MAX_IDENTITY_TOKEN_LENGTH ? await verifyIdentityToken(config.social.verifyUrl, fidToken, request.log) : null;
      if (!identity) throw new DomainError('INVALID_IDENTITY_TOKEN');

      let tokenGated = false;
      if (wallet && gateConfigured(config.gating)) {
        const gate = await checkGateBalance(config, wallet, request.log);
        if (!gate.allowed) {
          throw new DomainError('INSUFFICIENT_GATE_TOKEN_BALANCE', undefined, {
            required: config.gating.minBalance,
            minBalance: gate.required.toString(),
            balance: wholeTokens(gate.balance, gate.decimals),
          });
        }
        tokenGated = true;
      }

      const iat = app.clock();
      const sessionToken = signSocialSessionToken(secret, {
        fidToken: fidToken.slice(0, 64),
        address: wallet,
        verified: true,
        iat,
        exp: iat + SOCIAL_SESSION_TTL_MS,
        ...(identity.fid !== undefined ? { fid: identity.fid } : {}),
      });
      return {
        success: true as const,
        sessionToken,
        address: wallet,
        message: tokenGated ? 'Identity verified; gate token holding confirmed' : 'Identity verified',
        tokenGated,
        accessLevel: tokenGated ? ('gated' as const) : ('basic' as const),
      };
    },
  );

  app.post(
    '/api/auth/social-identity/refresh',
    {
      onRequest: refreshLimit,
      config: { invalidBody: 'MISSING_SESSION_TOKEN' },
      schema: {
        tags: ['accounts'],
        body: RefreshBodySchema,
        response: {
          200: Type.Object({ success: Type.Literal(true), sessionToken: Type.String(), expiresAt: Type.String({ format: 'date-time' }) }),
        },
      },
    },
    async (request) => {
      const presented = request.body?.sessionToken;
      if (!presented) throw new DomainError('MISSING_SESSION_TOKEN');
      const now = app.clock();
      const result = verifySocialSessionToken(secret, presented, now);
      if (!result.ok) throw new DomainError(SOCIAL_TOKEN_ERRORS[result.reason]);
      const exp = now + SOCIAL_SESSION_TTL_MS;
      const sessionToken = signSocialSessionToken(secret, { ...result.claims, iat: now, exp });
      return { success: true as const, sessionToken, expiresAt: new Date(exp).toISOString() };
    },
  );
}
