import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@aop/core';
import { startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { LocalAgentHost } from '@aop/provisioner';
import { installFakeRuntime } from '@aop/provisioner/fake-gateway.test-support';
import { request } from '@aop/testing';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, type TestBackend } from '../../apps/backend/src/backend.test-support.js';
import { startWeb, type TestWeb } from '../../apps/web/src/web.test-support.js';
import { buildDashboard, launchChromium, screenshot, signedInContext, watchedPage, watchPage } from './dashboard-browser.test-support.js';

// Issue #11: the Workflows editor, Mission control and Costs pages in a real browser against the real web and backend
// services (PGlite) and an agent on the local host running the fake OpenClaw gateway, so mission control has a live
// fleet to draw. The editor is driven by mouse, keyboard and real touch input (Chromium's touch events).

const SHARED = { INTERNAL_API_KEY: 'internal-key-for-workflows-e2e', HMAC_SECRET: 'hmac-secret-for-workflows-e2e' };

let work: string;
let host: LocalAgentHost;
let backend: TestBackend;
let web: TestWeb;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let owner: { userId: string; cookie: string };

const contextFor = (cookie: string, options: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> =>
  signedInContext(browser, web.url, cookie, { viewport: { width: 1280, height: 900 }, ...options });

/** Where a step sits on the canvas, from its `translate(x y)`. */
async function positionOf(node: Locator): Promise<{ x: number; y: number }> {
  const match = /translate\(([-\d.]+) ([-\d.]+)\)/.exec((await node.getAttribute('transform')) ?? '');
  if (!match) throw new Error('node has no position');
  return { x: Number(match[1]), y: Number(match[2]) };
}

async function centre(locator: Locator): Promise<{ x: number; y: number }> {
  const box = await locator.boundingBox();
  if (!box) throw new Error('not on screen');
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** A mouse drag in small steps, as a person makes it. */
async function drag(p: Page, from: { x: number; y: number }, to: { x: number; y: number }): Promise<void> {
  await p.mouse.move(from.x, from.y);
  await p.mouse.down();
  await p.mouse.move(to.x, to.y, { steps: 8 });
  await p.mouse.up();
}

/** `expect.poll` with room for a loaded machine (its default is one second). */
const poll = <T>(fn: () => T | Promise<T>, options: { timeout?: number } = {}) => expect.poll(fn, { timeout: 10_000, ...options });

/** The document is no wider than the viewport: nothing forces sideways scrolling on a phone. */
// Expressions as text: this project's test types have no DOM, the page has.
const noSidewaysScroll = (p: Page) => p.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-dashboard-workflows-'));
  const dashboardDir = join(work, 'dashboard');
  await buildDashboard(dashboardDir);
  host = new LocalAgentHost({
    dataDir: join(work, 'agents'),
    encryptionKey: randomBytes(32),
    runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
    defaultVersion: '1.0.0',
    readyPollMs: 50,
    stopTimeoutMs: 5_000,
  });
  backend = await startBackend(SHARED, { host });
  web = await startWeb({ ...SHARED, BACKEND_API_URL: backend.url, DASHBOARD_DIR: dashboardDir });
  owner = await web.signIn({ isAdmin: true, name: 'Lin' });
  browser = await launchChromium();
  context = await contextFor(owner.cookie);
  ({ page, problems } = await watchedPage(context));
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await web?.close();
  // The agents first: a backend call still waiting on a gateway would hold the backend's close.
  await host?.shutdown();
  await backend?.close();
  if (work) await rm(work, { recursive: true, force: true });
}, 60_000);

