import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { DomainError, newId } from '@aop/core';
import { type InstallationsTable, type Tx, isUniqueViolation } from '@aop/db';
import type { Selectable } from 'kysely';

/**
 * Installations (spec §4.18, backend, identity headers): self-hosted home instances a user links to their account.
 * A home is known by its Ed25519 key (the OpenClaw device identity: raw 32-byte public key, device id = its SHA-256
 * hex). `register-home` records it as `pending` with a one-time challenge; `register-link` links it once the home
 * signed `aop-link-v1|<installationId>|<userId>|<challenge>` with its private key. A key linked to one account
 * cannot be linked to another.
 */

/** How long a link challenge can be answered. */
export const LINK_CHALLENGE_TTL_MS = 10 * 60_000;
/** Installations per user (pending and linked). */
export const MAX_INSTALLATIONS = 20;
export const NAME_MAX = 100;
const URL_MAX = 2048;
const VERSION_FORMAT = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

/** The DER SPKI prefix of an Ed25519 public key; the raw 32 bytes follow it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface HomeKey {
  raw: Buffer;
  /** base64url of the raw key, as stored and shown. */
  publicKey: string;
  deviceId: string;
}

/** A raw 32-byte Ed25519 public key in base64url or base64 (as OpenClaw device identities carry it). */
export function parsePublicKey(value: string): HomeKey {
  if (!/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(value)) throw new DomainError('INVALID_PUBLICKEY');
  const raw = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (raw.length !== 32) throw new DomainError('INVALID_PUBLICKEY');
  try {
    createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    throw new DomainError('INVALID_PUBLICKEY');
  }
  return { raw, publicKey: raw.toString('base64url'), deviceId: createHash('sha256').update(raw).digest('hex') };
}

/** An http(s) URL without credentials in it (they would be stored and shown), or null when absent or empty. */
export function parseHomeUrl(value: string | null | undefined): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (value.length > URL_MAX) throw new DomainError('INVALID_URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DomainError('INVALID_URL');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) throw new DomainError('INVALID_URL');
  return url.toString();
}

export function parseVersion(value: string | null | undefined): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (!VERSION_FORMAT.test(value)) throw new DomainError('INVALID_VERSION');
  return value;
}

/** The request schema has refused a name that is not a string or is blank; it counts once trimmed. */
export function parseName(value: string): string {
  const name = value.trim();
  if (!name) throw new DomainError('FIELD_REQUIRED', { field: 'name' });
  if (name.length > NAME_MAX) throw new DomainError('FIELD_TOO_LONG', { field: 'name', max: NAME_MAX });
  return name;
}

/** What the home signs to prove it holds the key: bound to the installation, the account and the challenge. */
export const linkMessage = (installationId: string, userId: string, challenge: string) =>
  `aop-link-v1|${installationId}|${userId}|${challenge}`;

