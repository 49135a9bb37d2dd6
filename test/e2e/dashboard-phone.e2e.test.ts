import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeGatewayWs, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { HostingAgentHost } from '@aop/provisioner';
import {
  type FakeHostingApi,
  type FakeStripe,
  request,
  startFakeHostingApi,
  startFakeStripe,
  startTestChain,
  type TestChain,
} from '@aop/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedCaller, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { login, register, startWeb, type TestWeb, verifyEmail } from '../../apps/web/src/web.test-support.js';
import { buildDashboard, launchChromium, screenshot, signedInContext, watchedPage } from './dashboard-browser.test-support.js';

// Issue #19, "Phone width": every page with a table or a tab bar at 390 px (an iPhone 12-15) and at 1280 px. Tables
// turn into stacked cards or scroll inside their own box, never the page; tab bars scroll and keep the selected tab in
// view; the mission-control graph stands in the middle of its card. The data is the account's own rows in the real
// web service's database (PGlite), the local Stripe stand-in and an in-process chain for the payment pages; mission
// control reads the backend, whose one agent runs at the hosting provider's stand-in behind a protocol-speaking gateway,
// so its "Recent sessions" list the gateway's real session keys.

const STRIPE_KEY = 'sk_test_dashboard_phone';
const SHARED = { INTERNAL_API_KEY: 'internal-key-for-the-phone-test', HMAC_SECRET: 'hmac-secret-for-the-phone-test' };
const GATEWAY_TOKEN = 'shared-gateway-token-for-the-phone-test';
const EMAIL = 'margaret@example.com';
const PASSWORD = 'phone width password 1';
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 860 };

let work: string;
let chain: TestChain;
let stripe: FakeStripe;
let hosting: FakeHostingApi;
let gateway: FakeGatewayWs;
let host: HostingAgentHost;
let backend: TestBackend;
let web: TestWeb;
let userId: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let agentId: string;

