import type { CounterStore } from '@aop/core';
import { type DB, type SecurityEventsTable, sql, writeAudit } from '@aop/db';
import { type JWTPayload, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import type { Kysely, Selectable } from 'kysely';
import { type BatchWorker, createBatchWorker } from '../../platform/batch-worker.js';

/**
 * Account protection (spec §4.1 receivers, §6, §8): security event tokens
 * (RFC 8417 SETs, the identity provider's "RISC" feed) are validated, stored
 * once per `jti` in `security_events`, answered 202, and processed afterwards
 * by a worker that drains the table, so an event accepted just before a crash
 * is still handled after the restart.
 */

const RISC = 'https://schemas.openid.net/secevent/risc/event-type/';
const OAUTH = 'https://schemas.openid.net/secevent/oauth/event-type/';

/** The event types this receiver acts on (the provider's RISC URIs). */
export const SECURITY_EVENT_TYPES = {
  sessionsRevoked: `${RISC}sessions-revoked`,
  tokensRevoked: `${OAUTH}tokens-revoked`,
  tokenRevoked: `${OAUTH}token-revoked`,
  accountDisabled: `${RISC}account-disabled`,
  accountEnabled: `${RISC}account-enabled`,
  credentialChangeRequired: `${RISC}account-credential-change-required`,
  verification: `${RISC}verification`,
} as const;

export const SUPPORTED_SECURITY_EVENTS: readonly string[] = Object.values(SECURITY_EVENT_TYPES);

/** Spec §8: signing keys (and the configuration that names them) are cached 24 hours. */
export const SIGNING_KEY_CACHE_MS = 24 * 60 * 60 * 1000;
/** How long the shared counter store remembers a `jti`; the table remembers it for good. */
export const JTI_MEMORY_MS = 7 * 24 * 60 * 60 * 1000;
/** A row that failed this many times is left for an operator (`last_error` says why). */
export const MAX_SECURITY_EVENT_ATTEMPTS = 10;

const MAX_JTI_LENGTH = 256;
const FETCH_TIMEOUT_MS = 5_000;
/** After the provider could not be reached, requests are answered without asking it again for this long. */
const KEY_FAILURE_COOLDOWN_MS = 30_000;
const DRAIN_LIMIT = 100;

/** The short name of an event type URI, as audit actions use it: `security.<short name>`. */
export const eventShortName = (type: string) => type.slice(type.lastIndexOf('/') + 1) || type;

interface Log {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

// ---------------------------------------------------------------------------
// Validation

/** The token is not one we accept; `message` is the precise reason, for the log only. */
export class InvalidSecurityEventToken extends Error {
  override name = 'InvalidSecurityEventToken';
}

/** The provider's configuration or key set could not be fetched: not the sender's fault, worth a retry. */
export class SecurityEventKeysUnavailable extends Error {
  override name = 'SecurityEventKeysUnavailable';
}

export interface ValidatedSecurityEvent {
  jti: string;
  issuer: string;
  /** Provider subject id: `sub_id.sub`, the `sub` claim, or the first event's `subject.sub`. */
  subject: string | null;
  email: string | null;
  eventTypes: string[];
  payload: JWTPayload;
}

export interface SecurityEventValidatorOptions {
  /** `config.idp.issuer`; nothing validates without it. */
  issuer: string | undefined;
  /** `config.riscAudiences`. */
  audiences: readonly string[];
  /** The time token claims (`exp`, `nbf`) are checked at; `Date.now` by default. */
  now?: () => number;
  log?: Log;
}

export interface SecurityEventValidator {
  readonly configured: boolean;
  validate(token: unknown): Promise<ValidatedSecurityEvent>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const withoutTrailingSlash = (value: string) => value.replace(/\/+$/, '');
const JWT_FORMAT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * Where the key set is found: the provider's RISC configuration first (it names
 * the keys that sign security events), then its OpenID configuration.
 */
export const DISCOVERY_DOCUMENTS = ['/.well-known/risc-configuration', '/.well-known/openid-configuration'] as const;

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>;

/** JOSE errors that mean "the provider's keys could not be had", not "the token is bad". */
const UNAVAILABLE_CODES = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC', 'ERR_JWK_INVALID']);

/**
 * Checks a security event token in the spec's order: issuer, audience, keys
 * from the provider's published configuration (24 h cache), key by `kid`,
 * RS256 signature; then `jti` and `events`, which make it a SET and not some
 * other token the provider signed (an ID token has no `events`).
 */
export function createSecurityEventValidator(options: SecurityEventValidatorOptions): SecurityEventValidator {
  const issuer = options.issuer ? withoutTrailingSlash(options.issuer) : undefined;
  const audiences = [...options.audiences];
  const now = options.now ?? Date.now;
  let keys: { set: RemoteKeySet; jwksUri: string; discoveredAt: number } | undefined;
  let discovering: Promise<RemoteKeySet> | undefined;
  // Unauthenticated requests must not turn into a stream of fetches while the provider is down.
  let failure: { until: number; reason: string } | undefined;
  const unavailable = (reason: string) => {
    keys = undefined;
    failure = { until: performance.now() + KEY_FAILURE_COOLDOWN_MS, reason };
    return new SecurityEventKeysUnavailable(reason);
  };

  async function fetchJson(url: string): Promise<Record<string, unknown> | undefined> {
    const res = await fetch(url, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      return undefined;
    }
    const body: unknown = await res.json();
    return isObject(body) ? body : undefined;
  }

  /** Follows the provider's configuration to its key set; a plain-HTTP key set only for a plain-HTTP issuer (tests). */
  async function discover(base: string): Promise<RemoteKeySet> {
    const problems: string[] = [];
    for (const path of DISCOVERY_DOCUMENTS) {
      const url = `${base}${path}`;
      try {
        const doc = await fetchJson(url);
        if (!doc) {
          problems.push(`${path}: not found`);
          continue;
        }
        if (typeof doc.issuer === 'string' && withoutTrailingSlash(doc.issuer) !== base) {
          problems.push(`${path}: names issuer ${doc.issuer}`);
          continue;
        }
        if (typeof doc.jwks_uri !== 'string') {
          problems.push(`${path}: no jwks_uri`);
          continue;
        }
        const jwksUri = new URL(doc.jwks_uri);
        if (jwksUri.protocol !== 'https:' && !(jwksUri.protocol === 'http:' && base.startsWith('http:'))) {
          problems.push(`${path}: jwks_uri is not https`);
          continue;
        }
        const set = createRemoteJWKSet(jwksUri, { cacheMaxAge: SIGNING_KEY_CACHE_MS, timeoutDuration: FETCH_TIMEOUT_MS });
        keys = { set, jwksUri: jwksUri.href, discoveredAt: performance.now() };
        failure = undefined;
        options.log?.info({ jwksUri: jwksUri.href, via: path }, 'security event signing keys discovered');
        return set;
      } catch (err) {
        problems.push(`${path}: ${(err as Error).message}`);
      }
    }
    throw unavailable(`no key set found for ${base} (${problems.join('; ')})`);
  }

  async function keySet(base: string): Promise<RemoteKeySet> {
    // The key set's age and the cool-down are durations in this process (the tokens' times use `now`): monotonic.
    if (keys && performance.now() - keys.discoveredAt < SIGNING_KEY_CACHE_MS) return keys.set;
    if (failure && performance.now() < failure.until) throw new SecurityEventKeysUnavailable(`still cooling down after: ${failure.reason}`);
    // One discovery at a time: a burst of events shares it.
    discovering ??= discover(base).finally(() => {
      discovering = undefined;
    });
    return discovering;
  }

  async function validate(token: unknown): Promise<ValidatedSecurityEvent> {
    const invalid = (reason: string) => new InvalidSecurityEventToken(reason);
    if (typeof token !== 'string' || !JWT_FORMAT.test(token.trim())) throw invalid('body is not a compact JWT');
    const jwt = token.trim();
    let header: ReturnType<typeof decodeProtectedHeader>;
    let claims: JWTPayload;
    try {
      header = decodeProtectedHeader(jwt);
      claims = decodeJwt(jwt);
    } catch (err) {
      throw invalid(`not a JWT: ${(err as Error).message}`);
    }
    if (!issuer || audiences.length === 0) throw invalid('receiver not configured (IDP_ISSUER and IDP_CLIENT_ID or RISC_AUDIENCES)');
    // 1. Issuer (a trailing slash is the same issuer: the provider's SETs use one, its OpenID issuer not).
    if (typeof claims.iss !== 'string' || withoutTrailingSlash(claims.iss) !== issuer) throw invalid(`issuer ${String(claims.iss)}`);
    // 2. Audience.
    const aud = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (!aud.some((a) => audiences.includes(a))) throw invalid(`audience ${JSON.stringify(claims.aud)}`);
    // 3.-5. Keys by kid, RS256 only (checked before any fetch, so a forged header costs us nothing).
    if (header.alg !== 'RS256') throw invalid(`algorithm ${String(header.alg)}`);
    if (typeof header.kid !== 'string' || header.kid === '') throw invalid('no kid header');
    const set = await keySet(issuer);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, set, {
        issuer: [issuer, `${issuer}/`],
        audience: audiences,
        algorithms: ['RS256'],
        requiredClaims: ['jti'],
        currentDate: new Date(now()),
      }));
    } catch (err) {
      const code = (err as { code?: string }).code;
      if ((code && UNAVAILABLE_CODES.has(code)) || err instanceof TypeError) {
        // The provider may have moved its keys: discover again (after the cooldown).
        throw unavailable(`key set unavailable: ${(err as Error).message}`);
      }
      if (code === 'ERR_JWKS_NO_MATCHING_KEY') throw invalid(`no signing key with kid ${header.kid}`);
      throw invalid(`${code ?? 'error'}: ${(err as Error).message}`);
    }
    if (typeof payload.jti !== 'string' || payload.jti === '' || payload.jti.length > MAX_JTI_LENGTH)
      throw invalid('jti missing or too long');
    if (!isObject(payload.events) || Object.keys(payload.events).length === 0) throw invalid('no events claim: not a security event token');
    return { jti: payload.jti, issuer: payload.iss as string, ...describeSecurityEvent(payload), payload };
  }

  return {
    get configured() {
      return Boolean(issuer && audiences.length > 0);
    },
    validate,
  };
}

