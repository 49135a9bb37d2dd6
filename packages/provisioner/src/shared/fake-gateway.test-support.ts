import { mkdir, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** How a fake gateway behaves; written next to its `openclaw.mjs`. */
export interface FakeGatewayBehaviour {
  /** `/readyz` answers 503 `startup-sidecars` for this long after start (default 150 ms). */
  readyDelayMs?: number;
  /** Exit with code 1 this long after start. */
  crashAfterMs?: number;
  /** Exit with code 1 at once (a version that cannot start). */
  exitImmediately?: boolean;
  /** Keep running on SIGTERM (to exercise SIGKILL). */
  ignoreSigterm?: boolean;
  /**
   * The first this many starts (counted in `<state>/starts.txt`) print OpenClaw's `[cron] failed to start: …` line on
   * stderr this long after `/readyz` turns ready (`schedulerFailsAfterMs`, default 0), as the pinned OpenClaw does when
   * its scheduler's start lost a race for its state database. So does every start while `<state>/scheduler-fails`
   * exists (written by a test), whatever this says, and then 100 ms before `/readyz` turns ready: a start with no
   * warm-up turn is over at `/readyz`, and the pinned OpenClaw's line comes before a warm-up turn is over.
   */
  schedulerFailsStarts?: number;
  schedulerFailsAfterMs?: number;
  /**
   * Also leaves a helper whose own parent exits at once: re-parented away from the gateway's process tree, still in its
   * process group (as a grandchild of a gateway is when its parent dies first); its pid in `<state>/stray.pid`.
   */
  strayHelper?: boolean;
  /**
   * Answer the platform's warm-up turn (`POST /v1/chat/completions` asking for the warm-up model) after this long, with
   * OpenClaw's answer to it (400, the refused model call), and record it in `<state>/warm-ups.jsonl` (with the agent the
   * body's `model` names, `target`). Unset: 404.
   */
  warmUpMs?: number;
  /**
   * Speak the gateway's WebSocket protocol instead of echoing: `connect` (checked against the gateway token as
   * OpenClaw resolves it: `gateway.auth.token`, a file SecretRef, else `OPENCLAW_GATEWAY_TOKEN`), `config.get`,
   * `config.apply` (refuses a config that drops a roster entry, as OpenClaw does; writes the file with OpenClaw's
   * \`meta\` block, re-resolves the token, records it in
   * `<state>/config-applies.jsonl`), `secrets.reload`, `sessions.list`/`sessions.create`/`sessions.delete` (the
   * sessions its chat turns made, kept in `<state>/fake-sessions.json` like OpenClaw keeps them on disk), `cron.list`
   * (the jobs of `<state>/cron-jobs.json`, written by a test or `cron.add`), `cron.add`, `cron.get`, `cron.update` (system-owned
   * jobs, `system: true`, refuse it), `cron.remove`, `device.pair.list`/`device.pair.remove` (the devices of
   * `<state>/devices.json`, written by a test), `agents.delete` (the roster entry, its jobs and with `deleteFiles` its
   * files, recorded in `<state>/agents-deleted.jsonl`), `system-presence` (the gateway itself) and `chat.send` (kept
   * with the sessions, answered by a final `chat` event `fake reply: <the message>`). Chat turns (`POST /v1/chat/completions`, the gateway token checked; `stream: true` answered in
   * OpenClaw's SSE frames) go to the agent `model: openclaw/<id>` names (its sessions `agent:<id>:…`) and answer
   * `fake reply: <the last message>`, or that agent's model's reply with `callModel`.
   */
  gatewayProtocol?: boolean;
  /**
   * With `gatewayProtocol`: chat turns are answered by the agent's model, as OpenClaw reads it from the config
   * (`agents.defaults.model.primary`, that provider's `baseUrl` and key, a file SecretRef): the messages go to its
   * `/chat/completions` streamed with `stream_options.include_usage`, as OpenClaw asks; a streamed turn relays each
   * piece as the model sends it and ends with the model's usage when asked.
   */
  callModel?: boolean;
  /** With `gatewayProtocol`: `config.apply` fails as OpenClaw's does when a reload cannot be applied (UNAVAILABLE). */
  refuseConfigApply?: boolean;
  /**
   * With `gatewayProtocol`: the first this many `config.apply` calls of each process write and apply the config, then
   * fail (UNAVAILABLE), as OpenClaw's does when it wrote the file and its reload was then held and superseded.
   */
  failConfigApplyAfterWrite?: number;
}

/**
 * A stand-in for the OpenClaw CLI speaking the parts of its protocol the host relies on: `gateway run --port N`
 * serves `/healthz` and `/readyz` (same bodies as OpenClaw), keeps a helper child process like OpenClaw's broker,
 * seeds the workspace of `OPENCLAW_STATE_DIR` like OpenClaw (only when AGENTS.md is missing), writes session and
 * memory files on `POST /remember` (what a chat turn leaves), counts its starts in the state dir, tells on
 * `GET /env/<NAME>` whether a variable is in its environment (with its SHA-256, never the value), and stops on SIGTERM.
 */
const SCRIPT = String.raw`
import { WebSocketServer } from '__WS_URL__';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const behaviour = JSON.parse(readFileSync(join(here, 'behaviour.json'), 'utf8'));
const version = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).version;
const args = process.argv.slice(2);
if (args[0] !== 'gateway' || args[1] !== 'run') { console.error('usage: gateway run --port N'); process.exit(2); }
const port = Number(args[args.indexOf('--port') + 1]);
console.log('fake openclaw ' + version + ' starting on port ' + port);
if (behaviour.exitImmediately) { console.error('fatal: this version cannot start'); process.exit(1); }

const state = process.env.OPENCLAW_STATE_DIR;
const readConfigText = () => readFileSync(process.env.OPENCLAW_CONFIG_PATH, 'utf8');
const config = JSON.parse(readConfigText());
// The gateway token as OpenClaw resolves it (at start, config.apply and secrets.reload): the config's token, a file
// SecretRef into its secrets provider's JSON file, else the environment.
const resolveToken = (cfg) => {
  const ref = cfg.gateway?.auth?.token;
  if (typeof ref === 'string') return ref;
  if (ref?.source === 'file') {
    const provider = cfg.secrets?.providers?.[ref.provider];
    return JSON.parse(readFileSync(provider.path, 'utf8'))[ref.id.slice(1)];
  }
  return process.env.OPENCLAW_GATEWAY_TOKEN;
};
let token = resolveToken(config);
// A secret as OpenClaw resolves one: a plain string, or a file SecretRef into its secrets provider's JSON file.
// A file SecretRef's id is a JSON pointer into the file.
const resolveSecret = (cfg, ref) => {
  if (typeof ref === 'string' || ref === undefined) return ref;
  let value = JSON.parse(readFileSync(cfg.secrets.providers[ref.provider].path, 'utf8'));
  for (const part of ref.id.slice(1).split('/')) value = value?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return value;
};
// An agent's model: its roster entry's, else agents.defaults.model.primary ('<provider>/<model>'), and that provider's
// address and key; null when the config names none with an address.
const agentModel = (agentId) => {
  const cfg = JSON.parse(readConfigText());
  const model = cfg.agents?.entries?.[agentId]?.model ?? cfg.agents?.defaults?.model;
  const primary = typeof model === 'string' ? model : model?.primary;
  if (typeof primary !== 'string' || !primary.includes('/')) return null;
  const provider = cfg.models?.providers?.[primary.slice(0, primary.indexOf('/'))];
  if (typeof provider?.baseUrl !== 'string') return null;
  return { baseUrl: provider.baseUrl.replace(/\/$/, ''), id: primary.slice(primary.indexOf('/') + 1), apiKey: resolveSecret(cfg, provider.apiKey) };
};
// The model's reply, piece by piece as its SSE frames arrive; its usage lands in usageOut. The request's other fields
// (temperature, max_tokens …) go with it, as OpenClaw forwards them best-effort.
async function* modelReply(model, request, usageOut) {
  const { model: target, user, stream, stream_options, messages, ...params } = request;
  const res = await fetch(model.baseUrl + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + model.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ ...params, model: model.id, messages, stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok) throw new Error('model call failed: HTTP ' + res.status);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
      const data = buffer.slice(0, at).split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
      buffer = buffer.slice(at + 2);
      if (!data || data === '[DONE]') continue;
      const frame = JSON.parse(data);
      if (frame.usage) usageOut.usage = frame.usage;
      const piece = frame.choices?.[0]?.delta?.content;
      if (piece) yield piece;
    }
  }
}
// One REST chat turn: the session recorded, then the reply (the model's, else 'fake reply: …'), streamed as OpenClaw
// streams (SSE headers and the role chunk at once, a piece per model delta, finish, usage when asked, [DONE]) or whole.
// Like OpenClaw (AgentSelectionRequiredError, answered as a bare 500): with several agents configured, a session key
// that names no agent (\`agent:<id>:…\`) is refused whatever the model names.
const unownedSession = (req) => {
  const key = req.headers['x-openclaw-session-key'];
  return typeof key === 'string' && !key.startsWith('agent:') && Object.keys(JSON.parse(readConfigText()).agents?.entries ?? {}).length > 1;
};

async function chatTurn(req, res, body) {
  const json = (status, payload) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(payload)); };
  // The agent the turn is for: REST \`model: openclaw/<id>\` (OpenClaw's default agent when none is named).
  const named = typeof body.model === 'string' && body.model.startsWith('openclaw/') ? body.model.slice('openclaw/'.length) : null;
  const agentId = named === null || named === 'default' ? 'main' : named;
  // Like OpenClaw: a roster of several agents needs the turn to name one, and one it has.
  const entries = JSON.parse(readConfigText()).agents?.entries ?? {};
  const refuse = (message) => json(400, { error: { message, type: 'invalid_request_error' } });
  if (Object.keys(entries).length > 1 && (named === null || named === 'default')) {
    return refuse('Multiple agents are configured, but this operation has no explicit owner. Select an agent explicitly.');
  }
  if (unownedSession(req)) return json(500, { error: { message: 'internal error', type: 'api_error' } });
  if (agentId !== 'main' && !entries[agentId]) return refuse("Unknown agent '" + agentId + "'.");
  const asked = req.headers['x-openclaw-session-key'];
  const key = typeof asked === 'string' && asked.startsWith('agent:') ? asked
    : 'agent:' + agentId + ':' + (asked ?? (body.user ? 'openai-user:' + body.user : 'openai:' + Date.now() + Math.random()));
  const sessions = readJson(sessionsFile, {});
  const last = body.messages?.at(-1)?.content;
  const text = typeof last === 'string' ? last : Array.isArray(last) ? last.map((part) => part.text ?? '').join('') : '';
  sessions[key] = { key, lastActivityAt: Date.now(), updatedAt: Date.now(), status: 'done', messages: [...(sessions[key]?.messages ?? []), text] };
  writeFileSync(sessionsFile, JSON.stringify(sessions));
  const model = behaviour.callModel ? agentModel(agentId) : null;
  const out = { usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } };
  const pieces = model ? modelReply(model, body, out) : (async function* () { yield 'fake reply: ' + text; })();
  const id = 'chatcmpl-fake' + Date.now();
  const created = Math.floor(Date.now() / 1000);
  if (body.stream !== true) {
    let reply = '';
    for await (const piece of pieces) reply += piece;
    return json(200, { id, object: 'chat.completion', created, model: body.model ?? 'openclaw', choices: [{ index: 0, finish_reason: 'stop',
      message: { role: 'assistant', content: reply } }], usage: out.usage });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const frame = (data) => res.write('data: ' + JSON.stringify(data) + '\n\n');
  const chunk = (delta, finish = null) => frame({ id, object: 'chat.completion.chunk', created, model: body.model ?? 'openclaw',
    choices: [{ index: 0, delta, finish_reason: finish }] });
  chunk({ role: 'assistant' });
  try {
    for await (const piece of pieces) chunk({ content: piece });
  } catch (error) {
    frame({ error: { message: error.message, type: 'api_error' } });
    return res.end('data: [DONE]\n\n');
  }
  chunk({}, 'stop');
  if (body.stream_options?.include_usage) frame({ id, object: 'chat.completion.chunk', created, model: body.model ?? 'openclaw', choices: [], usage: out.usage });
  res.end('data: [DONE]\n\n');
}
const hashOf = (text) => createHash('sha256').update(text).digest('hex');
// Like OpenClaw's \`appliedConfigHash\`: the config the process runs, read at its start and by config.apply (OpenClaw's
// file watcher is not modelled: a file written since is only read by a config.apply).
let appliedHash = hashOf(JSON.stringify(config));
let appliesToFail = behaviour.failConfigApplyAfterWrite ?? 0;
const sessionsFile = join(state, 'fake-sessions.json');
const cronFile = join(state, 'cron-jobs.json');
const devicesFile = join(state, 'devices.json');
const readJson = (file, fallback) => { try { return JSON.parse(readFileSync(file, 'utf8')); } catch { return fallback; } };
// Like OpenClaw, its job store and config are replaced in one step: a test or host reading one never sees half of it.
const replaceFile = (file, text) => { writeFileSync(file + '.tmp', text); renameSync(file + '.tmp', file); };
if (config.gateway?.mode !== 'local') { console.error('Gateway start blocked: set gateway.mode=local'); process.exit(1); }
const workspace = config.agents?.defaults?.workspace ?? join(state, 'workspace');
mkdirSync(join(workspace, 'memory'), { recursive: true });
if (!existsSync(join(workspace, 'AGENTS.md'))) {
  for (const name of ['AGENTS.md', 'SOUL.md', 'IDENTITY.md', 'USER.md', 'BOOTSTRAP.md']) writeFileSync(join(workspace, name), '# ' + name + '\n');
}
appendFileSync(join(state, 'starts.txt'), version + '\n');

const helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
if (behaviour.strayHelper) {
  const launcher = "const c = require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }); c.unref(); require('node:fs').writeFileSync(process.argv[1], String(c.pid));";
  spawn(process.execPath, ['-e', launcher, join(state, 'stray.pid')], { stdio: 'ignore' });
}
const started = Date.now();
const server = http.createServer((req, res) => {
  const json = (status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
  if (req.method === 'POST' && req.url === '/remember') {
    // What a chat turn leaves behind: a session and memory notes.
    mkdirSync(join(state, 'agents', 'main', 'agent'), { recursive: true });
    writeFileSync(join(state, 'agents', 'main', 'agent', 'openclaw-agent.sqlite'), 'sessions');
    writeFileSync(join(workspace, 'MEMORY.md'), 'remembered');
    writeFileSync(join(workspace, 'memory', '2026-01-01.md'), 'daily note');
    return json(200, { ok: true });
  }
  if (req.url.startsWith('/echo')) {
    // What reached the gateway, for proxy tests: method, path, the Authorization header, the body.
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => json(200, { method: req.method, url: req.url, authorization: req.headers.authorization ?? null,
      contentType: req.headers['content-type'] ?? null, cookie: req.headers.cookie ?? null, body: Buffer.concat(chunks).toString('utf8') }));
    return;
  }
  if (req.method === 'GET' && req.url.startsWith('/env/')) {
    // Whether a variable reached the gateway's environment, and a digest to match it by: never the value itself.
    const name = decodeURIComponent(req.url.slice('/env/'.length));
    const value = process.env[name];
    return json(200, { name, set: value !== undefined, sha256: value === undefined ? null : createHash('sha256').update(value).digest('hex') });
  }
  if (req.method === 'POST' && req.url === '/v1/chat/completions' && behaviour.gatewayProtocol && req.headers['x-openclaw-model'] === undefined) {
    if (req.headers.authorization !== 'Bearer ' + token) return json(401, { error: { message: 'Unauthorized', type: 'unauthorized' } });
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      chatTurn(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')).catch((error) => {
        if (!res.headersSent) json(502, { error: { message: error.message, type: 'api_error' } });
        else res.end();
      });
    });
    return;
  }
  if (req.method === 'POST' && req.url === '/v1/chat/completions' && behaviour.warmUpMs !== undefined) {
    const model = req.headers['x-openclaw-model'] ?? null;
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (unownedSession(req)) return json(500, { error: { message: 'internal error', type: 'api_error' } });
      let target = null;
      try { target = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}').model ?? null; } catch {}
      appendFileSync(join(state, 'warm-ups.jsonl'), JSON.stringify({ at: Date.now() - started, model, target,
        sessionKey: req.headers['x-openclaw-session-key'] ?? null,
        tokenOk: req.headers.authorization === 'Bearer ' + token }) + '\n');
      setTimeout(() => json(400, { error: { message: '400 LLM request failed: provider rejected the request schema or tool payload.', type: 'invalid_request_error' } }), behaviour.warmUpMs);
    });
    return;
  }
  if (req.method === 'GET' && req.url === '/v1/models') {
    if (req.headers.authorization !== 'Bearer ' + token) return json(401, { error: { message: 'Unauthorized', type: 'unauthorized' } });
    return json(200, { object: 'list', data: [{ id: 'openclaw', object: 'model' }] });
  }
  if (req.url === '/healthz') return json(200, { ok: true, status: 'live' });
  if (req.url === '/readyz') {
    const ready = Date.now() - started >= (behaviour.readyDelayMs ?? 150);
    return json(ready ? 200 : 503, { ready, failing: ready ? [] : ['startup-sidecars'], uptimeMs: Date.now() - started });
  }
  json(404, { error: 'not found' });
});
// A minimal WebSocket endpoint (RFC 6455, small text frames only): greets with what the upgrade carried, then echoes.
const wss = new WebSocketServer({ noServer: true });
const clients = new Set();
const methods = {
  'config.get': () => {
    const raw = readConfigText();
    return { hash: hashOf(raw), config: JSON.parse(raw), configRevisionHash: hashOf(JSON.stringify(JSON.parse(raw))), appliedConfigHash: appliedHash };
  },
  'config.apply': (params) => {
    if (behaviour.refuseConfigApply) throw { code: 'UNAVAILABLE', message: 'config reload failed; the gateway keeps its previous config' };
    if (params.baseHash !== hashOf(readConfigText())) throw { code: 'INVALID_REQUEST', message: 'config changed since last load; re-run config.get and retry' };
    // Like OpenClaw: an entry of the roster goes only by agents.delete.
    const listed = JSON.parse(params.raw).agents?.entries ?? {};
    const dropped = Object.keys(JSON.parse(readConfigText()).agents?.entries ?? {}).filter((id) => !(id in listed));
    if (dropped.length > 0) throw { code: 'INVALID_REQUEST', message: 'Config write would drop agent roster entries without an explicit deletion: ' + dropped.join(', ') };
    // Like OpenClaw, a config it writes itself carries its own \`meta\` block.
    const next = { ...JSON.parse(params.raw), meta: { lastTouchedVersion: version } };
    replaceFile(process.env.OPENCLAW_CONFIG_PATH, JSON.stringify(next, null, 2));
    appliedHash = hashOf(JSON.stringify(next));
    token = resolveToken(next);
    appendFileSync(join(state, 'config-applies.jsonl'), JSON.stringify({ at: Date.now() - started, model: next.agents?.defaults?.model ?? null }) + '\n');
    if (appliesToFail > 0) {
      appliesToFail -= 1;
      throw { code: 'UNAVAILABLE', message: 'config reload superseded' };
    }
    return { ok: true, hash: hashOf(readConfigText()), changedPaths: [] };
  },
  'secrets.reload': () => { token = resolveToken(JSON.parse(readConfigText())); return { ok: true }; },
  'sessions.list': () => ({ sessions: Object.values(readJson(sessionsFile, {})) }),
  'sessions.delete': () => ({ ok: true }),
  // Like OpenClaw: an existing session with that key is kept.
  'sessions.create': (params) => {
    const sessions = readJson(sessionsFile, {});
    sessions[params.key] ??= { key: params.key, label: params.label ?? null, lastActivityAt: Date.now(), updatedAt: Date.now(), status: 'done', messages: [] };
    writeFileSync(sessionsFile, JSON.stringify(sessions));
    return { ok: true, key: params.key };
  },
  // The devices of \`<state>/devices.json\` (\`{ pending, paired }\`, written by a test).
  'device.pair.list': () => readJson(devicesFile, { pending: [], paired: [] }),
  'device.pair.remove': (params) => {
    const devices = readJson(devicesFile, { pending: [], paired: [] });
    if (!devices.paired.some((device) => device.deviceId === params.deviceId)) throw { code: 'INVALID_REQUEST', message: 'unknown deviceId' };
    devices.paired = devices.paired.filter((device) => device.deviceId !== params.deviceId);
    writeFileSync(devicesFile, JSON.stringify(devices));
    return { deviceId: params.deviceId };
  },
  'cron.list': (params) => {
    if (params.limit !== undefined && params.limit > 200) throw { code: 'INVALID_REQUEST', message: 'invalid cron.list params: at /limit: must be <= 200' };
    return { jobs: readJson(cronFile, []).filter((job) => params.includeDisabled !== false || job.enabled !== false) };
  },
  // Like OpenClaw: the job with its id and, for an \`every\` schedule, its next due time.
  'cron.add': (params) => {
    // Like OpenClaw (assertMainSessionAgentId): a main-session job runs only for the default agent.
    if (params.sessionTarget === 'main' && params.agentId && params.agentId.toLowerCase() !== 'main') {
      throw { code: 'INVALID_REQUEST', message: 'invalid cron.add params: cron: sessionTarget "main" is only valid for the default agent. Use sessionTarget "isolated" with payload.kind "agentTurn" for non-default agents (agentId: ' + params.agentId + ')' };
    }
    const now = Date.now();
    const everyMs = params.schedule?.kind === 'every' ? params.schedule.everyMs : undefined;
    const job = { id: randomUUID(), enabled: true, createdAtMs: now, updatedAtMs: now, ...params,
      state: typeof everyMs === 'number' ? { nextRunAtMs: now + everyMs } : {} };
    replaceFile(cronFile, JSON.stringify([...readJson(cronFile, []), job]));
    return job;
  },
  'cron.get': (params) => {
    const job = readJson(cronFile, []).find((j) => j.id === (params.id ?? params.jobId));
    if (!job) throw { code: 'NOT_FOUND', message: 'unknown cron job ' + (params.id ?? params.jobId) };
    return job;
  },
  // Like OpenClaw: system-owned jobs (here \`system: true\`) refuse changes.
  'cron.update': (params) => {
    const jobs = readJson(cronFile, []);
    const job = jobs.find((j) => j.id === params.id);
    if (!job) throw { code: 'NOT_FOUND', message: 'unknown cron job ' + params.id };
    if (job.system) throw { code: 'INVALID_REQUEST', message: 'system-owned job' };
    Object.assign(job, params.patch);
    replaceFile(cronFile, JSON.stringify(jobs));
    return job;
  },
  'cron.remove': (params) => {
    const jobs = readJson(cronFile, []);
    replaceFile(cronFile, JSON.stringify(jobs.filter((job) => job.id !== params.id)));
    return { ok: true, removed: jobs.some((job) => job.id === params.id) };
  },
  // Like OpenClaw: the agent leaves the roster (written to the config), its jobs go, its files with deleteFiles.
  'agents.delete': (params) => {
    const cfg = JSON.parse(readConfigText());
    if (!cfg.agents?.entries?.[params.agentId]) throw { code: 'NOT_FOUND', message: 'unknown agent ' + params.agentId };
    // Like OpenClaw: in an explicit roster, agent-less jobs need an owner (agents.defaults.systemAgent.agentId).
    if (cfg.agents.ownership === 'explicit' && !cfg.agents.defaults?.systemAgent?.agentId && readJson(cronFile, []).some((job) => !job.agentId)) {
      throw { code: 'INVALID_REQUEST', message: 'Agent-less cron job has no resolvable owner. Pass --agent <id> when creating or editing the job, or set agents.defaults.systemAgent.agentId.' };
    }
    delete cfg.agents.entries[params.agentId];
    replaceFile(process.env.OPENCLAW_CONFIG_PATH, JSON.stringify({ ...cfg, meta: { lastTouchedVersion: version } }, null, 2));
    replaceFile(cronFile, JSON.stringify(readJson(cronFile, []).filter((job) => job.agentId !== params.agentId)));
    if (params.deleteFiles) rmSync(join(state, 'agents', params.agentId), { recursive: true, force: true });
    appendFileSync(join(state, 'agents-deleted.jsonl'), JSON.stringify({ agentId: params.agentId, deleteFiles: params.deleteFiles === true }) + '\n');
    return { ok: true };
  },
  'system-presence': () => [{ mode: 'gateway', reason: 'self', ts: Date.now() }],
  // A turn over the socket: kept like a REST turn, answered by OpenClaw's final \`chat\` event of the run.
  'chat.send': (params, ws) => {
    const runId = randomUUID();
    const key = params.sessionKey;
    const sessions = readJson(sessionsFile, {});
    sessions[key] = { key, lastActivityAt: Date.now(), updatedAt: Date.now(), status: 'done', messages: [...(sessions[key]?.messages ?? []), params.message] };
    writeFileSync(sessionsFile, JSON.stringify(sessions));
    const message = { role: 'assistant', content: [{ type: 'text', text: 'fake reply: ' + params.message }] };
    setTimeout(() => ws.send(JSON.stringify({ type: 'event', event: 'chat', payload: { runId, sessionKey: key, state: 'final', message } })), 10);
    return { runId, status: 'started' };
  },
};
wss.on('connection', (ws) => {
  let authed = null;
  clients.add(ws);
  ws.on('close', () => clients.delete(ws));
  ws.send(JSON.stringify({ type: 'event', event: 'connect.challenge', payload: { nonce: 'fake-nonce', ts: Date.now() } }));
  ws.on('message', (data) => {
    const frame = JSON.parse(String(data));
    const reply = (ok, payloadOrError) => ws.send(JSON.stringify({ type: 'res', id: frame.id, ok, ...(ok ? { payload: payloadOrError } : { error: payloadOrError }) }));
    if (frame.method === 'connect') {
      if (frame.params?.auth?.token !== token) { reply(false, { code: 'UNAUTHORIZED', message: 'gateway token mismatch' }); ws.close(4001, 'unauthorized'); return; }
      authed = token;
      return reply(true, { type: 'hello-ok', protocol: frame.params.maxProtocol });
    }
    if (authed === null) return reply(false, { code: 'UNAUTHORIZED', message: 'connect first' });
    const method = methods[frame.method];
    if (!method) return reply(false, { code: 'METHOD_NOT_FOUND', message: 'unknown method ' + frame.method });
    try { reply(true, method(frame.params ?? {}, ws)); } catch (error) { reply(false, error); }
    // Like OpenClaw: once the token changed, connections made with the old one are closed.
    if (token !== authed) setTimeout(() => { for (const c of clients) c.close(1008, 'gateway auth changed'); }, 10);
  });
});
server.on('upgrade', (req, socket, head) => {
  if (behaviour.gatewayProtocol) { wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)); return; }
  // A gateway that takes warm-up turns is asked to delete the turn's session: it speaks no gateway protocol, so it
  // closes at once (the host reports the session not deleted) instead of leaving the handshake to time out.
  if (behaviour.warmUpMs !== undefined) { socket.destroy(); return; }
  const accept = createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  const frame = (text) => { const data = Buffer.from(text); return Buffer.concat([Buffer.from([0x81, data.length]), data]); };
  socket.write(frame(JSON.stringify({ url: req.url, authorization: req.headers.authorization ?? null })));
  socket.on('data', (buf) => {
    if ((buf[0] & 0x0f) === 0x8) { socket.end(Buffer.from([0x88, 0])); return; }
    const len = buf[1] & 0x7f, mask = buf.subarray(2, 6), data = Buffer.alloc(len);
    for (let i = 0; i < len; i++) data[i] = buf[6 + i] ^ mask[i % 4];
    socket.write(frame('echo:' + data.toString('utf8')));
  });
  socket.on('error', () => {});
});
server.listen(port, config.gateway.bind === 'loopback' ? '127.0.0.1' : '0.0.0.0', () => console.log('[gateway] http server listening'));
if (behaviour.crashAfterMs !== undefined) setTimeout(() => { console.error('fatal: crashed'); helper.kill(); process.exit(1); }, behaviour.crashAfterMs);
const startNumber = readFileSync(join(state, 'starts.txt'), 'utf8').split('\n').filter(Boolean).length;
const schedulerMarked = existsSync(join(state, 'scheduler-fails'));
if (startNumber <= (behaviour.schedulerFailsStarts ?? 0) || schedulerMarked) {
  setTimeout(() => console.error(new Date().toISOString() + ' [cron] failed to start: StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle'),
    schedulerMarked ? Math.max(0, (behaviour.readyDelayMs ?? 150) - 100) : (behaviour.readyDelayMs ?? 150) + (behaviour.schedulerFailsAfterMs ?? 0));
}
process.on('SIGTERM', () => {
  if (behaviour.ignoreSigterm) { console.log('ignoring SIGTERM'); return; }
  console.log('[gateway] signal SIGTERM received, shutting down');
  helper.kill();
  server.close(() => process.exit(0));
});
`;

/** Installs a fake OpenClaw `version` as an npm-project-like directory (`<dir>/node_modules/openclaw`). */
export async function installFakeRuntime(dir: string, version: string, behaviour: FakeGatewayBehaviour = {}): Promise<string> {
  const pkg = join(dir, 'node_modules', 'openclaw');
  await mkdir(pkg, { recursive: true });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'openclaw', version, type: 'module' }));
  // The protocol part uses the repository's \`ws\` (the fake lives outside it, so by absolute URL).
  const ws = pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('ws')), 'wrapper.mjs')).href;
  await writeFile(join(pkg, 'openclaw.mjs'), SCRIPT.replace('__WS_URL__', ws));
  await writeFile(join(pkg, 'behaviour.json'), JSON.stringify(behaviour));
  return dir;
}

/**
 * Sets the jobs a fake gateway's `cron.list` answers (`<stateDir>/cron-jobs.json`) in one step, as OpenClaw replaces
 * its job store: a plain write truncates the file first, and a host's idle check reading it then sees no jobs at all.
 */
export async function writeCronJobs(stateDir: string, jobs: readonly Record<string, unknown>[]): Promise<void> {
  const file = join(stateDir, 'cron-jobs.json');
  await writeFile(`${file}.tmp`, JSON.stringify(jobs));
  await rename(`${file}.tmp`, file);
}
