#!/usr/bin/env node
// Agents on one host (issue #20): provisions K agents for K customers through the web API (the real web and backend,
// the local provider, the pinned OpenClaw, a local OpenAI-compatible model), one after another, and measures for each
// the time from `POST /api/provision` to its first answer (the first `POST /api/chat` is sent the moment provisioning
// answers and waits for the agent), then, with all of them live, the PSS of every gateway's process tree and the host's
// memory, and projects how many agents a 24 GiB host carries. Four phases, each on a fresh platform: cold starts
// (AGENT_WARM_POOL=0), adoptions of warm gateways (AGENT_WARM_POOL=1: each customer provisions once the pool has a
// warm gateway ready, as the next customer on a quiet host would), a wake (one agent, AGENT_IDLE_MINUTES=1: it
// hibernates, what it keeps on disk is measured, then a message wakes it; once asleep again, the dashboard's
// wake-ahead: the start its chat sends at the first keystroke, and the message BENCH_TYPING_S later), and a join (one
// customer's agent, then BENCH_JOINED more agents of the same customer provisioned through the web API, which the
// platform joins to the first one's gateway: the PSS each adds, from which the agents a host carries for customers of
// several agents are projected), and a burst (one customer provisions BENCH_BURST agents back to back, not waiting for
// any, and messages each at once: how many processes they end in and when each answered). Not a test: it prints
// figures and writes bench/results/agents.json.
// Run: npm run bench:agents   (BENCH_AGENTS=3, BENCH_JOINED=4, BENCH_BURST=3, BENCH_TYPING_S=8,
// BENCH_PHASES=cold,warm,wake,join,burst,
// BENCH_POSTGRES_URL: a server where it may create and drop scratch databases; it needs the machine otherwise idle, as
// every figure here is CPU-bound)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { memAvailableBytes, treePssBytes, treeRssBytes } from '../packages/provisioner/dist/local/proc.js';
import { DEFAULT_MEMORY_MARGIN } from '../packages/provisioner/dist/shared/capacity.js';
import { startFakeLlm } from '../packages/testing/dist/fakes/llm.js';
import { freePort, waitFor } from './lib/listen.mjs';
import { postJson, signedIn } from './lib/web-session.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const count = Number(process.env.BENCH_AGENTS ?? 3);
const postgresServer = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const joined = Number(process.env.BENCH_JOINED ?? 4);
const burst = Number(process.env.BENCH_BURST ?? 3);
const phases = (process.env.BENCH_PHASES ?? 'cold,warm,wake,join,burst').split(',');
const PHASES = {
  cold: { agents: count, env: { AGENT_WARM_POOL: '0', AGENT_IDLE_MINUTES: '0' } },
  warm: { agents: count, env: { AGENT_WARM_POOL: '1', AGENT_IDLE_MINUTES: '0' } },
  wake: { agents: 1, env: { AGENT_WARM_POOL: '0', AGENT_IDLE_MINUTES: '1' } },
  // A plan that allows the customer 1 + BENCH_JOINED agents (`label`: 10).
  join: { agents: 1, plan: 'label', env: { AGENT_WARM_POOL: '0', AGENT_IDLE_MINUTES: '0' } },
  // No agent one after another: the phase's customer provisions its BENCH_BURST agents at once (`burstAgents`).
  burst: { agents: 0, plan: 'label', env: { AGENT_WARM_POOL: '0', AGENT_IDLE_MINUTES: '0' } },
};
/** A minute for a gateway's post-start work (memory index, SQLite maintenance) to finish before its PSS is read. */
const SETTLE_MS = 60_000;
/** How long the wake phase's second message takes to write, from its first keystroke (the dashboard's wake-ahead). */
const TYPING_S = Number(process.env.BENCH_TYPING_S ?? 8);
const GIB = 1024 ** 3;
const HOST_GIB = 24;
const RESERVE_GIB = 2;