/** The pages with tables or tab bars, what shows once each has loaded, and how many tables it draws at least. */
const PAGES = [
  { name: 'dashboard', path: '/dashboard', ready: 'Hamilton long-running research agent', tables: 1 },
  { name: 'settings-api-keys', path: '/settings#api-keys', ready: 'Deploys from the release pipeline', tables: 1 },
  { name: 'settings-billing', path: '/settings#billing', ready: 'Usage this month by kind', tables: 1 },
  { name: 'payments', path: '/payments', ready: 'Card payments, newest first', tables: 2 },
  { name: 'costs', path: '/costs', ready: 'Hamilton long-running research agent', tables: 1 },
  { name: 'bridge', path: '/bridge', ready: 'Nightly build finished', tables: 1 },
  { name: 'mission-control', path: '/mission-control', ready: 'Dashboard chat · main', tables: 2 },
  { name: 'workflows', path: '/workflows', ready: 'Triage incoming support email', tables: 1 },
  { name: 'agent', path: '', ready: 'Agent sections', tables: 0 },
] as const;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-dashboard-phone-'));
  const dashboardDir = join(work, 'dashboard');
  await buildDashboard(dashboardDir);
  chain = await startTestChain();
  const token = await chain.deployToken({ name: 'USD Coin', symbol: 'USDC', decimals: 6 });
  stripe = await startFakeStripe({ secretKey: STRIPE_KEY });
  hosting = await startFakeHostingApi({ apiKey: 'hosting-key' });
  gateway = await startFakeGatewayWs({ token: GATEWAY_TOKEN, reply: (m) => `done: ${m}` });
  host = new HostingAgentHost({
    apiUrl: hosting.url,
    apiKey: 'hosting-key',
    projectId: 'proj-1',
    environmentId: 'env-1',
    image: 'ghcr.io/openclaw/openclaw:2026.9.6',
    dataDir: join(work, 'agents'),
    encryptionKey: randomBytes(32),
    pollMs: 20,
    readyTimeoutMs: 5_000,
    gatewayUrl: () => gateway.httpUrl,
  });
  backend = await startBackend({ ...SHARED, GATEWAY_SHARED_TOKEN: GATEWAY_TOKEN }, { host });
  web = await startWeb({
    ...SHARED,
    BACKEND_API_URL: backend.url,
    DASHBOARD_DIR: dashboardDir,
    ADMIN_EMAILS: EMAIL,
    STRIPE_SECRET_KEY: STRIPE_KEY,
    STRIPE_API_BASE: stripe.url,
    PAYMENT_RPC_URL: chain.rpcUrl,
    PAYMENT_CHAIN_ID: String(chain.chainId),
    PAYMENT_TOKEN_ADDRESS: token,
    PAYMENT_TOKEN_DECIMALS: '6',
    PAYMENT_RECIPIENT: chain.accounts[4]!.address,
  });

  expect((await register(web.url, { email: EMAIL, password: PASSWORD, name: 'Margaret' })).status).toBe(200);
  await verifyEmail(web, EMAIL);
  const db = web.database.db.kysely;
  const wallet = chain.accounts[1]!.address.toLowerCase();
  await db.updateTable('users').set({ wallet_address: wallet }).where('email', '=', EMAIL).execute();
  ({ id: userId } = await db.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow());

  // Mission control's agent: deployed through the backend as the web deploys it, then a dashboard chat turn in it
  // over the gateway's REST endpoint, as the web sends one (the OpenAI `user` is the owner tag and the session name).
  const deployed = await request(`${backend.url}/api/deployments`, {
    headers: signedCaller({ internalKey: SHARED.INTERNAL_API_KEY, hmacSecret: SHARED.HMAC_SECRET }, userId),
    json: { agentId: 'agt_phone_width_fleet', name: 'Hamilton', config: { autoProvision: true, plan: 'collective' } },
  });
  expect(deployed.status).toBe(201);
  await host.waitUntilReady('agt_phone_width_fleet', { timeoutMs: 5_000 });
  const turn = await fetch(`${gateway.httpUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openclaw', user: `aop-owner:${userId}:main`, messages: [{ role: 'user', content: 'plan the launch' }] }),
  });
  expect(turn.status).toBe(200);

  // Rows as the services write them, with the long names and model ids real accounts have.
  agentId = 'agt_phone_width_hamilton';
  const now = Date.now();
  await db
    .insertInto('agents')
    .values([
      {
        id: agentId,
        user_id: userId,
        name: 'Hamilton long-running research agent',
        model: 'openrouter/anthropic/claude-sonnet-4.5',
        status: 'running',
      },
      { id: 'agt_phone_width_apollo', user_id: userId, name: 'Apollo guidance', model: 'platform/gpt-4.1-mini', status: 'stopped' },
    ])
    .execute();
  await db
    .insertInto('usage_events')
    .values(
      [0, 1, 2].map((day) => ({
        id: `use_phone_${day}`,
        user_id: userId,
        agent_id: agentId,
        agent_name: 'Hamilton long-running research agent',
        kind: 'agent_chat',
        model: 'openrouter/anthropic/claude-sonnet-4.5',
        prompt_tokens: 1200 * (day + 1),
        completion_tokens: 340,
        total_tokens: 1200 * (day + 1) + 340,
        cost_usd: '0.004210',
        created_at: new Date(now - day * 86_400_000),
      })),
    )
    .execute();
  await db
    .insertInto('api_keys')
    .values({
      id: 'key_phone_width_0001',
      user_id: userId,
      name: 'Deploys from the release pipeline',
      key_prefix: 'sk_pHoNeWiDtH',
      key_hash: 'f'.repeat(64),
      last_used_at: new Date(now - 3_600_000),
    })
    .execute();
  await db
    .insertInto('billing_checkouts')
    .values({
      session_id: 'cs_test_phone_width_0001',
      user_id: userId,
      kind: 'plan',
      plan: 'solo',
      amount_total: 2900,
      currency: 'gbp',
      status: 'complete',
      completed_at: new Date(),
    })
    .execute();
  await db
    .insertInto('payment_sessions')
    .values({
      id: 'ses_phone_width_0001',
      user_address: wallet,
      deposit: '5',
      status: 'active',
      deposit_tx_hash: `0x${'ab'.repeat(32)}`,
      created_at: new Date(),
      last_settled_at: new Date(),
    })
    .execute();
  await db
    .insertInto('bridge_messages')
    .values({
      id: 'brg_phone_width_0001',
      sender: 'release-pipeline',
      channel: 'general',
      content: 'Nightly build finished: 412 tests passed, artefacts uploaded to the release bucket.',
      priority: 'high',
    })
    .execute();
  await db
    .insertInto('workflows')
    .values({ id: 'wf_phone_width_0001', user_id: userId, name: 'Triage incoming support email', description: 'Sorts the inbox' })
    .execute();

  browser = await launchChromium();
  const { cookie } = await login(web.url, EMAIL, PASSWORD);
  context = await signedInContext(browser, web.url, cookie!);
  ({ page, problems } = await watchedPage(context));
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await web?.close();
  await backend?.close();
  await host?.shutdown();
  await gateway?.close();
  await hosting?.close();
  await stripe?.close();
  await chain?.close();
  if (work) await rm(work, { recursive: true, force: true });
}, 60_000);

const pathOf = (p: (typeof PAGES)[number]) => p.path || `/agents/${agentId}?tab=lifecycle`;

/** Opens a page and waits until its data is on it (the text is in a table, a heading or an accessible name). */
async function open(p: (typeof PAGES)[number]): Promise<void> {
  await page.goto(pathOf(p));
  await page.getByRole('heading', { level: 1 }).waitFor();
  await page
    .locator(`:is(table, [role="tablist"]):has-text("${p.ready}"), caption:has-text("${p.ready}"), [aria-label="${p.ready}"]`)
    .first()
    .waitFor({ state: 'attached' });
  // The agent page keeps its state stream open (issue #19: the badge and buttons follow it), so its network is never
  // idle: there the data being on the page is the wait (the screenshot helper also waits out every loading state).
  if (p.name !== 'agent') await page.waitForLoadState('networkidle');
}

/** The page scrolls sideways by this many pixels (0 when everything fits the window). */
const pageOverflow = () => page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');

/**
 * Every drawn table's rows, each with its last cell: where that cell is once it has been scrolled into view (scrolling
 * its own box, not the page sideways), and whether it then lies inside the window and inside its box.
 */
async function lastCells(width: number): Promise<{ table: number; row: number; inWindow: boolean; inBox: boolean }[]> {
  const found: { table: number; row: number; inWindow: boolean; inBox: boolean }[] = [];
  const tables = page.locator('main table');
  for (let t = 0; t < (await tables.count()); t++) {
    const table = tables.nth(t);
    // A table folded away (in a closed <details>) is not drawn, so it has nothing to see.
    if (!(await table.isVisible())) continue;
    const box = table.locator('xpath=ancestor::div[contains(concat(" ", @class, " "), " table-wrap ")][1]');
    const rows = table.locator(':scope > tbody > tr');
    for (let r = 0; r < (await rows.count()); r++) {
      const cell = rows.nth(r).locator(':scope > :last-child');
      await cell.scrollIntoViewIfNeeded();
      const c = (await cell.boundingBox())!;
      const b = (await box.boundingBox())!;
      found.push({
        table: t,
        row: r,
        inWindow: c.width > 0 && c.x >= -0.5 && c.x + c.width <= width + 0.5,
        inBox: c.x >= b.x - 0.5 && c.x + c.width <= b.x + b.width + 0.5,
      });
    }
  }
  return found;
}

describe('the dashboard at phone width (390 px) and at 1280 px', () => {
  it('draws every page at 1280 px without sideways scrolling', async () => {
    await page.setViewportSize(DESKTOP);
    for (const p of PAGES) {
      await open(p);
      expect(await pageOverflow(), p.name).toBeLessThanOrEqual(0);
      await screenshot(page, `phone-${p.name}-1280`);
    }
  });

  it('at 390 px no page scrolls sideways, and the last column of every table row can be seen', async () => {
    await page.setViewportSize(PHONE);
    for (const p of PAGES) {
      await open(p);
      expect(await pageOverflow(), `${p.name}: the page scrolls sideways`).toBeLessThanOrEqual(0);
      const cells = await lastCells(PHONE.width);
      expect(new Set(cells.map((c) => c.table)).size, `${p.name}: tables`).toBeGreaterThanOrEqual(p.tables);
      for (const cell of cells)
        expect(cell, `${p.name}: last cell of table ${cell.table} row ${cell.row}`).toMatchObject({ inWindow: true, inBox: true });
      // Looking for the last cells must not have moved the page sideways either.
      expect(await page.evaluate<number>('window.scrollX'), p.name).toBe(0);
      await page.evaluate('window.scrollTo(0, 0)');
      await screenshot(page, `phone-${p.name}-390`);
    }
  });

  it('at 390 px an API key is revoked from its row: the Revoke button is on screen and answers a tap', async () => {
    await page.setViewportSize(PHONE);
    await open(PAGES[1]);
    const row = page.getByRole('row').filter({ hasText: 'Deploys from the release pipeline' });
    const revoke = row.getByRole('button', { name: 'Revoke key Deploys from the release pipeline' });
    await revoke.scrollIntoViewIfNeeded();
    const box = (await revoke.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    await revoke.click();
    await page
      .getByRole('group', { name: /Revoke “Deploys from the release pipeline”\?/ })
      .getByRole('button', { name: 'Confirm' })
      .click();
    await page.getByText('Key “Deploys from the release pipeline” revoked.').waitFor();
    await row.waitFor({ state: 'detached' });
  });

  it('at 390 px a tab bar scrolls, keeps the selected tab in view, and the arrow keys still move along it', async () => {
    await page.setViewportSize(PHONE);
    for (const [path, label, selected] of [
      ['/settings#billing', 'Settings sections', 'Billing and plan'],
      [`/agents/${agentId}?tab=lifecycle`, 'Agent sections', 'Lifecycle'],
    ] as const) {
      await page.goto(path);
      const bar = page.getByRole('tablist', { name: label });
      await bar.getByRole('tab', { name: selected, selected: true }).waitFor();
      const fits = () =>
        bar.evaluate((el, windowWidth) => {
          const b = el.getBoundingClientRect();
          const t = el.querySelector('[aria-selected="true"]')!.getBoundingClientRect();
          return {
            scrolls: el.scrollWidth > el.clientWidth,
            selectedInView: t.left >= b.left - 0.5 && t.right <= b.right + 0.5 && t.right <= windowWidth + 0.5,
          };
        }, PHONE.width);
      expect(await fits(), `${label}: the last tab, selected`).toEqual({ scrolls: true, selectedInView: true });
      // Back to the first tab by keyboard: each selected tab is scrolled into view in turn.
      await bar.getByRole('tab', { selected: true }).focus();
      const count = await bar.getByRole('tab').count();
      for (let i = 1; i < count; i++) {
        await page.keyboard.press('ArrowLeft');
        expect((await fits()).selectedInView, `${label}: after ${i} × ArrowLeft`).toBe(true);
      }
      expect(await bar.getByRole('tab').first().getAttribute('aria-selected')).toBe('true');
      expect(await page.evaluate<string | null>('document.activeElement?.getAttribute("role")')).toBe('tab');
      expect(await pageOverflow(), label).toBeLessThanOrEqual(0);
    }
  });

  it('at 390 px and at 1280 px the mission-control graph stands in the middle of its card', async () => {
    for (const viewport of [PHONE, DESKTOP]) {
      await page.setViewportSize(viewport);
      await open(PAGES[6]);
      const offset = await page.locator('.mc-graph-card').evaluate((card) => {
        const frame = card.getBoundingClientRect();
        const nodes = [...card.querySelectorAll('.mc-node')].map((n) => n.getBoundingClientRect());
        const left = Math.min(...nodes.map((n) => n.left));
        const right = Math.max(...nodes.map((n) => n.right));
        return {
          drawn: nodes.length,
          off: Math.abs((left + right) / 2 - (frame.left + frame.right) / 2),
          visible: left >= frame.left && right <= frame.right,
        };
      });
      expect(offset.drawn, `${viewport.width}`).toBeGreaterThan(0);
      expect(offset, `${viewport.width}: the graph's middle against its card's`).toMatchObject({ visible: true });
      expect(offset.off, `${viewport.width}`).toBeLessThanOrEqual(4);
    }
  });

  it("mission control names a session by its channel and session, with OpenClaw's raw key on hover and to copy", async () => {
    await page.setViewportSize(DESKTOP);
    await open(PAGES[6]);
    const key = `agent:main:openai-user:aop-owner:${userId}:main`.toLowerCase();
    const row = page.getByRole('row').filter({ hasText: 'Hamilton: Dashboard chat · main' });
    await row.getByText('Hamilton: Dashboard chat · main').waitFor();
    // Compared without case: gateways may fold session keys to lower case.
    expect((await row.getByText('Hamilton: Dashboard chat · main').getAttribute('title'))?.toLowerCase()).toBe(key);
    // The raw key is on the page as text, so it can be selected and copied; one click selects all of it.
    const raw = row.locator('code.mc-session-key');
    expect((await raw.textContent())?.toLowerCase()).toBe(key);
    await raw.click();
    expect((await page.evaluate<string>('String(window.getSelection())')).toLowerCase()).toBe(key);
    await page.setViewportSize(PHONE);
    await row.scrollIntoViewIfNeeded();
    const box = (await raw.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    expect(await pageOverflow()).toBeLessThanOrEqual(0);
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'phone-mission-control-sessions-390');
  });

  it('has no uncaught errors or failed requests', () => {
    expect(problems).toEqual([]);
  });
});