// ---------------------------------------------------------------------------
// Who an event is about

interface SubjectRef {
  sub?: string;
  email?: string;
  iss?: string;
}

/** RISC `subject` (`subject_type` iss-sub / email / id_token_claims) or SSF `sub_id` (`format` iss_sub / email / complex). */
function subjectRef(value: unknown): SubjectRef {
  if (!isObject(value)) return {};
  const ref: SubjectRef = {};
  if (typeof value.sub === 'string' && value.sub) ref.sub = value.sub;
  if (typeof value.email === 'string' && value.email) ref.email = value.email;
  if (typeof value.iss === 'string') ref.iss = value.iss;
  // A complex subject names the user under `user`.
  return ref.sub || ref.email ? ref : isObject(value.user) ? subjectRef(value.user) : ref;
}

/** The SET-wide subject: `sub_id`, else the `sub` claim. */
function setSubject(payload: Record<string, unknown>): SubjectRef {
  const ref = subjectRef(payload.sub_id);
  if (!ref.sub && typeof payload.sub === 'string' && payload.sub) ref.sub = payload.sub;
  return ref;
}

/** The subject of one event: its own `subject`, filled in from the SET-wide one. */
function eventSubject(payload: Record<string, unknown>, event: unknown): SubjectRef {
  return { ...setSubject(payload), ...subjectRef(isObject(event) ? event.subject : undefined) };
}