const children = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGTERM');
});
function start(script, env) {
  const child = spawn(process.execPath, [join(root, script)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

const gib = (bytes) => Number((bytes / GIB).toFixed(2));
const seconds = (ms) => Number((ms / 1000).toFixed(1));
const json = postJson;

const llm = await startFakeLlm();
const admin = new pg.Client({ connectionString: postgresServer });
await admin.connect();

/** Bytes the files under `dir` take on disk (allocated blocks; links not followed). */
function diskBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const info = lstatSync(path);
    total += info.blocks * 512;
    if (entry.isDirectory()) total += diskBytes(path);
  }
  return total;
}

/** The agent's registry record, wherever its directory is (an agent that adopted a warm gateway lives in `warm-<hex>/`). */
function recordOf(dataDir, agentId) {
  for (const name of readdirSync(join(dataDir, 'agents'))) {
    try {
      const record = JSON.parse(readFileSync(join(dataDir, 'agents', name, 'agent.json'), 'utf8'));
      if (record.agentId === agentId) return { ...record, dirName: name };
    } catch {
      // not an agent directory
    }
  }
  throw new Error(`no record for ${agentId}`);
}

/** One platform (scratch database, data directory), K customers, one agent each; the processes are stopped at the end. */
async function runPhase(name) {
  const phase = PHASES[name];
  if (!phase) throw new Error(`unknown phase ${name}: cold, warm, wake, join or burst`);
  const warmPool = Number(phase.env.AGENT_WARM_POOL);
  const database = `aop_bench_agents_${name}_${Date.now()}`;
  await admin.query(`create database ${database}`);
  const databaseUrl = postgresServer.replace(/\/[^/]*$/, `/${database}`);
  const dataDir = mkdtempSync(join(tmpdir(), `aop-bench-agents-${name}-`));
  const phaseChildren = [];
  const availableBefore = await memAvailableBytes();
  try {
    const secrets = { INTERNAL_API_KEY: randomBytes(24).toString('hex'), HMAC_SECRET: randomBytes(24).toString('hex') };
    const backendPort = await freePort();
    const webPort = await freePort();
    const common = { ...secrets, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, LOG_LEVEL: 'warn', HOST: '127.0.0.1' };
    const backendUrl = `http://127.0.0.1:${backendPort}`;
    phaseChildren.push(
      start('apps/backend/dist/server.js', {
        ...common,
        BACKEND_PORT: String(backendPort),
        PROVISIONER: 'local',
        ...phase.env,
        OPENAI_BASE_URL: llm.url,
        TRUST_PROXY: '127.0.0.1',
      }),
    );
    await waitFor(`${backendUrl}/health`, 120_000);
    phaseChildren.push(
      start('apps/web/dist/server.js', {
        ...common,
        PORT: String(webPort),
        BACKEND_API_URL: backendUrl,
        AGENT_START_WAIT_MS: '240000',
        GATEWAY_CHAT_TIMEOUT_MS: '120000',
      }),
    );
    const web = `http://127.0.0.1:${webPort}`;
    await waitFor(`${web}/api/health`, 120_000);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();

    if (name === 'burst') {
      const email = 'burst@example.com';
      await fetch(`${web}/api/register`, json({ email, password: 'benchmark password' }));
      await db.query(`update users set plan = $2, subscription_status = 'active' where email = $1`, [email, phase.plan]);
      await db.end();
      return {
        agents: [],
        burst: await burstAgents(dataDir, await signedIn(web, email, 'benchmark password'), web),
        hostMemoryUsedGiB: null,
      };
    }
    const agents = [];
    for (let i = 0; i < phase.agents; i++) {
      const email = `customer-${i}@example.com`;
      await fetch(`${web}/api/register`, json({ email, password: 'benchmark password' }));
      // Agents need a plan: set it where the CLI would (`npm run cli -- plan set`).
      await db.query(`update users set plan = $2, subscription_status = 'active' where email = $1`, [email, phase.plan ?? 'solo']);
      const cookie = await signedIn(web, email, 'benchmark password');
      if (warmPool > 0) {
        // The next customer on a quiet host: a warm gateway is waiting (the pool refills 20 s after the last one went
        // live, then takes a cold start's time).
        const deadline = Date.now() + 300_000;
        for (;;) {
          const pool = (await (await fetch(`${backendUrl}/health`)).json()).warmPool;
          if (pool?.ready >= 1) break;
          if (Date.now() > deadline) throw new Error(`no warm gateway within 300 s: ${JSON.stringify(pool)}`);
          await new Promise((r) => setTimeout(r, 500));
        }
      }
      const t0 = performance.now();
      const provision = await fetch(
        `${web}/api/provision`,
        json({ name: `Agent ${i}`, autoProvision: true, aiProvider: 'openai', apiKey: 'sk-bench' }, { cookie }),
      );
      const provisioned = await provision.json();
      if (provision.status !== 200) throw new Error(`provision ${i}: ${provision.status} ${JSON.stringify(provisioned)}`);
      const answeredProvision = performance.now() - t0;
      const chat = await fetch(`${web}/api/chat`, json({ message: `hello from customer ${i}` }, { cookie }));
      const reply = await chat.json();
      const firstAnswer = performance.now() - t0;
      if (chat.status !== 200) throw new Error(`first chat ${i}: ${chat.status} ${JSON.stringify(reply)}`);
      const second = performance.now();
      await fetch(`${web}/api/chat`, json({ message: 'and again' }, { cookie }));
      const secondAnswer = performance.now() - second;
      const { dirName } = recordOf(dataDir, provisioned.agentId);
      const adopted = dirName.startsWith('warm-');
      // The host's own account of the start: adoption steps, or the cold start and its warm-up.
      const hostLog = readFileSync(join(dataDir, 'agents', dirName, 'logs', 'gateway.log'), 'utf8')
        .split('\n')
        .filter((line) => /^\[host\] (warm gateway adopted|ready after|first turn prepared|waking)/.test(line));
      agents.push({
        phase: name,
        agentId: provisioned.agentId,
        adopted,
        hostLog,
        provisionAnswerS: seconds(answeredProvision),
        firstAnswerS: seconds(firstAnswer),
        secondAnswerS: seconds(secondAnswer),
      });
      console.log(
        `${name} agent ${i}${adopted ? ' (warm gateway)' : ' (cold start)'}: provision answered ${seconds(answeredProvision)} s, first answer ${seconds(firstAnswer)} s after provision, next turn ${seconds(secondAnswer)} s`,
      );
    }
    await db.end();

    if (name === 'wake') {
      // The agent hibernates once the gateway has reported nothing for a minute (checked every minute), then a message
      // wakes it: the time from that message to its answer.
      const [agent] = agents;
      const cookie = await signedIn(web, 'customer-0@example.com', 'benchmark password');
      const asleep = async () => {
        const deadline = Date.now() + 300_000;
        for (;;) {
          const health = await (await fetch(`${web}/api/agents/${agent.agentId}/health`, { headers: { cookie } })).json();
          if (health.state === 'hibernated') return;
          if (Date.now() > deadline) throw new Error(`not hibernated within 300 s: ${JSON.stringify(health)}`);
          await new Promise((r) => setTimeout(r, 2_000));
        }
      };
      await asleep();
      const availableAsleep = await memAvailableBytes();
      // What a hibernated agent keeps: its directory (state, sessions, workspace, logs) on disk, no process.
      agent.diskAsleepMiB = Number((diskBytes(join(dataDir, 'agents', recordOf(dataDir, agent.agentId).dirName)) / 2 ** 20).toFixed(1));
      const t0 = performance.now();
      const chat = await fetch(`${web}/api/chat`, json({ message: 'wake up' }, { cookie }));
      const reply = await chat.json();
      if (chat.status !== 200) throw new Error(`wake chat: ${chat.status} ${JSON.stringify(reply)}`);
      agent.wakeS = seconds(performance.now() - t0);
      agent.memoryFreedAsleepGiB = gib(availableAsleep - (await memAvailableBytes()));
      console.log(`wake: the first message to the hibernated agent was answered in ${agent.wakeS} s`);

      // The dashboard's wake-ahead: its chat starts a sleeping agent at the first keystroke (`POST /api/agents/:id/start`,
      // not awaited), and the message goes when it is written, BENCH_TYPING_S later.
      await asleep();
      const typed = performance.now();
      const wakeAhead = fetch(`${web}/api/agents/${agent.agentId}/start`, json({}, { cookie })).then((r) => r.status);
      await new Promise((r) => setTimeout(r, TYPING_S * 1_000));
      const sent = performance.now();
      const ahead = await fetch(`${web}/api/chat`, json({ message: 'good morning' }, { cookie }));
      if (ahead.status !== 200) throw new Error(`wake-ahead chat: ${ahead.status} ${JSON.stringify(await ahead.json())}`);
      agent.wakeAhead = {
        typingS: TYPING_S,
        startStatus: await wakeAhead,
        messageToAnswerS: seconds(performance.now() - sent),
        firstKeystrokeToAnswerS: seconds(performance.now() - typed),
      };
      console.log(
        `wake-ahead: typing started the wake; the message, sent ${TYPING_S} s later, was answered ${agent.wakeAhead.messageToAnswerS} s after it was sent`,
      );
      return { agents, hostMemoryUsedGiB: null };
    }

    if (name === 'join') {
      const [agent] = agents;
      const cookie = await signedIn(web, 'customer-0@example.com', 'benchmark password');
      agent.join = await joinAgents(dataDir, agent.agentId, cookie, web);
      return { agents: [], join: agent.join, hostMemoryUsedGiB: null };
    }

    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const availableAfter = await memAvailableBytes();
    for (const a of agents) {
      const record = recordOf(dataDir, a.agentId);
      a.pssGiB = gib(await treePssBytes(record.pid));
      a.rssGiB = gib(await treeRssBytes(record.pid));
      a.peakPssGiB = gib(record.peakPssBytes ?? 0);
      a.startPeakPssGiB = gib(record.startPeakPssBytes ?? 0);
      // The host's budget for it (packages/provisioner/src/local/host.ts budgetOf): peak once ready × margin, at least
      // the start's transient peak.
      a.budgetGiB = gib(Math.max((record.peakPssBytes ?? 0) * DEFAULT_MEMORY_MARGIN, record.startPeakPssBytes ?? 0));
    }
    // Host memory taken by the phase: its agents, and the warm gateway waiting for the next one.
    return { agents, hostMemoryUsedGiB: gib(availableBefore - availableAfter) };
  } finally {
    for (const c of phaseChildren) c.kill('SIGTERM');
    // The backend stops its gateways on exit; they drain for a few seconds and write their state meanwhile.
    await new Promise((r) => setTimeout(r, 15_000));
    await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
    try {
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 1_000 });
    } catch (error) {
      console.warn(`could not remove ${dataDir}: ${error.message}`);
    }
  }
}