describe('workflows, mission control and costs in a real browser', () => {
  it('creates a workflow and builds its graph with the mouse and the keyboard', async () => {
    await page.goto('/workflows');
    await poll(() => page.getByText('You have no workflows yet').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'New workflow' }).click();
    await page.waitForURL(/\/workflows\/new$/);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('New workflow');
    await poll(() => page.getByText('This workflow has no steps yet').isVisible()).toBe(true);
    expect(await page.getByLabel('Workflow name').inputValue()).toBe('Untitled workflow');
    await poll(() => page.getByRole('status').filter({ hasText: 'Not saved yet' }).count()).toBe(1);

    // Nothing is stored until the first save: an abandoned "New workflow" leaves no empty workflow behind.
    const storedWorkflows = async () =>
      (await request(`${web.url}/api/workflows`, { headers: { cookie: owner.cookie } })).body.workflows as { id: string }[];
    expect(await storedWorkflows()).toEqual([]);

    await page.getByLabel('Workflow name').fill('Morning digest');
    await page.getByLabel('Description').fill('Summarise the inbox every morning');
    await page.getByRole('button', { name: 'Add trigger' }).click();
    await page.getByRole('button', { name: 'Add action' }).click();
    await page.getByRole('button', { name: 'Add output' }).click();
    const trigger = page.getByRole('button', { name: 'Trigger: Trigger 1' });
    const action = page.getByRole('button', { name: 'Action: Action 1' });
    const output = page.getByRole('button', { name: 'Output: Output 1' });
    // A new step is selected and takes the focus, so the keyboard can carry on with it.
    await poll(() => output.getAttribute('aria-pressed')).toBe('true');
    await poll(() => page.evaluate<string | undefined>('document.activeElement?.getAttribute("aria-label")')).toBe('Output: Output 1');
    await poll(() => page.getByRole('status').filter({ hasText: 'Not saved yet' }).count()).toBe(1);

    // A fourth step lands inside the canvas on screen, whatever its type's column (here, beside the side panel).
    await page.getByRole('button', { name: 'Add condition' }).click();
    const canvasBox = (await page.locator('.wf-canvas').boundingBox())!;
    for (const node of await page.locator('.wf-node').all()) {
      const box = (await node.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(canvasBox.x);
      expect(box.y).toBeGreaterThanOrEqual(canvasBox.y);
      expect(box.x + box.width).toBeLessThanOrEqual(canvasBox.x + canvasBox.width);
      expect(box.y + box.height).toBeLessThanOrEqual(canvasBox.y + canvasBox.height);
    }
    await screenshot(page, 'workflow-four-steps');
    // The new step has the focus: the Delete key takes it away again.
    await page.keyboard.press('Delete');
    await poll(() => page.locator('.wf-node').count()).toBe(3);

    // Mouse: drag the trigger down, then drag from its output handle onto the action.
    const before = await positionOf(trigger);
    await drag(page, await centre(trigger), { x: (await centre(trigger)).x + 24, y: (await centre(trigger)).y + 120 });
    const after = await positionOf(trigger);
    expect(after.x - before.x).toBeGreaterThanOrEqual(20);
    expect(after.y - before.y).toBeGreaterThanOrEqual(110);
    await drag(page, await centre(trigger.locator('.wf-handle-hit')), await centre(action));
    await poll(() => page.getByRole('button', { name: 'Connection: Trigger 1 to Action 1' }).count()).toBe(1);

    // A connection into a trigger is refused in words.
    await drag(page, await centre(action.locator('.wf-handle-hit')), await centre(trigger));
    await poll(() => page.getByRole('alert').filter({ hasText: 'nothing can connect into it' }).count()).toBe(1);

    // Keyboard: Enter selects the action, Shift+Enter adds the output, Connect joins them in that order.
    await action.focus();
    await page.keyboard.press('Enter');
    await output.focus();
    await page.keyboard.press('Shift+Enter');
    await poll(() => page.getByRole('heading', { name: '2 steps selected' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await poll(() => page.getByRole('button', { name: 'Connection: Action 1 to Output 1' }).count()).toBe(1);

    // Arrow keys move the selected step by the grid (8), Shift by five times that.
    await output.focus();
    await page.keyboard.press('Enter');
    const start = await positionOf(output);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Shift+ArrowRight');
    expect(await positionOf(output)).toEqual({ x: start.x + 40, y: start.y + 8 });

    // The side panel edits the selected step.
    await action.focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('Label').fill('Summarise inbox');
    await page.getByLabel('Operation').fill('summarise new mail');
    await page.getByLabel('Other settings (JSON)').fill('[1]');
    await poll(() => page.getByRole('alert').filter({ hasText: 'must be a JSON object' }).count()).toBe(1);
    // Settings that do not parse are not dropped in silence: saving is refused, in words, and nothing is stored.
    await page.getByLabel('Other settings (JSON)').fill('{"retries": 2');
    await poll(() => page.getByRole('alert').filter({ hasText: 'must be valid JSON' }).count()).toBe(1);
    // Another step selected and back: the text as typed is still there, and still refused.
    await trigger.click();
    await page.getByRole('button', { name: 'Action: Summarise inbox' }).click();
    expect(await page.getByLabel('Other settings (JSON)').inputValue()).toBe('{"retries": 2');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await poll(() =>
      page.getByRole('alert').filter({ hasText: 'Not saved: the other settings of “Summarise inbox” are not valid JSON' }).count(),
    ).toBe(1);
    await poll(() =>
      page.getByRole('status').filter({ hasText: 'Not saved: the settings of “Summarise inbox” are not valid JSON' }).count(),
    ).toBe(1);
    expect(await page.getByRole('status').filter({ hasText: 'Saved at' }).count()).toBe(0);
    expect(await storedWorkflows()).toEqual([]);
    await screenshot(page, 'workflow-invalid-settings');
    await page.getByLabel('Other settings (JSON)').fill('{"retries": 2}');
    await poll(() => page.getByRole('alert').filter({ hasText: 'JSON' }).count()).toBe(0);
    await poll(() => page.getByRole('button', { name: 'Action: Summarise inbox' }).count()).toBe(1);
    await screenshot(page, 'workflow-editor');

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await poll(() => page.getByRole('status').filter({ hasText: 'Saved at' }).count()).toBe(1);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Morning digest');
    // The first save created the workflow, and the address is now its own.
    await page.waitForURL(/\/workflows\/wf_[^/]+$/);
    expect((await storedWorkflows()).map((w) => w.id)).toEqual([page.url().split('/').pop()]);

    // What the API holds: three nodes, the connections in config.next by stable keys, the settings kept.
    const id = page.url().split('/').pop()!;
    const saved = await request(`${web.url}/api/workflows/${id}`, { headers: { cookie: owner.cookie } });
    expect(saved.status).toBe(200);
    const nodes = saved.body.workflow.nodes.map((n: { type: string; config: string }) => ({ type: n.type, config: JSON.parse(n.config) }));
    expect(saved.body.workflow).toMatchObject({ name: 'Morning digest', description: 'Summarise the inbox every morning', enabled: true });
    expect(nodes).toEqual([
      { type: 'trigger', config: { label: 'Trigger 1', key: expect.any(String), next: [nodes[1].config.key] } },
      {
        type: 'action',
        config: {
          label: 'Summarise inbox',
          key: expect.any(String),
          next: [nodes[2].config.key],
          action: 'summarise new mail',
          retries: 2,
        },
      },
      { type: 'output', config: { label: 'Output 1', key: expect.any(String) } },
    ]);

    // A reload shows the same graph, with nothing unsaved.
    await page.reload();
    await poll(() => page.getByRole('button', { name: 'Connection: Summarise inbox to Output 1' }).count()).toBe(1);
    await poll(() => page.getByRole('status').filter({ hasText: 'All changes saved' }).count()).toBe(1);
  });

  it('deletes steps and connections, and discards unsaved changes on request', async () => {
    const edge = page.getByRole('button', { name: 'Connection: Trigger 1 to Summarise inbox' });
    // A connection is selected by pressing on its line, then the Delete key removes it.
    await edge.locator('.wf-edge-hit').dispatchEvent('pointerdown', { button: 0, pointerId: 1, isPrimary: true });
    await poll(() => page.getByRole('heading', { name: 'Connection' }).count()).toBe(1);
    await page.keyboard.press('Delete');
    await poll(() => edge.count()).toBe(0);
    await poll(() => page.getByRole('status').filter({ hasText: 'Unsaved changes' }).count()).toBe(1);

    // The Delete key on a focused step removes it with its connections; the button does the same for a selection.
    await page.getByRole('button', { name: 'Output: Output 1' }).focus();
    await page.keyboard.press('Delete');
    await poll(() => page.getByRole('button', { name: 'Connection: Summarise inbox to Output 1' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Trigger: Trigger 1' }).click();
    await page.getByRole('button', { name: 'Delete selected' }).click();
    await poll(() => page.locator('.wf-node').count()).toBe(1);

    await page.getByRole('button', { name: 'Discard changes' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await poll(() => page.locator('.wf-node').count()).toBe(3);
    await poll(() => page.locator('.wf-edge').count()).toBe(2);
    await poll(() => page.getByRole('status').filter({ hasText: 'All changes saved' }).count()).toBe(1);
  });

  it('moves and connects steps by touch on a phone-sized screen', async () => {
    const phone = await contextFor(owner.cookie, { viewport: { width: 360, height: 780 }, hasTouch: true });
    const p = await phone.newPage();
    const phoneProblems = watchPage(p);
    try {
      await p.goto('/workflows');
      await p.getByRole('link', { name: 'Morning digest' }).click();
      const output = p.getByRole('button', { name: 'Output: Output 1' });
      await output.waitFor();
      expect(await noSidewaysScroll(p)).toBe(true);
      const cdp = await phone.newCDPSession(p);
      const touch = async (from: { x: number; y: number }, to: { x: number; y: number }) => {
        await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x: from.x, y: from.y }] });
        for (let i = 1; i <= 8; i++) {
          const x = from.x + ((to.x - from.x) * i) / 8;
          const y = from.y + ((to.y - from.y) * i) / 8;
          await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x, y }] });
        }
        await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
      };
      // The canvas scrolls sideways on a phone: bring the trigger's column into view first.
      const trigger = p.getByRole('button', { name: 'Trigger: Trigger 1' });
      await trigger.scrollIntoViewIfNeeded();
      const before = await positionOf(trigger);
      const c = await centre(trigger);
      await touch(c, { x: c.x + 16, y: c.y + 48 });
      const after = await positionOf(trigger);
      expect(after.y - before.y).toBeGreaterThanOrEqual(40);
      // A touch drag from the trigger's handle onto the output connects them.
      await output.scrollIntoViewIfNeeded();
      await trigger.scrollIntoViewIfNeeded();
      const handle = await centre(trigger.locator('.wf-handle-hit'));
      // Aim at the action's left part: at this width its middle can sit past the screen's edge.
      const box = await p.getByRole('button', { name: 'Action: Summarise inbox' }).boundingBox();
      await touch(handle, { x: box!.x + 20, y: box!.y + box!.height / 2 });
      // Trigger → Summarise inbox exists since the discard, so the touch connection reaches the editor and is refused.
      await poll(() => p.getByRole('alert').filter({ hasText: 'already connected' }).count()).toBe(1);
      // On a phone too, a new step lands in the part of the canvas on screen.
      await p.getByRole('button', { name: 'Add condition' }).click();
      const added = (await p.getByRole('button', { name: 'Condition: Condition 1' }).boundingBox())!;
      const canvas = (await p.locator('.wf-canvas').boundingBox())!;
      expect(added.x).toBeGreaterThanOrEqual(canvas.x);
      expect(added.x + added.width).toBeLessThanOrEqual(canvas.x + canvas.width);
      await screenshot(p, 'workflow-editor-phone');
      expect(phoneProblems).toEqual([]);
    } finally {
      await phone.close();
    }
  });

  it('lists workflows and deletes one after confirmation', async () => {
    // Leave the editor without saving the phone's move: a fresh list.
    await page.goto('/workflows');
    const row = page.getByRole('row', { name: /Morning digest/ });
    await poll(() => row.getByRole('cell').nth(1).textContent()).toBe('3');
    await screenshot(page, 'workflows-list');
    await page.getByRole('button', { name: 'Delete Morning digest' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await poll(() => page.getByText('You have no workflows yet').isVisible()).toBe(true);
    const list = await request(`${web.url}/api/workflows`, { headers: { cookie: owner.cookie } });
    expect(list.body.workflows).toEqual([]);
  });

  it('draws the live fleet, its sessions and spend on mission control', async () => {
    const res = await request(`${web.url}/api/provision`, { json: { autoProvision: true }, headers: { cookie: owner.cookie } });
    expect(res.status).toBe(200);
    await host.waitUntilReady(res.body.agentId, { timeoutMs: 10_000 });
    // A chat turn the web recorded: mission control's spend reads the web's ledger, as the Costs page does. Removed
    // again at the end, so the costs test below counts only its own rows.
    const turn = newId('usage');
    await web.database.db.kysely
      .insertInto('usage_events')
      .values({ id: turn, user_id: owner.userId, agent_id: res.body.agentId, kind: 'chat', total_tokens: 40, cost_usd: '0.25' })
      .execute();

    await page.goto('/mission-control');
    const agents = page.getByRole('table', { name: 'Agents in the graph' });
    // The views wait on the agents' gateways (probes, session lists): give them the time they take.
    const slow = { timeout: 20_000 };
    await poll(() => agents.getByRole('link').count(), slow).toBe(1);
    expect(await page.getByText('No live fleet data').count()).toBe(0);
    await poll(() => page.getByRole('img', { name: /Fleet graph: 1 agent and 0 connections/ }).count()).toBe(1);
    await poll(() => page.getByText('$0.25').first().isVisible(), slow).toBe(true);
    await poll(() => page.getByText('No sessions to show').isVisible(), slow).toBe(true);
    await poll(() => page.getByText('No booking negotiations').isVisible(), slow).toBe(true);
    await screenshot(page, 'mission-control');

    // Live: the page asks again every 10 s; paused, it does not.
    const graphRequests = () => {
      let n = 0;
      page.on('request', (r) => {
        if (r.url().endsWith('/api/mission-control/fleet/graph')) n++;
      });
      return () => n;
    };
    const count = graphRequests();
    await poll(count, { timeout: 25_000 }).toBeGreaterThanOrEqual(1);
    await page.getByRole('button', { name: 'Pause live updates' }).click();
    await poll(() => page.getByRole('button', { name: 'Pause live updates' }).getAttribute('aria-pressed')).toBe('true');
    await poll(() => page.getByText('Live updates paused.').isVisible()).toBe(true);
    await web.database.db.kysely.deleteFrom('usage_events').where('id', '=', turn).execute();
  }, 60_000);

  it('shows the spec fallback graph to a user with no reachable agent', async () => {
    const other = await web.signIn({ name: 'Sam' });
    const ctx = await contextFor(other.cookie);
    const p = await ctx.newPage();
    try {
      await p.goto('/mission-control');
      await poll(() => p.getByText('No live fleet data').isVisible(), { timeout: 20_000 }).toBe(true);
      expect(await p.getByRole('table', { name: 'Agents in the graph' }).getByRole('cell', { name: 'atlas' }).count()).toBe(1);
    } finally {
      await ctx.close();
    }
  });

  it('shows costs per period, agent, day and model', async () => {
    const day = 86_400_000;
    const now = Date.now();
    await web.database.db.kysely
      .insertInto('usage_events')
      .values([
        {
          id: newId('usage'),
          user_id: owner.userId,
          agent_name: 'Scout',
          kind: 'llm',
          model: 'gpt-4o',
          total_tokens: 1200,
          cost_usd: '1.5',
          created_at: new Date(now),
        },
        {
          id: newId('usage'),
          user_id: owner.userId,
          agent_name: 'Scout',
          kind: 'llm',
          model: 'gpt-4o',
          total_tokens: 800,
          cost_usd: '0.5',
          created_at: new Date(now - 2 * day),
        },
        {
          id: newId('usage'),
          user_id: owner.userId,
          agent_name: 'Clerk',
          kind: 'llm',
          model: 'claude-haiku',
          total_tokens: 300,
          cost_usd: '0.0004',
          created_at: new Date(now - 1 * day),
        },
        // Outside the last 7 days, inside the last 30.
        {
          id: newId('usage'),
          user_id: owner.userId,
          agent_name: 'Clerk',
          kind: 'llm',
          model: 'claude-haiku',
          total_tokens: 5000,
          cost_usd: '3',
          created_at: new Date(now - 20 * day),
        },
      ])
      .execute();

    await page.goto('/costs');
    const total = page.locator('.stat').filter({ hasText: 'total cost' }).locator('.value');
    await poll(() => total.textContent()).toBe('$2.00');
    expect(await page.getByRole('radio', { name: 'Last 7 days' }).isChecked()).toBe(true);
    const chart = page.getByRole('list', { name: 'Cost per day, the last 7 days' });
    await poll(() => chart.getByRole('listitem').count()).toBe(7);
    const agents = page.getByRole('table', { name: /Cost per agent/ });
    expect(await agents.getByRole('row').nth(1).getByRole('rowheader').textContent()).toBe('Scout');
    expect(await agents.getByRole('row').nth(2).textContent()).toContain('$0.0004');
    await page.getByText('Show daily figures as a table').click();
    await poll(() =>
      page
        .getByRole('table', { name: /Cost and tokens per day/ })
        .getByRole('row')
        .count(),
    ).toBe(8);
    await screenshot(page, 'costs');

    // The period switch is a radio group: arrow keys move through it.
    await page.getByRole('radio', { name: 'Last 7 days' }).focus();
    await page.keyboard.press('ArrowRight');
    expect(await page.getByRole('radio', { name: 'Last 30 days' }).isChecked()).toBe(true);
    await poll(() => total.textContent()).toBe('$5.00');
    await poll(() => page.getByRole('list', { name: 'Cost per day, the last 30 days' }).getByRole('listitem').count()).toBe(30);
    const models = page.locator('.cost-models li');
    await poll(() => models.first().textContent()).toContain('claude-haiku');

    // A phone: the same page, no sideways scrolling.
    await page.setViewportSize({ width: 360, height: 780 });
    expect(await noSidewaysScroll(page)).toBe(true);
    await screenshot(page, 'costs-phone');
    await page.goto('/mission-control');
    await page.getByRole('table', { name: 'Agents in the graph' }).waitFor({ timeout: 20_000 });
    // Its views wait on the agents' gateways (the stand-in's session list times out): as long as on the desktop above.
    await poll(() => page.getByText('No sessions to show').isVisible(), { timeout: 20_000 }).toBe(true);
    expect(await noSidewaysScroll(page)).toBe(true);
    await screenshot(page, 'mission-control-phone');
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(problems).toEqual([]);
  });

  it('shows OpenClaw’s own jobs read-only, checks cron expressions before sending, and runs a workflow on the agent', async () => {
    // The owner's agent (provisioned for mission control) now answers on a gateway speaking OpenClaw's protocol, with
    // OpenClaw's own jobs on it: its heartbeat monitor and memory-core's dreaming sweep.
    const agent = await web.database.db.kysely
      .selectFrom('agents')
      .select(['id', 'name'])
      .where('user_id', '=', owner.userId)
      .executeTakeFirstOrThrow();
    const { gatewayToken } = await host.spec(agent.id);
    const gateway = await startFakeGatewayWs({ token: gatewayToken, reply: (m) => `Digest: ${m.split('\n').at(-1)}` });
    const now = Date.now();
    gateway.jobs.set('hb-main', {
      id: 'hb-main',
      name: 'heartbeat-main',
      declarationKey: 'heartbeat:main',
      enabled: true,
      createdAtMs: now,
      updatedAtMs: now,
      schedule: { kind: 'every', everyMs: 1_800_000 },
      payload: { kind: 'heartbeat' },
      sessionTarget: 'main',
      wakeMode: 'next-heartbeat',
      state: { nextRunAtMs: now + 1_800_000 },
    });
    gateway.jobs.set('dream', {
      id: 'dream',
      name: 'Memory Dreaming Promotion',
      declarationKey: 'memory-core:memory-dreaming-promotion',
      description: '[managed-by=memory-core.short-term-promotion] Promote weighted short-term recalls into MEMORY.md.',
      enabled: true,
      createdAtMs: now,
      updatedAtMs: now,
      schedule: { kind: 'cron', expr: '0 3 * * *' },
      payload: { kind: 'agentTurn', message: '__openclaw_memory_core_short_term_promotion_dream__' },
      sessionTarget: 'isolated',
      wakeMode: 'now',
      state: {},
    });
    await web.database.db.kysely.updateTable('agents').set({ url: gateway.httpUrl }).where('id', '=', agent.id).execute();
    try {
      await page.goto(`/agents/${agent.id}`);
      await page.getByRole('tab', { name: 'Schedule' }).click();
      const jobs = page.locator('tr[data-system]');
      await poll(() => jobs.count()).toBe(2);
      // Read-only: no Delete button on OpenClaw's jobs, a description in words instead of the raw token.
      expect(await page.getByRole('button', { name: /Delete job heartbeat-main|Delete job Memory Dreaming/ }).count()).toBe(0);
      expect(
        await page
          .getByRole('row', { name: /heartbeat-main/ })
          .getByText('Read-only')
          .count(),
      ).toBe(1);
      expect(await page.getByText('__openclaw_memory_core').count()).toBe(0);
      expect(
        await page
          .getByRole('row', { name: /Memory Dreaming Promotion/ })
          .getByText(/OpenClaw memory maintenance/)
          .count(),
      ).toBe(1);
      // The heartbeat section agrees with the table: OpenClaw's own heartbeat is named, not denied.
      await poll(() => page.getByText(/OpenClaw's own heartbeat \(“heartbeat-main”, listed above as a system job\)/).count()).toBe(1);

      // A bad cron expression is explained before anything is sent.
      const adds = () => gateway.received.filter((f) => f.method === 'cron.add').length;
      await page.getByLabel('Job name').fill('nightly');
      await page.getByLabel('Cron expression').fill('0 25 * * *');
      await poll(() => page.getByText('the hour field 25 is out of range (use 0-23)').count()).toBe(1);
      await page.getByLabel('Message text').fill('Summarise the day.');
      await page.getByRole('button', { name: 'Add job' }).click();
      await poll(() =>
        page.getByRole('alert').filter({ hasText: 'Cron expression: the hour field 25 is out of range (use 0-23).' }).count(),
      ).toBe(1);
      expect(adds()).toBe(0);
      await page.getByLabel('Cron expression').fill('0 22 * * *');
      await page.getByRole('button', { name: 'Add job' }).click();
      await page.getByRole('button', { name: 'Delete job nightly' }).waitFor();
      expect(adds()).toBe(1);

      // Saving the heartbeat refreshes the table: the platform heartbeat appears there, set from the form.
      await page.getByRole('button', { name: 'Save heartbeat' }).click();
      await poll(() =>
        page
          .getByRole('row', { name: /platform-heartbeat/ })
          .getByText('Set under Heartbeat')
          .count(),
      ).toBe(1);
      await screenshot(page, 'agent-schedule-system-jobs');
      await page.setViewportSize({ width: 390, height: 844 });
      await screenshot(page, 'agent-schedule-system-jobs-phone');
      await page.setViewportSize({ width: 1280, height: 900 });

      // A workflow run: the action is a turn of the agent, the editor shows the run and its result.
      const created = await request(`${web.url}/api/workflows`, {
        headers: { cookie: owner.cookie },
        json: {
          name: 'Inbox digest',
          nodes: [
            { type: 'trigger', config: { label: 'New mail', key: 't', next: ['a'] }, position: { x: 32, y: 32 } },
            {
              type: 'action',
              config: { label: 'Summarise', key: 'a', next: ['o'], action: 'Summarise this' },
              position: { x: 264, y: 32 },
            },
            { type: 'output', config: { label: 'Send digest', key: 'o' }, position: { x: 496, y: 32 } },
          ],
        },
      });
      expect(created.status).toBe(201);
      await page.goto(`/workflows/${created.body.workflow.id}`);
      await page.getByText('No runs yet.').waitFor();
      await page.getByLabel('Input for the trigger').fill('three new mails');
      await page.getByRole('button', { name: 'Run workflow' }).click();
      await poll(() => page.getByRole('status').filter({ hasText: 'The run finished.' }).count(), { timeout: 20_000 }).toBe(1);
      const runs = page.getByRole('list', { name: 'Last runs' });
      await poll(() => runs.getByText('succeeded').count()).toBe(1);
      expect(await runs.getByText('Digest: three new mails').count()).toBeGreaterThanOrEqual(1);
      await runs.getByText('Steps', { exact: true }).click();
      expect(await runs.getByText(/Summarise \(action\): done/).count()).toBe(1);
      await screenshot(page, 'workflow-run');
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await noSidewaysScroll(page)).toBe(true);
      await screenshot(page, 'workflow-run-phone');
      await page.setViewportSize({ width: 1280, height: 900 });
      expect(problems).toEqual([]);
    } finally {
      await gateway.close();
    }
  }, 90_000);
});
