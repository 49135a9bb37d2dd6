import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, login, register, startWeb } from '../../apps/web/src/web.test-support.js';
import { buildDashboard, launchChromium, screenshot, signedInContext, watchedPage } from './dashboard-browser.test-support.js';

// Issue #19, "A new user who cannot go further is told before, not after": a new, non-administrator account on a
// platform with no card payments and no AI provider key for agents. The dashboard states the plan gate before any
// wizard step and how an operator enables the account; Subscribe and Buy are disabled with the reason in words; once
// the account is on a plan the wizard opens and does not offer "Platform default", because there is no platform key.

const EMAIL = 'newcomer@example.com';
const PASSWORD = 'newcomer password 1';
const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };
const PAID_PLAN_REQUIRED = 'A paid plan (solo or higher) is required to provision agents';
const NO_CARD = 'Unavailable: card payments are not configured on this server.';

let work: string;
let web: TestWeb;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];

/** The words a control's `aria-describedby` points at: what a screen reader says after its name. */
async function description(control: Locator): Promise<string> {
  const ids = (await control.getAttribute('aria-describedby')) ?? '';
  const texts = await Promise.all(
    ids
      .split(/\s+/)
      .filter(Boolean)
      .map((id) => page.locator(`[id="${id}"]`).innerText()),
  );
  return texts.join(' ').replace(/\s+/g, ' ').trim();
}

/** Both widths, one screenshot each; the page must not scroll sideways at either. */
async function bothWidths(name: string): Promise<void> {
  for (const [size, suffix] of [
    [DESKTOP, '1280'],
    [PHONE, '390'],
  ] as const) {
    await page.setViewportSize(size);
    expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await screenshot(page, `onboarding-${name}-${suffix}`);
  }
  await page.setViewportSize(DESKTOP);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-dashboard-onboarding-'));
  const dashboardDir = join(work, 'dashboard');
  await buildDashboard(dashboardDir);
  // No STRIPE_SECRET_KEY: nothing can be bought here. No backend: the agent gateway cannot be asked either.
  web = await startWeb({ DASHBOARD_DIR: dashboardDir });
  browser = await launchChromium();
  expect((await register(web.url, { email: EMAIL, password: PASSWORD, name: 'Newcomer' })).status).toBe(200);
  const { cookie } = await login(web.url, EMAIL, PASSWORD);
  context = await signedInContext(browser, web.url, cookie!);
  ({ page, problems } = await watchedPage(context));
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await web?.close();
  if (work) await rm(work, { recursive: true, force: true });
}, 60_000);

describe('a new account on a platform without billing, in a real browser', () => {
  it('the dashboard states the plan gate before the wizard, and the operator command that enables the account', async () => {
    await page.goto('/dashboard');
    await page.getByText('You have no agents yet.').waitFor();
    const gate = page.getByRole('region', { name: 'You cannot create an agent yet' });
    await gate.getByText(PAID_PLAN_REQUIRED).waitFor();
    await gate.getByText('Plans cannot be bought on this server: card payments are not configured.').waitFor();
    expect(await gate.locator('code').innerText()).toBe(`npm run cli -- plan set ${EMAIL} solo`);

    // Neither way into the wizard opens it, and each says why.
    for (const name of ['New agent', 'Create your first agent']) {
      const button = page.getByRole('button', { name });
      expect(await button.isDisabled()).toBe(true);
      expect(await description(button)).toContain(PAID_PLAN_REQUIRED);
    }
    expect(await page.getByRole('heading', { name: 'New agent' }).count()).toBe(0);

    // The plan's numbers come from the server's catalogue: an unpaid plan includes no agent (not "0 / 1"). With no
    // agent there is no gateway and no job on it: that zero is a fact.
    await page.getByText('agents: the Free plan includes none').waitFor();
    const jobs = page.locator('.stat').filter({ hasText: 'scheduled jobs' });
    await jobs.getByText('None until you have an agent.').waitFor();
    expect(await jobs.locator('.value').innerText()).toBe('0');
    await bothWidths('dashboard-gate');
  });

  it('billing: Subscribe and Buy credits are disabled with the reason, beside the operator command', async () => {
    await page.goto('/settings#billing');
    await page.getByRole('tab', { name: 'Billing and plan', selected: true }).waitFor();
    await page.getByText('Card payments are not configured.').waitFor();
    await page.locator('#card-payments-off code.operator-command').getByText(`npm run cli -- plan set ${EMAIL} solo`).waitFor();
    for (const name of ['Subscribe', 'Buy credits']) {
      const button = page.getByRole('button', { name });
      expect(await button.isDisabled()).toBe(true);
      expect(await description(button)).toBe(NO_CARD);
    }
    // Prices keep their own currency; usage says its own.
    await page.getByLabel('Solo — £29.00 a month').waitFor();
    await page.getByText('Usage is counted in US dollars (USD)', { exact: false }).waitFor();
    await bothWidths('billing-no-payments');
  });

  it('once an operator puts the account on a plan, the wizard opens, without "Platform default": the key is required', async () => {
    // What `npm run cli -- plan set newcomer@example.com solo` writes.
    await web.database.db.kysely
      .updateTable('users')
      .set({ plan: 'solo', subscription_status: 'active' })
      .where('email', '=', EMAIL)
      .execute();
    await page.goto('/dashboard');
    await page.getByText('agents on your plan (Solo)').waitFor();
    expect(await page.getByRole('region', { name: 'You cannot create an agent yet' }).count()).toBe(0);
    await page.getByRole('button', { name: 'New agent' }).click();
    await page.getByLabel('Name').fill('First agent');
    await page.getByRole('button', { name: 'Next' }).click();

    const provider = page.getByLabel('AI provider');
    const options = await provider.locator('option').allInnerTexts();
    expect(options).not.toContain('Platform default');
    expect(options).toEqual(['Choose a provider', 'OpenRouter', 'Anthropic', 'OpenAI', 'Google Gemini', 'Groq']);
    await page.getByText('This platform has no AI provider key of its own for agents').waitFor();

    // No provider, then a provider without a key: each refused in words, and the wizard stays on this step.
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('alert').filter({ hasText: 'Choose the AI provider your agent uses.' }).waitFor();
    await provider.selectOption('openai');
    await page.getByText('(required; kept sealed').waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter your API key for this provider' }).waitFor();
    expect(await page.getByLabel('AI provider').count()).toBe(1);
    await bothWidths('wizard-no-platform-key');

    await page.getByLabel(/API key/).fill('sk-own-key');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('group', { name: 'Channels' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('the scheduled-job count is the Schedule tab’s list, and says "unknown" when the agent gateway cannot be asked', async () => {
    // An agent whose gateway does not answer (nothing listens there): its jobs cannot be counted, so no 0 is shown.
    const user = await web.database.db.kysely.selectFrom('users').select('id').where('email', '=', EMAIL).executeTakeFirstOrThrow();
    await web.database.db.kysely
      .insertInto('agents')
      .values({ id: 'agt_onboarding_gone', user_id: user.id, name: 'Unreachable', status: 'running', url: 'http://127.0.0.1:9' })
      .execute();
    await page.goto('/dashboard');
    await page.getByRole('link', { name: 'Unreachable' }).waitFor();
    const jobs = page.locator('.stat').filter({ hasText: 'scheduled jobs' });
    await jobs.getByText(/^Unknown: /).waitFor();
    expect(await jobs.locator('.value').innerText()).toBe('—');
    await bothWidths('dashboard-jobs-unknown');
  });
});