/**
 * The customer provisions `joined` more agents through the web API, as a customer does: the platform joins each to the
 * gateway of its first (customer-scoped gateways, `AGENTS_PER_GATEWAY`). For each: provision → first answer, and the
 * next turn; then the gateway's PSS settled before and after: what one further agent of a customer costs.
 */
async function joinAgents(dataDir, agentId, cookie, web) {
  const record = recordOf(dataDir, agentId);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const before = await treePssBytes(record.pid);
  const members = [];
  for (let i = 1; i <= joined; i++) {
    const t0 = performance.now();
    const provision = await fetch(
      `${web}/api/provision`,
      json({ name: `Joined ${i}`, autoProvision: true, aiProvider: 'openai', apiKey: 'sk-bench' }, { cookie }),
    );
    const provisioned = await provision.json();
    if (provision.status !== 200) throw new Error(`provision joined ${i}: ${provision.status} ${JSON.stringify(provisioned)}`);
    const provisionAnswerS = seconds(performance.now() - t0);
    const chat = await fetch(`${web}/api/chat`, json({ message: 'hello', agentId: provisioned.agentId }, { cookie }));
    if (chat.status !== 200) throw new Error(`first chat joined ${i}: ${chat.status} ${await chat.text()}`);
    const firstAnswerS = seconds(performance.now() - t0);
    const t1 = performance.now();
    await fetch(`${web}/api/chat`, json({ message: 'and again', agentId: provisioned.agentId }, { cookie }));
    const secondAnswerS = seconds(performance.now() - t1);
    const member = recordOf(dataDir, provisioned.agentId);
    members.push({ agentId: provisioned.agentId, joined: member.gatewayOf === agentId, provisionAnswerS, firstAnswerS, secondAnswerS });
    console.log(
      `join agent ${i}: ${member.gatewayOf === agentId ? "joined the first agent's gateway" : 'NOT joined'}; provision answered ${provisionAnswerS} s, first answer ${firstAnswerS} s after provision, next turn ${secondAnswerS} s`,
    );
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const after = await treePssBytes(record.pid);
  const samePid = recordOf(dataDir, agentId).pid === record.pid;
  const perAgentGiB = gib((after - before) / joined);
  const firstAnswers = members.map((m) => m.firstAnswerS);
  console.log(
    `join: ${joined} agents joined (same process: ${samePid}); first answers ${firstAnswers.join(', ')} s after provision; gateway PSS ${gib(before)} → ${gib(after)} GiB, ${perAgentGiB} GiB per further agent`,
  );
  return {
    joined,
    allJoined: members.every((m) => m.joined),
    samePid,
    members,
    firstAnswerS: [Math.min(...firstAnswers), Math.max(...firstAnswers)],
    gatewayPssBeforeGiB: gib(before),
    gatewayPssAfterGiB: gib(after),
    perAgentGiB,
  };
}

/**
 * One customer provisions `burst` agents back to back through the web API (each answers at once, its gateway still
 * starting), then sends each its first message at once (each waits for its agent): when each answered, counted from
 * the first provision, and how many gateway processes the agents ended in (customer-scoped gateways: one, the later
 * agents joining the first one's start), with their PSS settled.
 */
async function burstAgents(dataDir, cookie, web) {
  const t0 = performance.now();
  const agents = [];
  for (let i = 1; i <= burst; i++) {
    const provision = await fetch(
      `${web}/api/provision`,
      json({ name: `Burst ${i}`, autoProvision: true, aiProvider: 'openai', apiKey: 'sk-bench' }, { cookie }),
    );
    const provisioned = await provision.json();
    if (provision.status !== 200) throw new Error(`provision burst ${i}: ${provision.status} ${JSON.stringify(provisioned)}`);
    agents.push({ agentId: provisioned.agentId, provisionAnswerS: seconds(performance.now() - t0) });
  }
  await Promise.all(
    agents.map(async (agent) => {
      const chat = await fetch(`${web}/api/chat`, json({ message: 'hello', agentId: agent.agentId }, { cookie }));
      if (chat.status !== 200) throw new Error(`first chat ${agent.agentId}: ${chat.status} ${await chat.text()}`);
      agent.firstAnswerS = seconds(performance.now() - t0);
    }),
  );
  const gatewayOf = (agentId) => {
    const record = recordOf(dataDir, agentId);
    return record.gatewayOf ? recordOf(dataDir, record.gatewayOf) : record;
  };
  const pids = [...new Set(agents.map((agent) => gatewayOf(agent.agentId).pid))];
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  let pss = 0;
  for (const pid of pids) pss += await treePssBytes(pid);
  const firstAnswers = agents.map((a) => a.firstAnswerS);
  console.log(
    `burst: ${burst} agents provisioned in ${agents.at(-1).provisionAnswerS} s ended in ${pids.length} gateway process(es); first answers ${firstAnswers.join(', ')} s after the first provision; PSS ${gib(pss)} GiB settled`,
  );
  return { agents, processes: pids.length, firstAnswerS: [Math.min(...firstAnswers), Math.max(...firstAnswers)], pssGiB: gib(pss) };
}

try {
  const results = {};
  for (const phase of phases) results[phase] = await runPhase(phase);
  const agents = Object.values(results)
    .flatMap((r) => r.agents)
    .filter((a) => a.pssGiB !== undefined);
  const range = (values) => (values.length ? [Math.min(...values), Math.max(...values)] : null);
  const cold = results.cold?.agents ?? [];
  const warm = (results.warm?.agents ?? []).filter((a) => a.adopted);
  const meanPss = agents.reduce((s, a) => s + a.pssGiB, 0) / agents.length;
  const meanBudget = agents.reduce((s, a) => s + a.budgetGiB, 0) / agents.length;
  const result = {
    at: new Date().toISOString(),
    agents,
    // Every agent the run registered, the ones measured live (memory read with all of them running), and the ones
    // measured asleep (the wake phase's, before its wake).
    registered: Object.values(results).reduce((n, r) => n + r.agents.length, 0),
    live: agents.length,
    measuredHibernated: (results.wake?.agents ?? []).filter((a) => a.diskAsleepMiB !== undefined).length,
    coldFirstAnswerS: range(cold.map((a) => a.firstAnswerS)),
    warmFirstAnswerS: range(warm.map((a) => a.firstAnswerS)),
    warmAdopted: `${warm.length} of ${results.warm?.agents.length ?? 0}`,
    meanPssGiB: Number(meanPss.toFixed(2)),
    meanBudgetGiB: Number(meanBudget.toFixed(2)),
    hostMemoryUsedGiB: Object.fromEntries(
      Object.entries(results)
        .filter(([, r]) => r.hostMemoryUsedGiB !== null)
        .map(([phase, r]) => [phase, r.hostMemoryUsedGiB]),
    ),
    // What the capacity check admits on a 24 GiB host with 2 GiB reserved, at the measured budgets.
    projectedLivePer24GiB: Math.floor((HOST_GIB - RESERVE_GIB) / meanBudget),
    // What the memory alone would hold at the settled PSS, without the margin.
    projectedLivePer24GiBSettled: Math.floor((HOST_GIB - RESERVE_GIB) / meanPss),
    wakeS: results.wake?.agents[0]?.wakeS ?? null,
    wakeAhead: results.wake?.agents[0]?.wakeAhead ?? null,
    // A hibernated agent holds no memory (its gateway is stopped, its state on disk): the memory a wake takes back.
    wakeMemoryGiB: results.wake?.agents[0]?.memoryFreedAsleepGiB ?? null,
    // Hibernated agents hold disk, not memory: how many 100 GiB of disk would keep registered, asleep.
    hibernatedDiskMiB: results.wake?.agents[0]?.diskAsleepMiB ?? null,
    projectedHibernatedPer100GiBDisk: results.wake?.agents[0]?.diskAsleepMiB
      ? Math.floor((100 * 1024) / results.wake.agents[0].diskAsleepMiB)
      : null,
    join: results.join?.join ?? null,
    burst: results.burst?.burst ?? null,
  };
  if (result.join) {
    // Customers of five agents each, every customer in one gateway of its own (customer-scoped gateways): a gateway
    // at its measured PSS with one agent plus four further agents at the measured cost each, with the host's margin.
    const perCustomer = (result.join.gatewayPssBeforeGiB + 4 * result.join.perAgentGiB) * DEFAULT_MEMORY_MARGIN;
    result.projectedLivePer24GiBCustomersOf5 = Math.floor((HOST_GIB - RESERVE_GIB) / perCustomer) * 5;
  }
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'agents.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.table(agents.map(({ hostLog, ...a }) => a));
  for (const a of agents) console.log(a.agentId, a.hostLog.join(' | '));
  console.log(JSON.stringify({ ...result, agents: undefined }, null, 2));
} finally {
  for (const c of children) c.kill('SIGTERM');
  await llm.close();
  await admin.end();
}
