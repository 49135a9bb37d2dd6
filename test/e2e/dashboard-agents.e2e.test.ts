import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAgentHost } from '@aop/provisioner';
import { request } from '@aop/testing';
import type { Browser, BrowserContext, Page, Request as PageRequest } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeRuntimeHost, startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';
import { buildDashboard, launchChromium, screenshot, signedInContext, watchedPage } from './dashboard-browser.test-support.js';

// Issue #19, "Many agents per customer" and "Status that is true", in a real browser: one customer with two agents on
// the local host (the stand-in OpenClaw CLI, whose /readyz says "not ready" for 1.5 s after each start), the real web
// and backend on PGlite. Each agent page acts on its own agent; the badge, the health card and the buttons follow the
// state machine the event stream pushes; a button that cannot be used now is disabled and says why.

// The backend trusts the web's address (as `npm start` sets it up), and the web its callers': each test's browser
// gives an address of its own (`X-Forwarded-For`), since the backend's limit is 120 calls a minute per client (spec
// §8) and one automated browser does in a minute what a person does in ten.
const SHARED = {
  INTERNAL_API_KEY: 'internal-key-for-the-agents-page',
  HMAC_SECRET: 'hmac-secret-for-the-agents-page',
  TRUST_PROXY: '127.0.0.1',
};
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 860 };

let work: string;
let host: LocalAgentHost;
let backend: TestBackend;
let web: TestWeb;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let first: string;
let second: string;
let session: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-dashboard-agents-'));
  const dashboardDir = join(work, 'dashboard');
  await buildDashboard(dashboardDir);
  host = await fakeRuntimeHost(work, { readyDelayMs: 1_500, gatewayProtocol: true });
  backend = await startBackend(SHARED, { host });
  web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, DASHBOARD_DIR: dashboardDir });
  const { cookie } = await web.signIn({ name: 'Grace', plan: 'collective' });
  session = cookie;
  const provision = async (name: string) => {
    const res = await request(`${web.url}/api/provision`, { json: { name, autoProvision: true }, headers: { cookie } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await host.waitUntilReady(res.body.agentId, { timeoutMs: 15_000 });
    return res.body.agentId as string;
  };
  first = await provision('Research assistant');
  second = await provision('Support desk');

  browser = await launchChromium();
  context = await signedInContext(browser, web.url, cookie, { viewport: DESKTOP });
  ({ page, problems } = await watchedPage(context, 20_000));
}, 120_000);

let client = 0;
beforeEach(async () => {
  client += 1;
  await context.setExtraHTTPHeaders({ 'x-forwarded-for': `203.0.113.${client}` });
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await web?.close();
  await backend?.close();
  await host?.shutdown();
  if (work) await rm(work, { recursive: true, force: true });
}, 60_000);

const panel = () => page.getByRole('tabpanel', { name: 'Lifecycle' });
const action = (label: string) => panel().getByRole('button', { name: label, exact: true });
const badge = () => page.getByRole('region', { name: 'Agent details' }).locator('.badge').first();
/** Waits until the page's status badge (the state the event stream pushed) reads `state`. */
const badgeSays = (state: string) =>
  page
    .getByRole('region', { name: 'Agent details' })
    .locator('.badge', { hasText: new RegExp(`^${state}$`) })
    .waitFor();

/** The words a disabled button is described by (`aria-describedby`), and its tooltip: both must say why. */
async function whyOff(label: string): Promise<{ disabled: boolean; title: string | null; description: string | null }> {
  const button = action(label);
  const describedBy = await button.getAttribute('aria-describedby');
  return {
    disabled: await button.isDisabled(),
    title: await button.getAttribute('title'),
    description: describedBy ? await page.locator(`[id="${describedBy}"]`).textContent() : null,
  };
}