/** Subject id, email and event types of a SET, as stored in `security_events`. */
export function describeSecurityEvent(payload: Record<string, unknown>): {
  subject: string | null;
  email: string | null;
  eventTypes: string[];
} {
  const events = isObject(payload.events) ? payload.events : {};
  const refs = [setSubject(payload), ...Object.values(events).map((e) => subjectRef(isObject(e) ? e.subject : undefined))];
  return {
    subject: refs.find((r) => r.sub)?.sub ?? null,
    email: refs.find((r) => r.email)?.email ?? null,
    eventTypes: Object.keys(events),
  };
}

// ---------------------------------------------------------------------------
// Accepting (before the 202)

export interface AcceptedSecurityEvent {
  jti: string;
  /** `risc` (POST /api/security/risc) or `legacy` (POST /api/auth/idp/risc). */
  source: 'risc' | 'legacy';
  issuer: string | null;
  subject: string | null;
  email: string | null;
  eventTypes: string[];
  payload: Record<string, unknown>;
}

/**
 * Stores a validated event once per `jti`: true when this call stored it, false
 * for a repeat (the counter store answers fast; the table's primary key is the
 * durable answer, e.g. after the counter's week or a Redis flush).
 */
export async function acceptSecurityEvent(db: Kysely<DB>, counters: CounterStore, event: AcceptedSecurityEvent): Promise<boolean> {
  const key = `risc-jti:${event.jti}`;
  if (!(await counters.putIfAbsent(key, '1', JTI_MEMORY_MS))) return false;
  try {
    const inserted = await db
      .insertInto('security_events')
      .values({
        jti: event.jti,
        source: event.source,
        issuer: event.issuer,
        subject: event.subject,
        email: event.email,
        event_types: JSON.stringify(event.eventTypes),
        payload: JSON.stringify(event.payload),
      })
      .onConflict((oc) => oc.column('jti').doNothing())
      .returning('jti')
      .executeTakeFirst();
    return inserted !== undefined;
  } catch (err) {
    // Not stored: forget the jti so the provider's retry is not taken for a repeat.
    await counters.take(key).catch(() => null);
    throw err;
  }
}

