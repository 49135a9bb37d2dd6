import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { build } from 'vite';

const ROOT = resolve(import.meta.dirname, '../..');
export const SCREENSHOTS = join(ROOT, 'test-results', 'dashboard');

/** Debian's Chromium (`apt-get install chromium`); `CHROMIUM_PATH` points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Builds the dashboard the way `npm run build` does, into `outDir`, so the test serves what users get. */
export async function buildDashboard(outDir: string): Promise<void> {
  await build({
    root: join(ROOT, 'apps/dashboard'),
    configFile: join(ROOT, 'apps/dashboard/vite.config.ts'),
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true },
  });
}

/**
 * Headless Chromium as this machine's notes prescribe: no sandbox (root in CI), no GPU, and none of the background
 * connections a closed network refuses.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is required at ${CHROMIUM} for the dashboard's browser test: apt-get install chromium (or set CHROMIUM_PATH).`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/**
 * A full-page screenshot under test-results/dashboard/, kept by CI as an artefact, taken once nothing on the page is
 * still loading (a view stuck on "Loading…" fails the test here).
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.locator('.state-loading').first().waitFor({ state: 'detached', timeout: 15_000 });
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * Uncaught errors of the page and failed requests (a network failure, not an HTTP error status, which the views
 * handle): a page that "works" while it throws is not working.
 */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    // Navigation aborts the requests (and event streams) of the page it leaves: not a failure.
    if (request.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`);
  });
  return problems;
}

/** A desktop-sized browser context on `baseUrl` signed in with a session cookie (`name=value`, as login answers it). */
export async function signedInContext(
  browser: Browser,
  baseUrl: string,
  cookie: string,
  options: Parameters<Browser['newContext']>[0] = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: baseUrl, viewport: { width: 1280, height: 860 }, ...options });
  const [name, value] = cookie.split('=') as [string, string];
  await context.addCookies([{ name, value, url: baseUrl }]);
  return context;
}

/** A page of `context` whose waits give a loaded machine room, with its problems recorded (`watchPage`). */
export async function watchedPage(context: BrowserContext, timeoutMs = 15_000): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  return { page, problems: watchPage(page) };
}