/** Screenshots of the page as it is, at desktop width and then at phone width (the page is left at desktop width). */
async function atBothWidths(desktop: string, phone: string): Promise<void> {
  await screenshot(page, desktop);
  await page.setViewportSize(PHONE);
  await screenshot(page, phone);
  await page.setViewportSize(DESKTOP);
}

async function openLifecycle(agentId: string): Promise<void> {
  await page.goto(`/agents/${agentId}?tab=lifecycle`);
  await page.getByRole('heading', { name: 'Health' }).waitFor();
}

describe('two agents of one customer in the dashboard', () => {
  it('lists both, live, with the primary one marked; the scheduled jobs are those of both', async () => {
    // A job on each agent's gateway (the stand-in gateway lists `<state>/cron-jobs.json`): the first has one, the
    // second two. The count is theirs together, not the primary agent's alone.
    const job = (id: string) => ({ id, name: id, enabled: true, schedule: { kind: 'every', everyMs: 3_600_000 } });
    await writeFile(join(host.paths(first).state, 'cron-jobs.json'), JSON.stringify([job('first-a')]));
    await writeFile(join(host.paths(second).state, 'cron-jobs.json'), JSON.stringify([job('second-a'), job('second-b')]));
    await page.goto('/dashboard');
    const jobs = page.locator('.stat').filter({ hasText: 'scheduled jobs' });
    await jobs.getByText('scheduled jobs on 2 agents').waitFor();
    expect(await jobs.locator('.value').innerText()).toBe('3');
    const rows = page.getByRole('row');
    await rows.filter({ hasText: 'Research assistant' }).locator('[data-agent-state="live"]').waitFor();
    await rows.filter({ hasText: 'Support desk' }).locator('[data-agent-state="live"]').waitFor();
    // The agent provisioned last is the account's primary one until the customer chooses.
    expect(await rows.filter({ hasText: 'Support desk' }).textContent()).toContain('(primary)');
    expect(await rows.filter({ hasText: 'Research assistant' }).textContent()).not.toContain('(primary)');
    await screenshot(page, 'agents-01-list-1280');
  });

  it('mission control says what its line measures: two agents that never messaged each other are not shown talking', async () => {
    await page.goto('/mission-control');
    // No message passed between them, so the line is the orchestrator's link by the other's share of the work.
    const connections = page.getByRole('table', { name: /^Connections/ });
    await connections.getByText('Your agents have not messaged each other in the last 7 days.', { exact: false }).waitFor();
    expect(await connections.getByRole('columnheader').allInnerTexts()).toEqual(['From', 'To', 'Share of recent work']);
    expect(await connections.getByRole('row').filter({ hasText: 'Support desk' }).innerText()).toContain('Research assistant');
    await page.locator('.mc-legend').getByText("line width: the agent's share of the fleet's recent work").waitFor();
    await atBothWidths('agents-01b-mission-control-1280', 'agents-01c-mission-control-390');
  });

  it("each agent page acts on its own agent: Lifecycle buttons and Health card name this page's agent", async () => {
    await openLifecycle(first);
    await panel().getByText(first, { exact: true }).waitFor();
    await panel().getByText('the gateway answers /readyz').waitFor();
    expect(await badge().textContent()).toBe('live');
    // Live: Start is off and says why; the others are on.
    expect(await whyOff('Start')).toEqual({
      disabled: true,
      title: 'The agent is already running.',
      description: 'The agent is already running.',
    });
    for (const label of ['Stop', 'Restart', 'Update', 'Repair', 'Reset memory'])
      expect(await action(label).isDisabled(), label).toBe(false);
    // Not the old "acts on your account's deployed agent, which is another agent".
    expect(await page.content()).not.toContain('another agent');
    await screenshot(page, 'agents-02-first-live-1280');
  });

  it('stops the first: it says stopped (not degraded), only Start/Update/Repair stay on, and the second stays live', async () => {
    await action('Stop').click();
    await panel().getByRole('button', { name: 'Confirm' }).click();
    await panel().getByRole('status').filter({ hasText: 'Stop done; the agent is stopped' }).waitFor();
    await badgeSays('stopped');
    expect(await panel().textContent()).not.toContain('degraded');
    // The health card says what a stopped agent's gateway does: nothing, not "ready" left over from before.
    await panel().getByText('not answering', { exact: true }).waitFor();
    expect((await host.status(first)).status).toBe('stopped');
    expect(await whyOff('Stop')).toEqual({
      disabled: true,
      title: 'The agent is already stopped.',
      description: 'The agent is already stopped.',
    });
    expect(await whyOff('Restart')).toMatchObject({ disabled: true, title: 'The agent is stopped; use Start.' });
    expect(await whyOff('Reset memory')).toMatchObject({ disabled: true, title: 'The agent is stopped; start it first.' });
    for (const label of ['Start', 'Update', 'Repair']) expect(await action(label).isDisabled(), label).toBe(false);
    await screenshot(page, 'agents-03-first-stopped-1280');
    // Its chat says what the state means for a message before one is sent (issue #19).
    await page.getByRole('tab', { name: 'Chat' }).click();
    await page.getByRole('status').filter({ hasText: 'The agent is stopped: start it on the Lifecycle tab to chat.' }).waitFor();
    // Its Send is off, and says why beside it: the web would refuse the message.
    expect(await page.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
    await page.getByText('Start the agent on the Lifecycle tab to send a message.').waitFor();
    await page.getByText('No messages in session “main” yet.', { exact: true }).waitFor();
    // Typing to a stopped agent starts nothing: stopped is its owner's choice (only a sleeping agent wakes ahead).
    await page.getByRole('textbox', { name: 'Message' }).fill('Anyone there?');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await host.status(first)).status).toBe('stopped');
    await page.getByRole('textbox', { name: 'Message' }).fill('');
    await atBothWidths('agents-03b-first-stopped-chat-1280', 'agents-03c-first-stopped-chat-390');

    // The second agent is untouched: live, with its own buttons.
    expect((await host.status(second)).status).toBe('running');
    await openLifecycle(second);
    await panel().getByText(second, { exact: true }).waitFor();
    await badgeSays('live');
    expect(await whyOff('Start')).toMatchObject({ disabled: true, title: 'The agent is already running.' });
    for (const label of ['Stop', 'Restart', 'Update', 'Repair', 'Reset memory'])
      expect(await action(label).isDisabled(), label).toBe(false);
    await atBothWidths('agents-04-second-live-1280', 'agents-05-second-live-390');

    await page.goto('/dashboard');
    await page.getByRole('row').filter({ hasText: 'Research assistant' }).locator('[data-agent-state="stopped"]').waitFor();
    await page.getByRole('row').filter({ hasText: 'Support desk' }).locator('[data-agent-state="live"]').waitFor();
    // The stopped agent's jobs cannot be read: counted are the running one's, and the card names the one left out.
    const jobs = page.locator('.stat').filter({ hasText: 'scheduled jobs' });
    await jobs.getByText('scheduled jobs on 1 of 2 agents').waitFor();
    expect(await jobs.locator('.value').innerText()).toBe('2');
    expect(await jobs.locator('.hint').innerText()).toBe('Not counted: Research assistant (stopped).');
    await atBothWidths('agents-06-list-one-stopped-1280', 'agents-07-list-one-stopped-390');
  });

  it('starts the first again: the page follows starting → live, and Start answers only once it is live', async () => {
    // A heartbeat saved while it is stopped is kept by the platform (its gateway is down), and the start puts it there.
    await page.goto(`/agents/${first}?tab=schedule`);
    await badgeSays('stopped');
    await page.getByText('Platform heartbeat: its job on the gateway is not read while the agent is stopped', { exact: false }).waitFor();
    await page.getByLabel('Heartbeat frequency').selectOption('2h');
    await page.getByRole('button', { name: 'Save heartbeat' }).click();
    await page.getByText('saved in the platform settings; starting the agent puts it on its gateway.', { exact: false }).waitFor();
    // Its jobs are not listed (its gateway is down), which is said as what it is, not as a failure; a job waits for its start.
    await page.getByText('Not listed while the agent is stopped.').waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Add job' }).isDisabled()).toBe(true);
    await atBothWidths('agents-07b-first-stopped-heartbeat-saved-1280', 'agents-07c-first-stopped-heartbeat-saved-390');

    await openLifecycle(first);
    await badgeSays('stopped');
    await action('Start').click();
    await panel().getByRole('button', { name: 'Confirm' }).click();
    // While the call waits, every button is off with the reason.
    expect(await whyOff('Stop')).toMatchObject({ disabled: true, title: 'Start is in progress.' });
    await panel().getByRole('status').filter({ hasText: 'Start done; the agent is live' }).waitFor({ timeout: 30_000 });
    // Live on the page means the gateway is ready now.
    const state = await host.status(first);
    expect((await fetch(`${state.url}/readyz`)).status).toBe(200);
    await badgeSays('live');
    expect(await whyOff('Start')).toMatchObject({ disabled: true });
    expect(await action('Stop').isDisabled()).toBe(false);
    await page.setViewportSize(PHONE);
    await screenshot(page, 'agents-08-first-live-again-390');
    await page.setViewportSize(DESKTOP);

    // The heartbeat saved while it was stopped is on its gateway now (put there just after the start answered).
    await expect
      .poll(async () => (await request(`${web.url}/api/heartbeat?agentId=${first}`, { headers: { cookie: session } })).body, {
        timeout: 10_000,
      })
      .toMatchObject({ source: 'gateway', frequency: '2h' });
    await page.goto(`/agents/${first}?tab=schedule`);
    await page.getByText('Platform heartbeat: the “platform-heartbeat” job on the gateway.', { exact: false }).waitFor();
    expect(await page.getByLabel('Heartbeat frequency').inputValue()).toBe('2h');
  }, 60_000);

  it('the customer chooses the primary agent on its page', async () => {
    await page.goto(`/agents/${first}?tab=devices`);
    const details = page.getByRole('region', { name: 'Agent details' });
    // Devices are this page's agent's, primary or not (`/api/devices?agentId=`): the stand-in gateway speaks no device
    // protocol, so the lists come from the record, empty, and nothing offers to switch the primary agent instead.
    // (It answers after the web's gateway timeout, 10 s, when the stand-in never completes the handshake.)
    await page.getByRole('heading', { name: 'Waiting for approval (0)' }).waitFor({ timeout: 30_000 });
    expect(await page.getByRole('button', { name: 'Make this agent primary' }).count()).toBe(0);
    await details.getByRole('button', { name: 'Make primary' }).click();
    await details.getByText('Yes: your account’s primary agent').waitFor();
    expect((await request(`${web.url}/api/user/runtime`, { headers: { cookie: session } })).body.instanceId).toBe(first);
    await page.getByRole('tab', { name: 'Lifecycle' }).click();
    await page.getByRole('heading', { name: 'Health' }).waitFor();
    await screenshot(page, 'agents-09-first-primary-1280');
  });

  it("the configuration tab edits this agent's own configuration: the log level reaches its gateway, not the other's", async () => {
    const gatewayFile = async (agentId: string) => JSON.parse(await readFile(host.paths(agentId).config, 'utf8'));
    const firstBefore = await gatewayFile(first);
    await page.goto(`/agents/${second}?tab=config`);
    await page.getByText('The configuration of “Support desk” only').waitFor();
    expect(await page.content()).not.toContain('applies to all of your agents');
    // The model line is the applied configuration's: these agents have no provider key and name no model.
    expect(await page.getByTestId('applied-model').textContent()).toContain('OpenClaw’s default');
    expect((await gatewayFile(second)).agents.defaults.model).toBeUndefined();
    await page.getByLabel('Log level').fill('debug');
    await page.getByRole('button', { name: 'Save configuration' }).click();
    await page.getByText('Configuration saved. The previous configuration was kept as a backup.').waitFor();
    // The stand-in answers no `config.get`: what the gateway runs with is the file its host wrote (OpenClaw reloads it).
    expect((await gatewayFile(second)).logging.level).toBe('debug');
    expect(await gatewayFile(first)).toEqual(firstBefore);
    await page
      .getByRole('button', { name: /^Diff with the backup from/ })
      .first()
      .click();
    await page
      .locator('ins', { hasText: '"debug"' })
      .or(page.locator('del', { hasText: '"debug"' }))
      .first()
      .waitFor();
    await screenshot(page, 'agents-10-second-config-1280');
    await page.setViewportSize(PHONE);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    await screenshot(page, 'agents-11-second-config-390');
    await page.setViewportSize(DESKTOP);

    // The first agent's tab shows its own configuration, without the second's change and with no backups.
    await page.goto(`/agents/${first}?tab=config`);
    await page.getByText('The configuration of “Research assistant” only').waitFor();
    expect(await page.getByLabel('Log level').inputValue()).toBe('');
    await page.getByText('No backups yet.', { exact: false }).waitFor();
  });

  // Issue #20: a wake is a cold start, so the chat starts it when its owner begins typing, not when the message goes.
  it('a sleeping agent wakes when its owner starts typing to it, before anything is sent', async () => {
    await host.hibernate(second);
    await page.goto(`/agents/${second}?tab=chat`);
    await badgeSays('hibernated');
    const asleep = page
      .getByRole('status')
      .filter({ hasText: 'The agent is asleep after being idle. It starts waking as you type a message' });
    await asleep.waitFor();
    // Reading the page wakes nothing.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await host.status(second)).status).toBe('hibernated');
    await atBothWidths('agents-12-second-asleep-chat-1280', 'agents-12b-second-asleep-chat-390');

    const box = page.getByRole('textbox', { name: 'Message' });
    await box.pressSequentially('Good morning');
    // The agent leaves its sleep at the first keystrokes (the stand-in's /readyz says "not ready" for 1.5 s): the page
    // says so, then follows it to live; nothing was sent meanwhile.
    await page
      .getByRole('status')
      .filter({ hasText: /waking now that you are typing|The agent is starting/ })
      .first()
      .waitFor();
    await screenshot(page, 'agents-13-second-waking-chat-1280');
    await badgeSays('live');
    expect((await host.status(second)).status).toBe('running');
    const stored = await request(`${web.url}/api/chat?agentId=${second}`, { headers: { cookie: session } });
    expect(stored.status).toBe(200);
    expect(stored.body.messages.map((m: { content: string }) => m.content)).not.toContain('Good morning');
    expect(await box.inputValue()).toBe('Good morning');
    // Once live, the chat shows no notice: the message goes at once.
    expect(await page.getByRole('status').filter({ hasText: 'asleep' }).count()).toBe(0);
  });

  // A skipped run has a run time like one that ran: the Schedule tab says it was skipped, and why, in words.
  it('the schedule says a heartbeat OpenClaw skipped was skipped, and why', async () => {
    const at = Date.now() - 5 * 60_000;
    const file = join(host.paths(second).state, 'cron-jobs.json');
    const jobs = JSON.parse(await readFile(file, 'utf8')) as unknown[];
    // As openclaw@2026.9.6 lists the heartbeat of an agent without a messaging channel.
    const beat = {
      id: 'hb-main',
      name: 'heartbeat-main',
      declarationKey: 'heartbeat:main',
      enabled: true,
      system: true,
      schedule: { kind: 'every', everyMs: 1_800_000 },
      sessionTarget: 'main',
      payload: { kind: 'heartbeat' },
      state: { nextRunAtMs: at + 1_800_000, lastRunAtMs: at, lastRunStatus: 'skipped', lastError: 'heartbeat skipped: no-route' },
    };
    await writeFile(file, JSON.stringify([...jobs, beat]));
    try {
      await page.goto(`/agents/${second}?tab=schedule`);
      const row = page.getByRole('row').filter({ hasText: 'heartbeat-main' });
      await row.getByText('skipped: nowhere to deliver it (no messaging channel or owner)', { exact: false }).waitFor();
      // The heartbeat section says it too.
      await page.getByText(/Its last beat \(.+\) was skipped: nowhere to deliver it/).waitFor();
      await screenshot(page, 'agents-14-second-schedule-skipped-1280');
      await page.setViewportSize(PHONE);
      await row.getByText('skipped: nowhere to deliver it', { exact: false }).waitFor();
      await screenshot(page, 'agents-15-second-schedule-skipped-390');
      await page.setViewportSize(DESKTOP);
      // A job that ran, or never ran, shows its time only.
      expect(await page.getByRole('row').filter({ hasText: 'second-a' }).textContent()).not.toContain('skipped');
    } finally {
      await writeFile(file, JSON.stringify(jobs));
    }
  });

  // A sleeping agent's jobs are on its stopped gateway: the tab says so (not as an error), reading wakes nothing, and a
  // change made here wakes it, is made on its gateway, and the jobs are listed once it is live.
  it("a sleeping agent's schedule says it sleeps; adding a job wakes it and the job is there", async () => {
    await host.hibernate(second);
    await page.goto(`/agents/${second}?tab=schedule`);
    await badgeSays('hibernated');
    const notice = page.getByRole('status').filter({ hasText: 'The agent is asleep after being idle: its jobs and heartbeat are kept' });
    await notice.waitFor();
    await page.getByText('Not listed while the agent sleeps.').waitFor();
    await page.getByText('Platform heartbeat: its job on the gateway is not read while the agent sleeps', { exact: false }).waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await host.status(second)).status).toBe('hibernated');
    await screenshot(page, 'agents-16-second-asleep-schedule-1280');
    await page.setViewportSize(PHONE);
    await notice.waitFor();
    await screenshot(page, 'agents-16b-second-asleep-schedule-390');
    await page.setViewportSize(DESKTOP);

    await page.getByLabel('Job name').fill('Morning digest');
    await page.getByLabel('Schedule type').selectOption('every');
    await page.getByLabel('Every', { exact: true }).fill('1');
    await page.getByLabel('Unit').selectOption('days');
    await page.getByLabel('Message text').fill('Send me the morning digest');
    await page.getByRole('button', { name: 'Add job' }).click();
    await page.getByText('Waking the agent, then adding…').waitFor();
    await page.getByText('Added “Morning digest”.').waitFor({ timeout: 20_000 });
    await badgeSays('live');
    // Listed from its gateway once it is live, without a reload of the page.
    await page
      .getByRole('row')
      .filter({ hasText: 'Morning digest' })
      .waitFor()
      .catch(async (err: Error) => {
        const listed = await request(`${web.url}/api/cron?agentId=${second}`, { headers: { cookie: session } });
        throw new Error(
          `${err.message}\nthe page: ${await page.locator('main').innerText()}\nGET /api/cron: ${JSON.stringify(listed.body)}`,
        );
      });
    expect(await notice.count()).toBe(0);
    expect((await host.status(second)).status).toBe('running');
    const jobs = JSON.parse(await readFile(join(host.paths(second).state, 'cron-jobs.json'), 'utf8')) as { name: string }[];
    expect(jobs.map((job) => job.name)).toContain('Morning digest');
    await screenshot(page, 'agents-17-second-woken-schedule-1280');

    // Asleep again, the tab opened afresh: the notice's button wakes it, and its jobs are listed once it is live.
    await host.hibernate(second);
    await page.goto(`/agents/${second}?tab=schedule`);
    await badgeSays('hibernated');
    await page.getByText('Not listed while the agent sleeps.').waitFor();
    await page.getByRole('button', { name: 'Wake it to list its jobs' }).click();
    await badgeSays('live');
    await page.getByRole('row').filter({ hasText: 'Morning digest' }).waitFor();
    expect(await notice.count()).toBe(0);
  });

  // Saving a sleeping agent's configuration, or looking at its devices, does not wake it: the tabs say so.
  it("a sleeping agent's Devices and Configuration tabs say what a change does while it sleeps", async () => {
    // Asleep with a job due in an hour: the status says when its host wakes it (the wake lead ahead of the job).
    const dueAt = Date.now() + 3_600_000;
    await host.hibernate(second, dueAt);
    await page.goto(`/agents/${second}?tab=devices`);
    await badgeSays('hibernated');
    const wakes = await page.getByTestId('wakes-at').textContent();
    // One statement with the reason above it: "…the next message or its next scheduled job wakes it" / "That job wakes it by …".
    expect(await page.getByRole('region', { name: 'Agent details' }).locator('.agent-state .hint').first().textContent()).toBe(
      'asleep after being idle: the next message or its next scheduled job wakes it',
    );
    expect(wakes).toMatch(/^That job wakes it by .+\.$/);
    expect(wakes).toContain(await page.evaluate((at) => new Date(at).toLocaleString(), dueAt - 90_000));
    // Its devices are not read again while it sleeps (its gateway is down: each read would answer the same record, and
    // log on the server), and are read at once when it is live again.
    const reads: string[] = [];
    const onRequest = (sent: PageRequest) => {
      if (new URL(sent.url()).pathname === '/api/devices') reads.push(sent.url());
    };
    page.on('request', onRequest);
    try {
      await new Promise((resolve) => setTimeout(resolve, 11_000)); // longer than the tab's 10 s between reads
      expect(reads).toEqual([]);
      await host.start(second);
      await badgeSays('live');
      await expect.poll(() => reads.length, { timeout: 5_000 }).toBeGreaterThan(0);
    } finally {
      page.off('request', onRequest);
    }
    expect(await page.getByTestId('wakes-at').count()).toBe(0);
    await host.hibernate(second);
    await badgeSays('hibernated');
    expect(await page.getByTestId('wakes-at').textContent()).toBe('No job is due: nothing is scheduled to wake it.');
    await page.getByRole('status').filter({ hasText: 'these are its devices as last seen' }).waitFor();
    await atBothWidths('agents-18-second-asleep-devices-1280', 'agents-18b-second-asleep-devices-390');

    await page.goto(`/agents/${second}?tab=config`);
    await badgeSays('hibernated');
    await page.getByRole('status').filter({ hasText: 'its gateway takes it when the agent next wakes' }).waitFor();
    await page.getByLabel('Log level').fill('warn');
    await page.getByRole('button', { name: 'Save configuration' }).click();
    await page
      .getByText('Configuration saved. The previous configuration was kept as a backup. The agent is asleep: its gateway takes it')
      .waitFor();
    // A log level does not decide its next wake: it sleeps on, with the change kept for its gateway.
    expect((await host.status(second)).status).toBe('hibernated');
    expect(((await host.spec(second)).config.logging as { level?: string }).level).toBe('warn');
    await atBothWidths('agents-19-second-asleep-config-1280', 'agents-19b-second-asleep-config-390');
    // Its gateway takes it when it wakes.
    await host.start(second);
    await host.waitUntilReady(second, { timeoutMs: 15_000 });
    expect(JSON.parse(await readFile(host.paths(second).config, 'utf8')).logging.level).toBe('warn');
  }, 60_000);

  it("an agent whose gateway's scheduler does not start says so: degraded, why, Restart on; a restart that brings it up is live", async () => {
    // The stand-in prints OpenClaw's `[cron] failed to start: …` at every start while `<state>/scheduler-fails` exists:
    // the host starts it again twice, then leaves it answering chat without its scheduler, and says so.
    const marker = join(host.paths(first).state, 'scheduler-fails');
    await writeFile(marker, '');
    await openLifecycle(first);
    await badgeSays('live');
    await action('Restart').click();
    await panel().getByRole('button', { name: 'Confirm' }).click();
    // The restart is one start to the page, through the host's own starts again: it ends degraded, not stopped.
    await panel().getByRole('status').filter({ hasText: 'Restart done; the agent is degraded' }).waitFor({ timeout: 30_000 });
    await badgeSays('degraded');
    await panel()
      .getByText(
        "the gateway answers, but OpenClaw's scheduler did not start: scheduled jobs and heartbeats do not run until the agent is restarted",
      )
      .waitFor();
    expect((await readFile(join(host.paths(first).state, 'starts.txt'), 'utf8')).split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(
      3,
    );
    for (const label of ['Stop', 'Restart', 'Update', 'Repair', 'Reset memory'])
      expect(await action(label).isDisabled(), label).toBe(false);
    await atBothWidths('agents-20-first-scheduler-down-1280', 'agents-20b-first-scheduler-down-390');

    await rm(marker);
    await action('Restart').click();
    await panel().getByRole('button', { name: 'Confirm' }).click();
    await panel().getByRole('status').filter({ hasText: 'Restart done; the agent is live' }).waitFor({ timeout: 30_000 });
    await badgeSays('live');
    expect((await host.status(first)).schedulerDown).toBeNull();
  });

  it('a fleet that is all asleep: the jobs card says why once for both, mission control draws both agents asleep', async () => {
    await host.hibernate(first);
    if ((await host.status(second)).status !== 'hibernated') await host.hibernate(second);
    await page.goto('/dashboard');
    const jobs = page.locator('.stat').filter({ hasText: 'scheduled jobs' });
    const hint = jobs.locator('.hint').filter({ hasText: /^Unknown: / });
    await hint.waitFor();
    // Both names, then the reason once; their gateways are not asked while they sleep.
    expect(await hint.innerText()).toMatch(/^Unknown: (Research assistant, Support desk|Support desk, Research assistant) \(asleep\)\.$/);
    // None runs, and the card says where the others are.
    const running = page.locator('.stat').filter({ hasText: 'running now' });
    expect(await running.locator('.value').innerText()).toBe('0');
    await running.getByText('2 asleep after being idle: a message or their next due job wakes each').waitFor();
    await atBothWidths('agents-21a-fleet-asleep-dashboard-1280', 'agents-21c-fleet-asleep-dashboard-390');

    // Not the spec's "none reachable" stand-in node: the user's own agents, asleep, with no load to show.
    await page.goto('/mission-control');
    const agents = page.getByRole('table', { name: 'Agents in the graph' });
    for (const name of ['Research assistant', 'Support desk']) {
      const row = agents.getByRole('row').filter({ hasText: name });
      await row.getByText('asleep: a message or its next due job wakes it').waitFor();
      expect(await row.locator('.badge').innerText()).toBe('idle');
    }
    expect(await page.getByText('No live fleet data').count()).toBe(0);
    expect(await page.locator('.mc-graph-card .mc-load').allTextContents()).toEqual(['asleep', 'asleep']);
    // Their sessions are not read while they sleep, and the list says so rather than "no sessions yet".
    await page
      .getByRole('region', { name: 'Recent sessions' })
      .getByText('Your agents are asleep: their sessions are kept, and listed here once they are awake', { exact: false })
      .waitFor();
    await atBothWidths('agents-21-fleet-asleep-mission-control-1280', 'agents-21b-fleet-asleep-mission-control-390');
    // Looking wakes nothing.
    expect((await host.status(first)).status).toBe('hibernated');
    expect((await host.status(second)).status).toBe('hibernated');
  });

  it('has no uncaught errors or failed requests', () => {
    expect(problems).toEqual([]);
  });
});