// ---------------------------------------------------------------------------
// Processing (after the 202)

export type SecurityEventRow = Selectable<SecurityEventsTable>;

export interface ProcessOptions {
  /** Milliseconds since the epoch; the time written to `disabled_at` and friends. */
  now: number;
  log?: Log | undefined;
}

export interface SecurityEventAction {
  userId: string;
  eventType: string;
  action: string;
}

/** Users an event is about: by provider subject id (provider `idp`), else by email, case-insensitive. Legacy events: email only. */
async function matchUsers(db: Kysely<DB>, row: SecurityEventRow, ref: SubjectRef): Promise<string[]> {
  const issuer = row.issuer ? withoutTrailingSlash(row.issuer) : undefined;
  const sameIssuer = !ref.iss || !issuer || withoutTrailingSlash(ref.iss) === issuer;
  if (row.source !== 'legacy' && ref.sub && sameIssuer) {
    const linked = await db
      .selectFrom('oauth_accounts')
      .select('user_id')
      .where('provider', '=', 'idp')
      .where('provider_account_id', '=', ref.sub)
      .execute();
    if (linked.length > 0) return [...new Set(linked.map((r) => r.user_id))];
  }
  const email = ref.email?.trim().toLowerCase();
  if (!email) return [];
  const users = await db
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email))
    .execute();
  return users.map((u) => u.id);
}

async function revokeSessionsAndTokens(db: Kysely<DB>, userId: string, at: Date): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
  await db
    .updateTable('oauth_accounts')
    .set({ access_token_enc: null, refresh_token_enc: null, id_token_enc: null, expires_at: null, updated_at: at })
    .where('user_id', '=', userId)
    .where('provider', '=', 'idp')
    .execute();
}

/**
 * Applies one stored event, in the caller's transaction: per event type and
 * matched user one change and one audit row `security.<short name>`.
 * Verification and unknown types change nothing.
 */
export async function processSecurityEvent(db: Kysely<DB>, row: SecurityEventRow, options: ProcessOptions): Promise<SecurityEventAction[]> {
  const payload = row.payload;
  if (!isObject(payload) || !isObject(payload.events)) throw new Error('Malformed security event: no events claim');
  const at = new Date(options.now);
  const actions: SecurityEventAction[] = [];
  for (const [type, body] of Object.entries(payload.events)) {
    if (type === SECURITY_EVENT_TYPES.verification) {
      options.log?.info({ jti: row.jti, state: isObject(body) ? body.state : undefined }, 'security event stream verified');
      continue;
    }
    if (!SUPPORTED_SECURITY_EVENTS.includes(type)) {
      options.log?.info({ jti: row.jti, eventType: type }, 'security event type not supported: recorded, no action');
      continue;
    }
    const users = await matchUsers(db, row, eventSubject(payload, body));
    if (users.length === 0) options.log?.info({ jti: row.jti, eventType: type }, 'security event matches no user');
    for (const userId of users) {
      switch (type) {
        case SECURITY_EVENT_TYPES.sessionsRevoked:
        case SECURITY_EVENT_TYPES.tokensRevoked:
        case SECURITY_EVENT_TYPES.tokenRevoked:
          await revokeSessionsAndTokens(db, userId, at);
          break;
        case SECURITY_EVENT_TYPES.accountDisabled:
          await db
            .updateTable('users')
            .set((eb) => ({ disabled_at: eb.fn.coalesce('disabled_at', eb.val(at)), updated_at: at }))
            .where('id', '=', userId)
            .execute();
          await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
          break;
        case SECURITY_EVENT_TYPES.accountEnabled:
          await db.updateTable('users').set({ disabled_at: null, updated_at: at }).where('id', '=', userId).execute();
          break;
        case SECURITY_EVENT_TYPES.credentialChangeRequired:
          await db.updateTable('users').set({ credential_change_flagged_at: at, updated_at: at }).where('id', '=', userId).execute();
          break;
      }
      const action = `security.${eventShortName(type)}`;
      const reason = isObject(body) && typeof body.reason === 'string' ? { reason: body.reason } : {};
      await writeAudit(db, { userId, action, target: row.jti, metadata: { source: row.source, eventType: type, ...reason } });
      actions.push({ userId, eventType: type, action });
    }
  }
  return actions;
}

