import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startWeb, type TestWeb } from '../../web.test-support.js';

const INDEX = '<!doctype html><html><body><div id="root"></div><script type="module" src="/assets/index-abc123.js"></script></body></html>';
const SCRIPT = 'console.log("dashboard");'.repeat(50);

describe('the dashboard at / (issue #11)', () => {
  let dir: string;
  let web: TestWeb;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aop-dashboard-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), SCRIPT);
    writeFileSync(join(dir, 'assets', 'index-abc123.js.br'), brotliCompressSync(SCRIPT));
    web = await startWeb({ DASHBOARD_DIR: dir });
  });

  afterAll(async () => {
    await web?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    '/',
    '/login',
    '/dashboard',
    '/agents/agt_123',
    '/workflows/wf_1',
    '/settings',
    '/reset-password?token=abc',
    '/billing?checkout=canceled',
  ])('%s answers the page, never cached', async (path) => {
    const res = await fetch(`${web.url}${path}`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(await res.text()).toBe(INDEX);
  });

  it('serves the page from memory, and the new one once a rebuild replaces it', async () => {
    const rebuilt = INDEX.replace('index-abc123.js', 'index-def456.js');
    writeFileSync(join(dir, 'index.html'), rebuilt);
    await vi.waitFor(async () => expect(await (await fetch(`${web.url}/`)).text()).toBe(rebuilt), { timeout: 5_000, interval: 100 });
    writeFileSync(join(dir, 'index.html'), INDEX);
    await vi.waitFor(async () => expect(await (await fetch(`${web.url}/`)).text()).toBe(INDEX), { timeout: 5_000, interval: 100 });
  });

  it('an unknown page gets the page with 404 (it renders "Page not found")', async () => {
    const res = await fetch(`${web.url}/no-such-page`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe(INDEX);
  });

  it('assets are immutable for a year and sent pre-compressed when the browser takes brotli', async () => {
    const res = await fetch(`${web.url}/assets/index-abc123.js`, { headers: { 'accept-encoding': 'br' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-encoding')).toBe('br');
    expect(res.headers.get('vary')).toMatch(/accept-encoding/i);
    expect(await res.text()).toBe(SCRIPT); // fetch decodes it
    const plain = await fetch(`${web.url}/assets/index-abc123.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(SCRIPT);
  });

  it('API paths, missing assets and file-like paths stay JSON 404s', async () => {
    for (const path of ['/api/no-such-route', '/assets/missing.js', '/favicon.ico', '/api']) {
      const res = await fetch(`${web.url}${path}`, { headers: { accept: 'text/html' } });
      expect(res.status, path).toBe(404);
      expect(await res.json(), path).toEqual({ error: 'Not found' });
    }
  });

  it('API routes are untouched', async () => {
    const res = await fetch(`${web.url}/api/auth/session`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ user: null });
  });

  it('path traversal out of the assets folder is refused', async () => {
    writeFileSync(join(dir, 'secret.txt'), 'not an asset');
    for (const path of ['/assets/../secret.txt', '/assets/%2e%2e/secret.txt', '/assets/..%2fsecret.txt']) {
      const res = await fetch(`${web.url}${path}`);
      expect(res.status, path).not.toBe(200);
      expect(await res.text(), path).not.toContain('not an asset');
    }
  });
});

describe('the content security policy of the pages', () => {
  it('asks browsers to upgrade to HTTPS only where the service is served over it (Secure cookies)', async () => {
    const plain = await startWeb({ COOKIE_SECURE: 'false' });
    const secure = await startWeb({ COOKIE_SECURE: 'true' });
    try {
      const plainCsp = (await fetch(`${plain.url}/api/health`)).headers.get('content-security-policy') ?? '';
      expect(plainCsp).toContain("script-src 'self'");
      expect(plainCsp).not.toContain('upgrade-insecure-requests');
      const secureCsp = (await fetch(`${secure.url}/api/health`)).headers.get('content-security-policy') ?? '';
      expect(secureCsp).toContain("script-src 'self'");
      expect(secureCsp).toContain('upgrade-insecure-requests');
    } finally {
      await plain.close();
      await secure.close();
    }
  });
});

describe('without a dashboard build', () => {
  it('pages answer 503 with how to build it; the API still works', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'aop-dashboard-empty-'));
    const web = await startWeb({ DASHBOARD_DIR: empty });
    try {
      const page = await fetch(`${web.url}/dashboard`);
      expect(page.status).toBe(503);
      expect(await page.text()).toMatch(/npm run build/);
      expect((await fetch(`${web.url}/api/health`)).status).toBe(200);
    } finally {
      await web.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('GET /api/auth/providers', () => {
  it('says which sign-in methods lead somewhere, and what a SIWE message must name', async () => {
    const bare = await startWeb({ PUBLIC_URL: 'https://agents.example.com' });
    const configured = await startWeb({
      IDP_CLIENT_ID: 'client',
      IDP_CLIENT_SECRET: 'secret',
      IDP_ISSUER: 'https://idp.example.com',
      CODEHOST_CLIENT_ID: 'client',
      CODEHOST_CLIENT_SECRET: 'secret',
    });
    try {
      const off = (await (await fetch(`${bare.url}/api/auth/providers`)).json()) as Record<string, unknown>;
      expect(off).toMatchObject({ idp: false, codehost: false, wallet: { uri: 'https://agents.example.com' } });
      expect(off.wallet).toEqual({
        chainId: bare.config.gating.chainId,
        domain: bare.config.siweDomain,
        uri: 'https://agents.example.com',
      });
      const on = (await (await fetch(`${configured.url}/api/auth/providers`)).json()) as Record<string, unknown>;
      expect(on).toMatchObject({ idp: true, codehost: true });
      // Nothing secret in it.
      expect(JSON.stringify(on)).not.toContain('secret');
    } finally {
      await bare.close();
      await configured.close();
    }
  });
});
