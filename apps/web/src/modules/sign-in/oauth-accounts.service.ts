import { type CounterStore, encryptSecret, newId, randomHex } from '@aop/core';
import { type DB, writeAudit, isUniqueViolation } from '@aop/db';
import type { Kysely, Transaction } from 'kysely';
import { isEmail, newReferralCode, normalizeEmail } from '../accounts/accounts.service.js';
import { cancelEmailLinks } from '../accounts/email-verification.service.js';
import { type NewSession, createSession, deleteUserSessions } from '../../platform/sessions.js';

/** The two OAuth sign-in providers of spec §4.1; the value of `oauth_accounts.provider`. */
export type OAuthProvider = 'idp' | 'codehost';

/** How long an authorization request may take between the redirect out and the callback. */
export const AUTHORIZATION_STATE_TTL_MS = 10 * 60_000;

/** What the server remembers about one authorization request, keyed by its `state`. */
export interface AuthorizationState {
  codeVerifier: string;
  /** OIDC only: the `nonce` the ID token must carry. */
  nonce?: string;
}

const stateKey = (provider: OAuthProvider, state: string) => `oauth:${provider}:${state}`;

/** A fresh `state` whose record lives server-side for 10 minutes. */
export async function saveAuthorizationState(counters: CounterStore, provider: OAuthProvider, record: AuthorizationState): Promise<string> {
  for (;;) {
    const state = randomHex(32);
    if (await counters.putIfAbsent(stateKey(provider, state), JSON.stringify(record), AUTHORIZATION_STATE_TTL_MS)) return state;
  }
}

/** The record behind `state`, once: a second call (replay), an unknown or an expired state give null. */
export async function takeAuthorizationState(
  counters: CounterStore,
  provider: OAuthProvider,
  state: string | undefined,
): Promise<AuthorizationState | null> {
  if (!state || state.length > 256) return null;
  const raw = await counters.take(stateKey(provider, state));
  if (!raw) return null;
  try {
    const parsed = JSON.parse(raw) as Partial<AuthorizationState>;
    if (typeof parsed.codeVerifier !== 'string') return null;
    return { codeVerifier: parsed.codeVerifier, ...(typeof parsed.nonce === 'string' ? { nonce: parsed.nonce } : {}) };
  } catch {
    return null;
  }
}

/** A person as the provider describes them after a successful code exchange. */
export interface ProviderProfile {
  provider: OAuthProvider;
  /** The provider's stable id for the account (`sub`, or the code host's numeric id as a string). */
  subject: string;
  email: string;
  /** The provider vouches that the person controls `email`. */
  emailVerified: boolean;
  name?: string | undefined;
  /** Kept on the provider account row (display name, picture…). */
  metadata: Record<string, unknown>;
  tokens: {
    accessToken?: string | undefined;
    refreshToken?: string | undefined;
    idToken?: string | undefined;
    expiresAt?: Date | undefined;
    scope?: string | undefined;
  };
}

export type ProviderSignIn =
  | { ok: true; userId: string; created: boolean; session: NewSession }
  /**
   * `disabled`: account protection disabled the user. `unverifiedEmail`: the provider does not vouch
   * for an email that belongs to an existing user, so linking would hand that account to a stranger.
   */
  | { ok: false; reason: 'disabled' | 'unverifiedEmail' };

export interface SignInContext {
  /** AES-256-GCM key for provider tokens at rest (`parseEncryptionKey(config.encryptionKey)`). */
  encryptionKey: Buffer;
  ip: string;
  userAgent?: string | undefined;
  now: number;
}

/** Whether the provider's email can be used at all. */
export const usableEmail = (value: unknown): string | undefined =>
  typeof value === 'string' && isEmail(normalizeEmail(value)) ? normalizeEmail(value) : undefined;

/**
 * Spec §4.1 callback steps 3 to 5, shared by the identity provider and the code host:
 * the user already linked to this provider account, else the user with that email
 * (case-insensitive), else a new user; the provider account row with its tokens sealed
 * (AES-256-GCM, the user id as associated data); a disabled user is refused; then a
 * session. All in one transaction, so a failure leaves neither a half-made user nor a link.
 */
export async function signInWithProvider(db: Kysely<DB>, profile: ProviderProfile, context: SignInContext): Promise<ProviderSignIn> {
  try {
    return await db.transaction().execute((trx) => signIn(trx, profile, context));
  } catch (err) {
    // Two first sign-ins of one person at the same moment (or a referral-code collision): the
    // unique index decided; the second attempt finds the user the first one created.
    if (isUniqueViolation(err)) return db.transaction().execute((trx) => signIn(trx, profile, context));
    throw err;
  }
}

