import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestChain, type TestChain, walletSalt } from '@aop/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Address, Hex, PrivateKeyAccount } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailedToken, startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';
import { buildDashboard, launchChromium, screenshot, watchPage } from './dashboard-browser.test-support.js';

// Issue #11, the sign-in pages in a real browser: OAuth buttons only where configured, `?error=` in words, password
// reset from the mailed link, and wallet sign-in through an injected EIP-1193 provider — a smart-contract wallet on a
// local chain signs in, a plain key-pair account is refused with the explanation.

const PASSWORD = 'correct horse battery staple';

let work: string;
let chain: TestChain;
let web: TestWeb;
let withProviders: TestWeb;
let browser: Browser;
let owner: PrivateKeyAccount;
let eoa: PrivateKeyAccount;
let smartWallet: Address;

/** A page whose `window.ethereum` is `account`'s wallet: requests are answered here, signatures by `signer`. */
async function pageWithWallet(context: BrowserContext, account: Address, signer: PrivateKeyAccount): Promise<Page> {
  await context.exposeFunction('__walletRequest', async (method: string, params: unknown[]) => {
    if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [account];
    if (method === 'personal_sign') return signer.signMessage({ message: { raw: params[0] as Hex } });
    throw new Error(`unsupported wallet method ${method}`);
  });
  await context.addInitScript('window.ethereum = { request: ({ method, params }) => window.__walletRequest(method, params ?? []) };');
  return context.newPage();
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-dashboard-sign-in-'));
  const dashboardDir = join(work, 'dashboard');
  await buildDashboard(dashboardDir);
  chain = await startTestChain();
  [, owner, eoa] = chain.accounts as [PrivateKeyAccount, PrivateKeyAccount, PrivateKeyAccount];
  smartWallet = await chain.deployWallet(await chain.deployWalletFactory(), owner.address, walletSalt(1));
  web = await startWeb({ DASHBOARD_DIR: dashboardDir, GATING_RPC_URL: chain.rpcUrl });
  withProviders = await startWeb({
    DASHBOARD_DIR: dashboardDir,
    IDP_CLIENT_ID: 'client',
    IDP_CLIENT_SECRET: 'secret',
    IDP_ISSUER: 'https://idp.example.test',
    CODEHOST_CLIENT_ID: 'client',
    CODEHOST_CLIENT_SECRET: 'secret',
  });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await withProviders?.close();
  await web?.close();
  await chain?.close();
  if (work) await rm(work, { recursive: true, force: true });
}, 60_000);

describe('the sign-in pages in a real browser', () => {
  it('shows the identity-provider and code-host buttons only where they are configured', async () => {
    const context = await browser.newContext({ baseURL: withProviders.url });
    const page = await context.newPage();
    const problems = watchPage(page);
    await page.goto('/login');
    await page.getByRole('link', { name: 'Continue with your organisation account' }).waitFor();
    expect(await page.getByRole('link', { name: 'Continue with your organisation account' }).getAttribute('href')).toBe('/api/auth/idp');
    expect(await page.getByRole('link', { name: 'Continue with your code-host account' }).getAttribute('href')).toBe('/api/auth/codehost');
    await screenshot(page, 'sign-in-with-providers');
    await context.close();

    const plain = await browser.newContext({ baseURL: web.url });
    const bare = await plain.newPage();
    await bare.goto('/login');
    await bare.getByRole('button', { name: 'Sign in with a smart wallet' }).waitFor();
    expect(await bare.getByRole('link', { name: /Continue with/ }).count()).toBe(0);
    await plain.close();
    expect(problems).toEqual([]);
  });

  it('explains an OAuth error from the address bar in words', async () => {
    const context = await browser.newContext({ baseURL: web.url });
    const page = await context.newPage();
    await page.goto('/login?error=AccessDenied');
    await page.getByRole('alert').filter({ hasText: 'You declined the sign-in at the provider. Nothing was changed.' }).waitFor();
    await page.goto('/login?error=SomethingNew');
    await page.getByRole('alert').filter({ hasText: 'Sign-in did not complete. Please try again.' }).waitFor();
    await context.close();
  });

  it('resets a forgotten password from the mailed link, then signs in with the new one', async () => {
    const email = 'forgetful@example.com';
    expect(
      (
        await fetch(`${web.url}/api/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password: PASSWORD }),
        })
      ).status,
    ).toBe(200);
    const context = await browser.newContext({ baseURL: web.url });
    const page = await context.newPage();
    const problems = watchPage(page);
    await page.goto('/login');
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByRole('status').waitFor();

    const token = await mailedToken(web, email, 'password-reset', '/reset-password');

    await page.goto(`/reset-password?token=${token}`);
    await page.getByLabel('New password').fill('a brand new passphrase');
    await page.getByLabel('Repeat it').fill('not the same');
    await page.getByRole('button', { name: 'Save the new password' }).click();
    await page.getByText('The two passwords are not the same.').waitFor();
    await page.getByLabel('Repeat it').fill('a brand new passphrase');
    await page.getByRole('button', { name: 'Save the new password' }).click();
    await page.waitForURL(/\/login\?reset=1/);
    await page.getByText('Your password was changed.', { exact: false }).waitFor();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('a brand new passphrase');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/dashboard$/);
    // The link worked once: it cannot be used again.
    const again = await fetch(`${web.url}/api/auth/reset-password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, password: 'yet another passphrase' }),
    });
    expect(again.status).toBe(400);
    await context.close();
    expect(problems).toEqual([]);
  });

  it('signs in with a smart-contract wallet through the injected provider (SIWE)', async () => {
    const context = await browser.newContext({ baseURL: web.url });
    const page = await pageWithWallet(context, smartWallet, owner);
    const problems = watchPage(page);
    await page.goto('/login');
    await page.getByText('Only smart-contract wallets', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Sign in with a smart wallet' }).click();
    await page.waitForURL(/\/dashboard$/);
    await page.getByRole('heading', { name: 'Your agents' }).waitFor();
    const session = await page.evaluate("fetch('/api/auth/session').then((r) => r.json())");
    expect(session).toMatchObject({
      user: { name: `Wallet:${smartWallet.toLowerCase().slice(0, 6)}...${smartWallet.toLowerCase().slice(-4)}` },
    });
    await context.close();
    expect(problems).toEqual([]);
  });

  it('refuses a plain key-pair account and says why', async () => {
    const context = await browser.newContext({ baseURL: web.url });
    const page = await pageWithWallet(context, eoa.address, eoa);
    await page.goto('/login');
    await page.getByRole('button', { name: 'Sign in with a smart wallet' }).click();
    await page.getByRole('alert').filter({ hasText: 'Only smart-contract wallets are accepted' }).waitFor();
    expect(page.url()).toMatch(/\/login$/);
    await screenshot(page, 'sign-in-wallet-refused');
    await context.close();
  });
});
