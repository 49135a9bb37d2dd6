#!/usr/bin/env node
// Heap-cap soak (issue #20, "memory measured, not assumed"): does a V8 heap cap (`NODE_OPTIONS=--max-old-space-size`)
// lower what an OpenClaw gateway holds, and does a gateway under that cap survive long conversations with tool calls?
// For each setting (no cap, then each cap in BENCH_HEAP_CAPS) it starts one real gateway of the pinned OpenClaw
// (`LocalAgentHost`, the local provider) on a local OpenAI-compatible model with a small context window (so OpenClaw
// compacts the conversation again and again), then runs BENCH_TURNS chat turns in one session over the gateway's own
// `/v1/chat/completions`: long messages, long answers, and every third turn a tool call (`read` of a 256 KiB workspace
// file, alternating with `exec` of `cat` on it) whose result OpenClaw keeps in the conversation. It samples the PSS of
// the gateway's process tree after the start and every 10 turns, and counts failed turns, crashes (the host's
// restarts) and "heap out of memory" lines in the gateway's log. Not a test: it prints a table and writes
// bench/results/heap-soak.json.
// Run: npm run bench:heap-soak   (BENCH_TURNS=150, BENCH_HEAP_CAPS=256,384; needs the machine otherwise idle)
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalAgentHost } from '../packages/provisioner/dist/local/host.js';
import { treePssBytes } from '../packages/provisioner/dist/local/proc.js';
import { startFakeLlm } from '../packages/testing/dist/fakes/llm.js';

const here = dirname(fileURLToPath(import.meta.url));
const turns = Number(process.env.BENCH_TURNS ?? 150);
const caps = (process.env.BENCH_HEAP_CAPS ?? '256,384').split(',').filter(Boolean).map(Number);
const MIB = 1024 ** 2;
const mib = (bytes) => Math.round(bytes / MIB);
const BIG_FILE = 'soak-notes.txt';

// Answers of about 3 KB; a tool call on every third user turn, text once the tool's result is back.
let userTurns = 0;
const llm = await startFakeLlm({
  reply: (body) => {
    const n = Array.isArray(body.messages) ? body.messages.length : 0;
    return `Answer after ${n} messages. ${'The soak keeps talking so that the context grows and compacts. '.repeat(48)}`;
  },
  toolCall: (body) => {
    // OpenClaw sends the user's message, then its own context as a last user message; after a tool's result, the
    // result and that context again (no SOAK-TURN in them): then the answer is text.
    const messages = Array.isArray(body.messages) ? body.messages : [];
    if (messages.at(-1)?.role !== 'user' || !JSON.stringify(messages.slice(-2)).includes('SOAK-TURN')) return null;
    userTurns += 1;
    if (userTurns % 3 !== 0) return null;
    return userTurns % 6 === 0
      ? { name: 'exec', arguments: { command: `cat ${BIG_FILE}` } }
      : { name: 'read', arguments: { path: BIG_FILE } };
  },
});

async function soak(cap) {
  const work = mkdtempSync(join(tmpdir(), 'aop-heap-soak-'));
  const host = new LocalAgentHost({
    dataDir: join(work, 'data'),
    encryptionKey: randomBytes(32),
    warmPool: 0,
    ...(cap ? { nodeOptions: `--max-old-space-size=${cap}` } : {}),
  });
  const agentId = `soak${cap ?? 'nocap'}`;
  const gatewayToken = randomBytes(24).toString('base64url');
  const result = { cap: cap ? `${cap} MiB` : 'none', turns, ok: 0, failed: 0, errors: [], restarts: 0, oomLines: 0, pssMiB: [] };
  try {
    await host.create({
      agentId,
      userId: 'usr_soak',
      plan: 'solo',
      config: {},
      gatewayToken,
      llm: { baseUrl: llm.url, apiKey: 'soak-key', model: 'fake-1', contextWindow: 16_000, maxTokens: 2_000 },
    });
    const ready = await host.waitUntilReady(agentId, { timeoutMs: 240_000 });
    writeFileSync(join(host.paths(agentId).workspace, BIG_FILE), `${'line of notes for the soak, to be read back whole\n'.repeat(5_300)}`);
    const sample = async (turn) => {
      const { pid } = await host.status(agentId);
      result.pssMiB.push({ turn, pss: pid ? mib(await treePssBytes(pid)) : null });
    };
    await sample(0);
    for (let turn = 1; turn <= turns; turn += 1) {
      const started = performance.now();
      try {
        const res = await fetch(`${ready.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gatewayToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'openclaw/default',
            user: 'soak',
            messages: [{ role: 'user', content: `SOAK-TURN ${turn}: ${'Please keep this long message in mind. '.repeat(50)}` }],
          }),
          signal: AbortSignal.timeout(120_000),
        });
        const text = await res.text();
        if (res.status === 200) result.ok += 1;
        else {
          result.failed += 1;
          if (result.errors.length < 5) result.errors.push(`turn ${turn}: HTTP ${res.status} ${text.slice(0, 200)}`);
        }
      } catch (error) {
        result.failed += 1;
        if (result.errors.length < 5) result.errors.push(`turn ${turn}: ${error.message}`);
        await host.waitUntilReady(agentId, { timeoutMs: 240_000 }).catch(() => undefined);
      }
      if (turn % 10 === 0) {
        await sample(turn);
        const last = result.pssMiB.at(-1);
        console.error(`  ${result.cap}: turn ${turn}, ${((performance.now() - started) / 1000).toFixed(1)} s, PSS ${last.pss} MiB`);
      }
    }
    const logs = await host.logs(agentId, { tail: 5_000 });
    result.oomLines = logs.filter((line) => /heap out of memory|Reached heap limit/i.test(line)).length;
    result.restarts = (await host.status(agentId)).restarts;
    const toolResults = llm
      .chatRequests()
      .flatMap((r) => (Array.isArray(r.body?.messages) ? r.body.messages : []))
      .filter((m) => m.role === 'tool');
    result.toolResultChars = toolResults.length ? Math.max(...toolResults.map((m) => JSON.stringify(m.content ?? '').length)) : 0;
  } finally {
    await host.shutdown();
    rmSync(work, { recursive: true, force: true });
  }
  const values = result.pssMiB.map((s) => s.pss).filter((v) => v !== null);
  result.pssAfterStartMiB = values[0] ?? null;
  result.pssPeakMiB = values.length ? Math.max(...values) : null;
  result.pssEndMiB = values.at(-1) ?? null;
  return result;
}

const results = [];
for (const cap of [null, ...caps]) {
  console.error(`soak: ${cap ? `--max-old-space-size=${cap}` : 'no heap cap'}, ${turns} turns`);
  results.push(await soak(cap));
}
await llm.close();

console.log('| heap cap | turns ok / failed | crashes | OOM lines | PSS after start | PSS peak | PSS at the end |');
console.log('|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(
    `| ${r.cap} | ${r.ok} / ${r.failed} | ${r.restarts} | ${r.oomLines} | ${r.pssAfterStartMiB} MiB | ${r.pssPeakMiB} MiB | ${r.pssEndMiB} MiB |`,
  );
  for (const error of r.errors) console.log(`  ${r.cap}: ${error}`);
}
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', 'heap-soak.json'), `${JSON.stringify({ at: new Date().toISOString(), turns, results }, null, 2)}\n`);
