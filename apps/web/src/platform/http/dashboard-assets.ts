import { existsSync, readFileSync, unwatchFile, watchFile } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type App, notFoundHandler } from '@aop/core';
import fastifyStatic from '@fastify/static';

/** Where `npm run build -w apps/dashboard` leaves the UI, seen from apps/web/{src,dist}/plugins. */
export const DEFAULT_DASHBOARD_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../dashboard/dist');

/**
 * The first path segments the dashboard routes itself (apps/dashboard/src/app.tsx): these answer its page with 200;
 * any other page path gets the same page with 404, which shows "Page not found".
 */
const CLIENT_ROUTES = new Set([
  '',
  'login',
  'register',
  'forgot-password',
  'reset-password',
  'dashboard',
  'agents',
  'workflows',
  'mission-control',
  'costs',
  'settings',
  // The payment provider's return address; the dashboard forwards it to /settings#billing.
  'billing',
  'bridge',
  'payments',
]);

/**
 * Serves the dashboard build at `/`: hashed files under `/assets/` for a year (immutable, pre-compressed `.br`/`.gz`
 * when the browser takes them), `index.html` for every client route, never cached so a deploy shows at once.
 * `/api/*` is untouched: unknown API paths keep their JSON 404.
 */
export async function dashboardPlugin(app: App, { dir = DEFAULT_DASHBOARD_DIR }: { dir?: string }): Promise<void> {
  const index = join(dir, 'index.html');
  const built = existsSync(index);
  if (!built) app.log.warn({ dir }, 'dashboard build not found: `npm run build` creates it; the API works without it');

  // The page is a few hundred bytes read on every navigation: keep it in memory rather than open, read and close the
  // file each time, and read it again when a rebuild replaces it (its asset names change with every build).
  let page = built ? readFileSync(index) : undefined;
  if (built) {
    watchFile(index, { interval: 1_000 }, () => {
      try {
        page = readFileSync(index);
      } catch {
        // Mid-rebuild the file may be missing for a moment: keep serving the last one until the new one lands.
      }
    });
    app.addHook('onClose', async () => unwatchFile(index));
    await app.register(fastifyStatic, {
      root: join(dir, 'assets'),
      prefix: '/assets/',
      index: false,
      preCompressed: true,
      immutable: true,
      maxAge: '365d',
    });
  }

  app.get('/*', { schema: { hide: true } }, async (request, reply) => {
    const path = request.url.split('?')[0]!;
    const segment = path.split('/')[1] ?? '';
    // API paths and file-like paths (a missing /favicon.ico, a stale asset) stay JSON 404s.
    if (segment === 'api' || segment === 'assets' || /\.[a-z0-9]+$/i.test(path)) return notFoundHandler(request, reply);
    if (!built) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The dashboard has not been built. Run `npm run build` (or `npm start`, which builds it) and reload.');
    }
    return reply
      .code(CLIENT_ROUTES.has(segment) ? 200 : 404)
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(page);
  });
}