export function verifyLinkSignature(publicKey: string, message: string, signature: string): boolean {
  if (!/^[A-Za-z0-9+/_-]{86}(==)?$/.test(signature)) return false;
  const raw = Buffer.from(publicKey, 'base64url');
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  const sig = Buffer.from(signature.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return sig.length === 64 && verify(null, Buffer.from(message, 'utf8'), key, sig);
}

type InstallationRow = Selectable<InstallationsTable>;

export interface InstallationView {
  id: string;
  name: string;
  url: string | null;
  publicKey: string;
  deviceId: string;
  version: string | null;
  status: 'pending' | 'linked';
  createdAt: string;
  updatedAt: string;
  linkedAt: string | null;
  lastSeenAt: string | null;
}

export const installationView = (row: InstallationRow): InstallationView => ({
  id: row.id,
  name: row.name,
  url: row.url,
  publicKey: row.public_key,
  deviceId: row.device_id,
  version: row.version,
  status: row.status,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  linkedAt: row.linked_at?.toISOString() ?? null,
  lastSeenAt: row.last_seen_at?.toISOString() ?? null,
});

export interface HomeRegistration {
  installation: InstallationView;
  created: boolean;
  /** Present while the installation is not linked yet: what the home must sign, and until when. */
  link: { challenge: string; message: string; expiresAt: string } | null;
}

/**
 * Records (or refreshes) the caller's home. A known key keeps its installation: name, URL and version are updated;
 * a pending one gets a fresh challenge. Runs in the caller's transaction (row-level security).
 */
export async function registerHome(
  trx: Tx,
  userId: string,
  home: { name: string; url: string | null; version: string | null; key: HomeKey },
  now: Date,
): Promise<HomeRegistration> {
  const existing = await trx.selectFrom('installations').selectAll().where('device_id', '=', home.key.deviceId).executeTakeFirst();
  const challenge = randomBytes(24).toString('base64url');
  const expiresAt = new Date(now.getTime() + LINK_CHALLENGE_TTL_MS);
  let row: InstallationRow;
  if (existing) {
    const pending = existing.status === 'pending';
    row = await trx
      .updateTable('installations')
      .set({
        name: home.name,
        url: home.url,
        version: home.version,
        updated_at: now,
        ...(pending ? { challenge, challenge_expires_at: expiresAt } : { last_seen_at: now }),
      })
      .where('id', '=', existing.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  } else {
    const { count } = await trx
      .selectFrom('installations')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_INSTALLATIONS) throw new DomainError('MAXIMUM_INSTALLATIONS_REACHED', { max: MAX_INSTALLATIONS });
    row = await trx
      .insertInto('installations')
      .values({
        id: newId('installation'),
        user_id: userId,
        name: home.name,
        url: home.url,
        public_key: home.key.publicKey,
        device_id: home.key.deviceId,
        version: home.version,
        challenge,
        challenge_expires_at: expiresAt,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
      .catch((err) => {
        // The same home registered twice at once by this user.
        if (isUniqueViolation(err)) throw new DomainError('INSTALLATION_BEING_REGISTERED');
        throw err;
      });
  }
  const link =
    row.status === 'pending' && row.challenge && row.challenge_expires_at
      ? { challenge: row.challenge, message: linkMessage(row.id, userId, row.challenge), expiresAt: row.challenge_expires_at.toISOString() }
      : null;
  return { installation: installationView(row), created: !existing, link };
}

/**
 * Links a pending installation whose home signed the challenge: 404 unknown (or another user's), 400 expired
 * challenge or bad signature, 409 when another account already linked this key. Linking twice is answered with
 * the linked installation. The challenge is used once.
 */
export async function linkHome(trx: Tx, userId: string, installationId: string, signature: string, now: Date): Promise<InstallationView> {
  const row = await trx.selectFrom('installations').selectAll().where('id', '=', installationId).forUpdate().executeTakeFirst();
  if (!row) throw new DomainError('INSTALLATION_NOT_FOUND');
  if (row.status === 'linked') return installationView(row);
  if (!row.challenge || !row.challenge_expires_at || row.challenge_expires_at.getTime() <= now.getTime()) {
    throw new DomainError('LINK_CHALLENGE_EXPIRED_REGISTER_HOME');
  }
  if (!verifyLinkSignature(row.public_key, linkMessage(row.id, userId, row.challenge), signature))
    throw new DomainError('INVALID_SIGNATURE_REQUEST');
  const linked = await trx
    .updateTable('installations')
    .set({ status: 'linked', challenge: null, challenge_expires_at: null, linked_at: now, last_seen_at: now, updated_at: now })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow()
    .catch((err) => {
      if (isUniqueViolation(err, 'installations_linked_device_key')) throw new DomainError('INSTALLATION_LINKED_ANOTHER_ACCOUNT');
      throw err;
    });
  return installationView(linked);
}

export async function listInstallations(trx: Tx): Promise<InstallationView[]> {
  const rows = await trx.selectFrom('installations').selectAll().orderBy('created_at', 'desc').orderBy('id').execute();
  return rows.map(installationView);
}
