import { type KeyObject, generateKeyPairSync, sign } from 'node:crypto';
import { userContextHeaders } from '@aop/core';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestBackend, startBackend, signedCaller, fromAnywhere } from '../../backend.test-support.js';

// Spec §4.18 "Installations (backend, identity headers)" and §5 (internal key + signed user context): a self-hosted
// home is registered by its Ed25519 key and linked once it signs the challenge. §4.14/§9: POST /api/test-usage is gone.

const KEY = 'internal-key-for-installation-tests';
const HMAC = 'hmac-secret-for-installation-tests';

/** Headers the web service sends for a user (spec §5). */
const as = (userId: string, email?: string, role?: string) => signedCaller({ internalKey: KEY, hmacSecret: HMAC }, userId, email, role);

/** A home's identity: an Ed25519 key pair, the public key as OpenClaw carries it (raw 32 bytes, base64url). */
function homeKey(): { publicKey: string; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKey: publicKey.export({ type: 'spki', format: 'der' }).subarray(-32).toString('base64url'), privateKey };
}
const signWith = (privateKey: KeyObject, message: string) => sign(null, Buffer.from(message, 'utf8'), privateKey).toString('base64url');

describe('backend installations', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend({ INTERNAL_API_KEY: KEY, HMAC_SECRET: HMAC, TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(async () => {
    await backend?.close();
  });

  const call = (userId: string, method: string, path: string, json?: unknown, headers: Record<string, string> = as(userId)) =>
    request(`${backend.url}/api${path}`, {
      method,
      headers: { ...headers, ...fromAnywhere() },
      ...(json === undefined ? {} : { json }),
    });

  it('needs the internal key and a signed user context', async () => {
    const { authorization: _, ...unsigned } = as('usr_a');
    expect((await call('usr_a', 'GET', '/installations', undefined, unsigned)).body).toEqual({ error: 'Unauthorized' });
    const wrongKey = await call('usr_a', 'GET', '/installations', undefined, { ...as('usr_a'), authorization: 'Bearer not-the-key' });
    expect(wrongKey.status).toBe(403);
    expect(wrongKey.body).toEqual({ error: 'Forbidden' });
    const { 'x-user-signature': __, ...noSignature } = as('usr_a');
    expect((await call('usr_a', 'GET', '/installations', undefined, noSignature)).body).toEqual({ error: 'SIGNATURE_REQUIRED' });
    const forged = await call('usr_a', 'GET', '/installations', undefined, { ...as('usr_a'), 'x-user-id': 'usr_b' });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: 'INVALID_SIGNATURE' });
    const anonymous = await call(
      'anonymous',
      'POST',
      '/register-home',
      { name: 'x' },
      {
        authorization: `Bearer ${KEY}`,
        ...userContextHeaders({}, HMAC),
      },
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'User context required' });
  });

  it('POST /api/register-home validates its body', async () => {
    const key = homeKey().publicKey;
    expect((await call('usr_a', 'POST', '/register-home', {})).body).toEqual({ error: 'name is required' });
    expect((await call('usr_a', 'POST', '/register-home', { name: 'x'.repeat(101), publicKey: key })).body).toEqual({
      error: 'name must be at most 100 characters',
    });
    expect((await call('usr_a', 'POST', '/register-home', { name: 'Home' })).body).toEqual({ error: 'publicKey is required' });
    for (const publicKey of ['abc', 42, Buffer.alloc(31).toString('base64url'), `${key}AA`]) {
      expect((await call('usr_a', 'POST', '/register-home', { name: 'Home', publicKey })).body).toEqual({ error: 'Invalid publicKey' });
    }
    for (const url of ['ftp://home.example.com', 'not a url', 'https://user:pass@home.example.com', 7]) {
      expect((await call('usr_a', 'POST', '/register-home', { name: 'Home', publicKey: key, url })).body).toEqual({ error: 'Invalid url' });
    }
    expect((await call('usr_a', 'POST', '/register-home', { name: 'Home', publicKey: key, version: 'bad version!' })).body).toEqual({
      error: 'Invalid version',
    });
    // Typed by the body schema: a wrong type answers the field's own message.
    expect((await call('usr_a', 'POST', '/register-home', { name: 7, publicKey: key })).body).toEqual({ error: 'name is required' });
    expect((await call('usr_a', 'POST', '/register-home', { name: 'Home', publicKey: key, version: 3 })).body).toEqual({
      error: 'Invalid version',
    });
    expect((await call('usr_a', 'POST', '/register-link', { installationId: 5, signature: 'x' })).body).toEqual({
      error: 'installationId and signature are required',
    });
    const notJson = await request(`${backend.url}/api/register-home`, {
      method: 'POST',
      body: 'name=x',
      headers: { ...as('usr_a'), 'content-type': 'text/plain' },
    });
    expect(notJson.status).toBe(400);
  });

  const ada = homeKey();
  let adaHome: string;

  it('registers a home as pending with a challenge to sign', async () => {
    const res = await call('usr_a', 'POST', '/register-home', {
      name: ' Ada home ',
      publicKey: ada.publicKey,
      url: 'https://home.ada.example:18789/',
      version: '2026.9.6',
    });
    expect(res.status).toBe(201);
    const { installation, link } = res.body;
    expect(installation).toMatchObject({
      name: 'Ada home',
      url: 'https://home.ada.example:18789/',
      publicKey: ada.publicKey,
      deviceId: expect.stringMatching(/^[0-9a-f]{64}$/),
      version: '2026.9.6',
      status: 'pending',
      linkedAt: null,
    });
    expect(link.message).toBe(`aop-link-v1|${installation.id}|usr_a|${link.challenge}`);
    expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(9 * 60_000);
    adaHome = installation.id;
    expect((await call('usr_a', 'GET', '/installations')).body.installations).toEqual([installation]);
  });

  it('POST /api/register-link links the home only with its own signature over the challenge', async () => {
    const { link } = (await call('usr_a', 'POST', '/register-home', { name: 'Ada home', publicKey: ada.publicKey })).body;
    expect((await call('usr_a', 'POST', '/register-link', { installationId: adaHome })).body).toEqual({
      error: 'installationId and signature are required',
    });
    const intruder = homeKey();
    const wrongKey = await call('usr_a', 'POST', '/register-link', {
      installationId: adaHome,
      signature: signWith(intruder.privateKey, link.message),
    });
    expect(wrongKey.status).toBe(400);
    expect(wrongKey.body).toEqual({ error: 'Invalid signature' });
    // A signature for another account (or another challenge) does not link this one.
    const otherAccount = link.message.replace('|usr_a|', '|usr_b|');
    expect(
      (await call('usr_a', 'POST', '/register-link', { installationId: adaHome, signature: signWith(ada.privateKey, otherAccount) }))
        .status,
    ).toBe(400);
    expect((await call('usr_a', 'POST', '/register-link', { installationId: adaHome, signature: 'not-a-signature' })).status).toBe(400);

    const ok = await call('usr_a', 'POST', '/register-link', {
      installationId: adaHome,
      signature: signWith(ada.privateKey, link.message),
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ success: true, installation: { id: adaHome, status: 'linked', linkedAt: expect.any(String) } });
    // Linking again answers the linked installation.
    const again = await call('usr_a', 'POST', '/register-link', { installationId: adaHome, signature: 'anything' });
    expect(again.body.installation.status).toBe('linked');

    // Registering the linked home again refreshes its details; no challenge is handed out.
    const refresh = await call('usr_a', 'POST', '/register-home', { name: 'Ada attic', publicKey: ada.publicKey, version: '2026.10.1' });
    expect(refresh.status).toBe(200);
    expect(refresh.body.link).toBeNull();
    expect(refresh.body.installation).toMatchObject({ id: adaHome, name: 'Ada attic', version: '2026.10.1', status: 'linked' });
  });

  it('keeps users apart: another user neither sees nor links the home, nor takes its key', async () => {
    expect((await call('usr_b', 'GET', '/installations')).body).toEqual({ installations: [] });
    const foreign = await call('usr_b', 'POST', '/register-link', { installationId: adaHome, signature: 'x'.repeat(86) });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'Installation not found' });
    // Even holding the key, a home linked to one account cannot be linked to a second one.
    const claim = await call('usr_b', 'POST', '/register-home', { name: 'Mine now', publicKey: ada.publicKey });
    expect(claim.status).toBe(201);
    const linked = await call('usr_b', 'POST', '/register-link', {
      installationId: claim.body.installation.id,
      signature: signWith(ada.privateKey, claim.body.link.message),
    });
    expect(linked.status).toBe(409);
    expect(linked.body).toEqual({ error: 'Installation is linked to another account' });
    const mine = await call('usr_a', 'GET', '/installations');
    expect(mine.body.installations.map((i: { id: string }) => i.id)).toEqual([adaHome]);
  });

  it('an expired challenge cannot be answered', async () => {
    const home = homeKey();
    const { installation, link } = (await call('usr_c', 'POST', '/register-home', { name: 'Late', publicKey: home.publicKey })).body;
    await backend.database.db.kysely
      .updateTable('installations')
      .set({ challenge_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', installation.id)
      .execute();
    const res = await call('usr_c', 'POST', '/register-link', {
      installationId: installation.id,
      signature: signWith(home.privateKey, link.message),
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Link challenge expired: register the home again' });
    // Registering again issues a fresh challenge that works.
    const fresh = (await call('usr_c', 'POST', '/register-home', { name: 'Late', publicKey: home.publicKey })).body;
    expect(fresh.link.challenge).not.toBe(link.challenge);
    const ok = await call('usr_c', 'POST', '/register-link', {
      installationId: installation.id,
      signature: signWith(home.privateKey, fresh.link.message),
    });
    expect(ok.body.installation.status).toBe('linked');
  });

  it('caps installations per user (429)', async () => {
    for (let i = 0; i < 20; i++) {
      expect((await call('usr_many', 'POST', '/register-home', { name: `Home ${i}`, publicKey: homeKey().publicKey })).status).toBe(201);
    }
    const over = await call('usr_many', 'POST', '/register-home', { name: 'One more', publicKey: homeKey().publicKey });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'Maximum of 20 installations reached' });
  });

  it('POST /api/test-usage is removed: 404 with or without credentials', async () => {
    for (const headers of [as('usr_a'), {}]) {
      const res = await call('usr_a', 'POST', '/test-usage', { tokens: 5 }, headers);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Not found' });
    }
  });
});