async function signIn(trx: Transaction<DB>, profile: ProviderProfile, context: SignInContext): Promise<ProviderSignIn> {
  const email = normalizeEmail(profile.email);
  const now = new Date(context.now);
  const linked = await trx
    .selectFrom('oauth_accounts')
    .innerJoin('users', 'users.id', 'oauth_accounts.user_id')
    .select(['users.id', 'users.email', 'users.disabled_at', 'users.email_verified_at'])
    .where('oauth_accounts.provider', '=', profile.provider)
    .where('oauth_accounts.provider_account_id', '=', profile.subject)
    .executeTakeFirst();

  let user = linked;
  let created = false;
  if (!user) {
    const existing = await trx
      .selectFrom('users')
      .select(['id', 'email', 'disabled_at', 'email_verified_at'])
      .where((eb) => eb(eb.fn('lower', ['email']), '=', email))
      .executeTakeFirst();
    if (existing) {
      if (!profile.emailVerified) return { ok: false, reason: 'unverifiedEmail' };
      // Nobody proved this account's address before: whoever registered it may have typed someone else's. The
      // provider vouches for the person signing in now, so the account becomes theirs alone (as a password reset
      // through the mailbox would make it): the old password, sessions, keys and pending email changes stop working.
      if (!existing.email_verified_at) await claimUnverifiedAccount(trx, existing.id, { now, ip: context.ip, method: profile.provider });
      user = existing;
    }
  }
  if (!user) {
    const id = newId('user');
    await trx
      .insertInto('users')
      .values({
        id,
        email,
        name: profile.name?.trim().slice(0, 100) || email,
        password_hash: null,
        email_verified_at: profile.emailVerified ? now : null,
        referral_code: newReferralCode(),
      })
      .execute();
    await writeAudit(trx, { userId: id, action: 'user.register', ip: context.ip, metadata: { method: profile.provider } });
    user = { id, email, disabled_at: null, email_verified_at: profile.emailVerified ? now : null };
    created = true;
  }
  if (user.disabled_at) return { ok: false, reason: 'disabled' };

  // The provider vouches for the address the user signs in with: it counts as verified here too.
  if (profile.emailVerified && !user.email_verified_at && normalizeEmail(user.email) === email) {
    await trx.updateTable('users').set({ email_verified_at: now, updated_at: now }).where('id', '=', user.id).execute();
  }

  const userId = user.id;
  const seal = (value: string | undefined) => (value ? encryptSecret(context.encryptionKey, value, userId) : null);
  const sealed = {
    email,
    access_token_enc: seal(profile.tokens.accessToken),
    id_token_enc: seal(profile.tokens.idToken),
    expires_at: profile.tokens.expiresAt ?? null,
    scope: profile.tokens.scope ?? null,
    metadata: JSON.stringify(profile.metadata),
    updated_at: now,
  };
  const refreshToken = seal(profile.tokens.refreshToken);
  await trx
    .insertInto('oauth_accounts')
    .values({
      id: newId('oauthAccount'),
      user_id: userId,
      provider: profile.provider,
      provider_account_id: profile.subject,
      refresh_token_enc: refreshToken,
      ...sealed,
    })
    // Already linked: one row per provider account; its tokens are refreshed. Providers send a
    // refresh token only on the first consent, so a missing one keeps the stored one.
    .onConflict((oc) =>
      oc
        .columns(['provider', 'provider_account_id'])
        .doUpdateSet({ ...sealed, ...(refreshToken ? { refresh_token_enc: refreshToken } : {}) })
        .where('oauth_accounts.user_id', '=', userId),
    )
    .execute();
  if (!linked) {
    await writeAudit(trx, {
      userId,
      action: 'oauth.link',
      target: `${profile.provider}:${profile.subject}`,
      ip: context.ip,
      metadata: { provider: profile.provider },
    });
  }

  const session = await createSession(trx, userId, { ip: context.ip, userAgent: context.userAgent }, context.now);
  await writeAudit(trx, {
    userId,
    action: 'session.create',
    target: session.sessionId,
    ip: context.ip,
    metadata: { method: profile.provider },
  });
  return { ok: true, userId, created, session };
}

async function claimUnverifiedAccount(trx: Transaction<DB>, userId: string, at: { now: Date; ip: string; method: string }) {
  await trx.updateTable('users').set({ password_hash: null, updated_at: at.now }).where('id', '=', userId).execute();
  await deleteUserSessions(trx, userId);
  await trx.deleteFrom('api_keys').where('user_id', '=', userId).execute();
  await cancelEmailLinks(trx, userId, at.now);
  await writeAudit(trx, { userId, action: 'account.claim', ip: at.ip, metadata: { method: at.method } });
}