export interface DrainOptions {
  clock?: () => number;
  log?: Log | undefined;
  /** Rows handled per call at most; the rest wait for the next call. */
  limit?: number;
  maxAttempts?: number;
}

/**
 * Processes pending rows (`processed_at` null), oldest first, each in its own
 * transaction holding the row with `for update skip locked`, so several
 * instances on one Postgres never take the same row (PGlite has one session,
 * where the lock is simply uncontested). Success marks `processed_at`; a
 * failure rolls the event's changes back, counts the attempt, keeps the error,
 * and the row is retried by a later call.
 */
export async function drainSecurityEvents(db: Kysely<DB>, options: DrainOptions = {}): Promise<{ processed: number; failed: number }> {
  const clock = options.clock ?? Date.now;
  const limit = options.limit ?? DRAIN_LIMIT;
  const maxAttempts = options.maxAttempts ?? MAX_SECURITY_EVENT_ATTEMPTS;
  const tried: string[] = [];
  let processed = 0;
  let failed = 0;
  while (tried.length < limit) {
    const outcome = await db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('security_events')
        .selectAll()
        .where('processed_at', 'is', null)
        .where('attempts', '<', maxAttempts)
        .$if(tried.length > 0, (qb) => qb.where('jti', 'not in', tried))
        .orderBy('received_at')
        .orderBy('jti')
        .limit(1)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (!row) return undefined;
      const now = clock();
      await sql`savepoint security_event`.execute(trx);
      try {
        const actions = await processSecurityEvent(trx, row, { now, log: options.log });
        await trx
          .updateTable('security_events')
          .set((eb) => ({ processed_at: new Date(now), attempts: eb('attempts', '+', 1), last_error: null }))
          .where('jti', '=', row.jti)
          .execute();
        options.log?.info(
          { jti: row.jti, source: row.source, eventTypes: row.event_types, actions: actions.length },
          'security event processed',
        );
        return { jti: row.jti, ok: true };
      } catch (err) {
        await sql`rollback to savepoint security_event`.execute(trx);
        const message = (err as Error).message?.slice(0, 1000) ?? String(err);
        await trx
          .updateTable('security_events')
          .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: message }))
          .where('jti', '=', row.jti)
          .execute();
        const gaveUp = row.attempts + 1 >= maxAttempts;
        (gaveUp ? options.log?.error : options.log?.warn)?.call(
          options.log,
          { jti: row.jti, attempts: row.attempts + 1, err },
          gaveUp ? 'security event failed for the last time; left for an operator' : 'security event failed; will retry',
        );
        return { jti: row.jti, ok: false };
      }
    });
    if (!outcome) break;
    tried.push(outcome.jti);
    if (outcome.ok) processed++;
    else failed++;
  }
  return { processed, failed };
}

/** The drain's queue depth (/metrics): events not processed yet that it will still try. */
export async function pendingSecurityEvents(db: Kysely<DB>, maxAttempts = MAX_SECURITY_EVENT_ATTEMPTS): Promise<number> {
  const row = await db
    .selectFrom('security_events')
    .select((eb) => eb.fn.countAll<number>().as('pending'))
    .where('processed_at', 'is', null)
    .where('attempts', '<', maxAttempts)
    .executeTakeFirst();
  return Number(row?.pending ?? 0);
}

export interface SecurityEventWorker extends Omit<BatchWorker, 'start'> {
  /** Drains every `intervalMs` (default a minute) from now on. */
  start(intervalMs?: number): void;
}

/** One drain at a time per process; kicks during a drain make it run once more. */
export function createSecurityEventWorker(db: Kysely<DB>, options: Omit<DrainOptions, 'limit'> = {}): SecurityEventWorker {
  const worker = createBatchWorker(
    async () => {
      const { processed, failed } = await drainSecurityEvents(db, options);
      // A full batch with progress: more may be waiting (a backlog after a restart).
      return processed > 0 && processed + failed >= DRAIN_LIMIT;
    },
    (err) => options.log?.error({ err }, 'security event queue drain failed'),
  );
  return { ...worker, start: (intervalMs = 60_000) => worker.start(intervalMs) };
}
