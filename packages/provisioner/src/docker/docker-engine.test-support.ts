import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type Socket, connect as connectTcp } from 'node:net';
import { join, posix } from 'node:path';
import { GatewayError, connectGateway } from '@aop/gateway-client';
import { type FakeGatewayWs, type FakePairedDevice, startFakeGatewayWs } from '@aop/gateway-client/fake-gateway-ws.test-support';
import { tarArchive } from './docker-wire.js';

/**
 * A Docker Engine on a unix socket, answering the parts of Engine API v1.47 the docker host uses with the shapes,
 * status codes and error messages of the real engine (27.x): `_ping`, `info`, images (inspect, `images/create` with
 * its progress stream), containers (create, start, stop, wait, remove, inspect, list with filters, logs as a
 * multiplexed stream, one-shot stats, update, rename, archive PUT and GET (a regular file), exec create), exec instances (start, hijacked with
 * `Upgrade: tcp` → `101 UPGRADED` and a multiplexed stream that ends when the process does, or a plain streamed
 * answer; inspect with the exit code) and volumes (create, inspect, list, remove). Every call is recorded with its
 * URL, query and parsed body.
 *
 * What runs in a container:
 * - the gateway (any command but `sh -c`): an emulated OpenClaw gateway that refuses to start without a valid config
 *   at `OPENCLAW_CONFIG_PATH`, seeds the workspace, appends its image tag to `<state>/starts.txt`, and serves
 *   `/healthz` and `/readyz` on 127.0.0.1 at the port the engine publishes. Like OpenClaw reached through Docker's
 *   bridge, `/readyz` answers its full body only to the gateway token. `POST /remember` leaves what a chat turn
 *   leaves (a session and memory files). WebSocket upgrades on the published port are relayed (as Docker's proxy
 *   does) to a protocol-v4 gateway (`startFakeGatewayWs`) that sees them as non-loopback: a token-only connection gets
 *   no scopes, a signed device must be paired. Paired devices are kept in the state volume (`<state>/devices.json`,
 *   standing in for OpenClaw's `openclaw.sqlite`), so a new container on the same volume still knows them.
 * - `exec` into a running gateway container: `openclaw devices approve <requestId> [--json]` and
 *   `openclaw devices list [--json]` behave like OpenClaw's CLI inside the container: they reach the gateway over its
 *   loopback (trusted) with the token the container's config resolves to (else its environment's). Any other command runs on this
 *   machine as the container's process would: `node` is this Node, every argument that is an absolute path is
 *   replaced by where that path is here (the directory of the volume mounted there, else the container's own layer),
 *   an attached stdin is fed from the hijacked socket (its write side closing is the end of input), and the output
 *   goes back as multiplexed frames while the process runs; a command that does not exist exits 127 with the
 *   runtime's message.
 * - `GET /containers/{id}/logs` with `follow=1` keeps the answer open and sends each new line as a frame while the
 *   container runs, and ends when it stops (like the engine); `since` (Unix seconds with nanoseconds) and `tail`
 *   pick the lines sent first. Log timestamps only go forward.
 * - helpers (`Entrypoint: ['sh', '-c']`): the script runs with /bin/sh on this machine; environment values that name a
 *   mount point are replaced by the directory of the volume mounted there.
 * Volumes are directories under `dir`.
 */

export const ENGINE_API_VERSION = '1.47';
const SERVER = 'Docker/27.3.1 (linux)';
const ZERO_TIME = '0001-01-01T00:00:00Z';

export interface ImageBehaviour {
  /** `/readyz` answers 503 `startup-sidecars` this long after start (default 100 ms). */
  readyDelayMs?: number;
  /** The gateway exits with code 1 right after start; the restart policy then keeps the container restarting. */
  exitImmediately?: boolean;
  /** The first this many `config.apply` calls of each gateway write and apply the config, then fail (`UNAVAILABLE`). */
  failConfigApplyAfterWrite?: number;
  /**
   * The first this many starts of a state volume (its `starts.txt`) print OpenClaw's `[cron] failed to start: …` line
   * on stderr as the gateway comes up, as the pinned OpenClaw does when its scheduler lost a race for its state database.
   */
  schedulerFailsStarts?: number;
}

export interface EngineOptions {
  socketPath: string;
  /** Volumes and container file systems live here. */
  dir: string;
  memTotal?: number;
  ncpu?: number;
  /** Images on the engine already. */
  images?: Record<string, ImageBehaviour>;
  /** Images a pull can fetch. */
  registry?: Record<string, ImageBehaviour>;
  /** Pulls that stream progress and then end with this error (HTTP 200, like a registry failing mid-pull). */
  failingPulls?: Record<string, string>;
}

export interface EngineCall {
  method: string;
  /** The path without the `/v1.xx` prefix. */
  path: string;
  /** The request line's URL as sent. */
  url: string;
  apiVersion: string | null;
  query: Record<string, string>;
  /** Parsed JSON body, the entries of a tar body, or undefined. */
  body: any;
}

export interface ArchiveEntry {
  /** Absolute path in the container. */
  path: string;
  type: 'file' | 'directory';
  mode: number;
  uid: number;
  gid: number;
  content: string;
}

interface State {
  Status: 'created' | 'running' | 'restarting' | 'exited' | 'removing' | 'paused' | 'dead';
  Running: boolean;
  Paused: boolean;
  Restarting: boolean;
  OOMKilled: boolean;
  Dead: boolean;
  Pid: number;
  ExitCode: number;
  Error: string;
  StartedAt: string;
  FinishedAt: string;
}

export interface EmulatedContainer {
  Id: string;
  Name: string;
  created: string;
  /** The create body (Config fields), HostConfig apart. */
  config: Record<string, any>;
  hostConfig: Record<string, any>;
  state: State;
  restartCount: number;
  hostPort: number | null;
  logs: Array<{ stream: 1 | 2; text: string; time: string }>;
  /** Every archive written into the container, in order. */
  archives: ArchiveEntry[][];
  stats: Record<string, unknown> | null;
  startedMs: number;
  readyDelayMs: number;
  server: Server | null;
  process: ChildProcess | null;
  waiters: Array<() => void>;
  /** The protocol-v4 side of the running gateway (WebSocket, device pairing), null when it does not run. */
  gateway: FakeGatewayWs | null;
  /** Open `logs?follow=1` answers: each gets new lines until the container stops. */
  follows: Set<{ send(entry: { stream: 1 | 2; text: string; time: string }): void; end(): void }>;
  /** `<state>/devices.json` of the running gateway, where its paired devices are kept. */
  devicesFile: string | null;
}

/** An exec instance (`POST /containers/{id}/exec`). */
export interface EmulatedExec {
  ID: string;
  ContainerID: string;
  Cmd: string[];
  Env: string[];
  User: string;
  Running: boolean;
  /** Null until the process ran. */
  ExitCode: number | null;
  Pid: number;
  /** Output of the process, stream 1 stdout / 2 stderr. */
  output: Array<{ stream: 1 | 2; text: string }>;
  /** `AttachStdin` at create: a hijacked start feeds the process's standard input from the socket. */
  attachStdin: boolean;
}

interface Volume {
  Name: string;
  Labels: Record<string, string>;
  CreatedAt: string;
}

export interface DockerEngineEmulator {
  readonly socketPath: string;
  readonly calls: EngineCall[];
  /** Calls whose method and path (without the version prefix) match. */
  callsTo(method: string, path: RegExp): EngineCall[];
  container(nameOrId: string): EmulatedContainer | undefined;
  containers(): EmulatedContainer[];
  volumeNames(): string[];
  volumeLabels(name: string): Record<string, string> | undefined;
  /** Directory holding a volume's files. */
  volumeDir(name: string): string;
  /** Adds a line to a container's output as the gateway would print it. */
  writeLog(nameOrId: string, stream: 'stdout' | 'stderr', text: string): void;
  /** What `GET /containers/{id}/stats?stream=false` answers for this container while it runs. */
  setStats(nameOrId: string, stats: Record<string, unknown>): void;
  /** The gateway process dies (`oomKilled`: by the kernel's OOM killer); the restart policy takes over. */
  crash(nameOrId: string, options?: { exitCode?: number; oomKilled?: boolean }): void;
  /** The running gateway's protocol side (pairing state, received frames), when the container runs one. */
  gateway(nameOrId: string): FakeGatewayWs | null;
  /** Exec instances, in creation order. */
  execs(): EmulatedExec[];
  close(): Promise<void>;
}

/** RFC 3339 with nanoseconds, as the engine writes times. */
function engineTime(ms = Date.now()): string {
  return `${new Date(ms).toISOString().slice(0, -1)}${String(process.hrtime()[1] % 1_000_000).padStart(6, '0')}Z`;
}

let lastLogNs = 0n;
/** A log line's time: now, and always after the line before (the engine's clock does not go back between lines). */
function logTime(): string {
  let ns = BigInt(Date.now()) * 1_000_000n + BigInt(process.hrtime()[1] % 1_000_000);
  if (ns <= lastLogNs) ns = lastLogNs + 1n;
  lastLogNs = ns;
  const ms = Number(ns / 1_000_000n);
  return `${new Date(ms).toISOString().slice(0, -1)}${String(ns % 1_000_000n).padStart(6, '0')}Z`;
}

/** An engine time (`…T…:SS.nnnnnnnnnZ`) in nanoseconds. */
function timeNs(time: string): bigint {
  const match = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(time);
  if (!match) return 0n;
  return BigInt(Date.parse(`${match[1]}Z`)) * 1_000_000n + BigInt((match[2] ?? '').slice(0, 9).padEnd(9, '0'));
}

/** `since`/`until` of the logs endpoint: Unix seconds, optionally with a fraction of up to nine digits. */
function sinceNs(value: string | undefined): bigint | null {
  const match = /^(\d+)(?:\.(\d{1,9}))?$/.exec(value ?? '');
  if (!match) return null;
  return BigInt(match[1] as string) * 1_000_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

const truthy = (value: string | undefined) => value === '1' || value === 'true';
const imageId = (ref: string) => `sha256:${createHash('sha256').update(ref).digest('hex')}`;

function parseTar(data: Buffer): Array<Omit<ArchiveEntry, 'path'> & { name: string }> {
  const entries: Array<Omit<ArchiveEntry, 'path'> & { name: string }> = [];
  const text = (block: Buffer, start: number, length: number) =>
    block
      .subarray(start, start + length)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  const octal = (block: Buffer, start: number, length: number) => Number.parseInt(text(block, start, length).trim() || '0', 8);
  let offset = 0;
  while (offset + 512 <= data.length) {
    const header = data.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const stored = octal(header, 148, 8);
    let sum = 0;
    for (let i = 0; i < 512; i += 1) sum += i >= 148 && i < 156 ? 0x20 : (header[i] ?? 0);
    if (sum !== stored) throw new Error('archive/tar: invalid tar header');
    const prefix = text(header, 257, 6) === 'ustar' ? text(header, 345, 155) : '';
    const name = prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100);
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] ?? 0x30) === '5' ? 'directory' : 'file';
    const content = data.subarray(offset + 512, offset + 512 + size).toString('utf8');
    entries.push({ name, type, mode: octal(header, 100, 8), uid: octal(header, 108, 8), gid: octal(header, 116, 8), content });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

function labelFilters(filters: Record<string, unknown>, key: string): string[] {
  const value = filters[key];
  if (Array.isArray(value)) return value.map(String);
  if (value && typeof value === 'object') return Object.keys(value);
  return [];
}

function matchesLabels(labels: Record<string, string>, wanted: string[]): boolean {
  return wanted.every((filter) => {
    const eq = filter.indexOf('=');
    return eq < 0 ? filter in labels : labels[filter.slice(0, eq)] === filter.slice(eq + 1);
  });
}

export async function startDockerEngine(options: EngineOptions): Promise<DockerEngineEmulator> {
  const calls: EngineCall[] = [];
  const containers = new Map<string, EmulatedContainer>();
  const execs = new Map<string, EmulatedExec>();
  const volumes = new Map<string, Volume>();
  const images = new Map<string, ImageBehaviour>(Object.entries(options.images ?? {}));
  const registry = options.registry ?? {};
  const failingPulls = options.failingPulls ?? {};
  const imageDirs = new Set(['/', '/app', '/home', '/home/node', '/tmp']);
  let pids = 4000;

  const volumeDir = (name: string) => join(options.dir, 'volumes', name, '_data');
  const rootfs = (c: EmulatedContainer) => join(options.dir, 'containers', c.Id, 'rootfs');
  const find = (nameOrId: string) =>
    containers.get(nameOrId) ??
    [...containers.values()].find((c) => c.Name === nameOrId.replace(/^\//, '') || (nameOrId.length >= 12 && c.Id.startsWith(nameOrId)));
  const mountsOf = (c: EmulatedContainer): Array<{ Source: string; Target: string; ReadOnly?: boolean }> =>
    (c.hostConfig.Mounts ?? []).filter((m: { Type?: string }) => m.Type === 'volume');
  /** A path in the container → where it is on this machine (a volume's directory, else the container's layer). */
  const resolve = (c: EmulatedContainer, path: string) => {
    const mount = mountsOf(c)
      .filter((m) => path === m.Target || path.startsWith(`${m.Target}/`))
      .sort((a, b) => b.Target.length - a.Target.length)[0];
    return mount ? join(volumeDir(mount.Source), path.slice(mount.Target.length)) : join(rootfs(c), path);
  };
  const dirExists = (c: EmulatedContainer, path: string) =>
    imageDirs.has(path) || mountsOf(c).some((m) => m.Target === path || m.Target.startsWith(`${path}/`)) || existsSync(resolve(c, path));
  const envOf = (c: EmulatedContainer) =>
    Object.fromEntries(((c.config.Env ?? []) as string[]).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const log = (c: EmulatedContainer, stream: 1 | 2, text: string) => {
    const entry = { stream, text, time: logTime() };
    c.logs.push(entry);
    for (const follow of c.follows) follow.send(entry);
  };
  const endFollows = (c: EmulatedContainer) => {
    for (const follow of [...c.follows]) follow.end();
  };
  /**
   * The gateway token as OpenClaw resolves it: `gateway.auth.token` (a string, or a file SecretRef — a JSON pointer into
   * its `secrets.providers` file, read where the container sees it), else `OPENCLAW_GATEWAY_TOKEN`; undefined when a
   * SecretRef does not resolve, null when there is none.
   */
  const tokenOf = (c: EmulatedContainer, config: any, env: Record<string, string>): string | null | undefined => {
    const ref = config.gateway?.auth?.token;
    if (typeof ref === 'string') return ref;
    if (ref === undefined || ref === null) return env.OPENCLAW_GATEWAY_TOKEN ?? null;
    const provider = config.secrets?.providers?.[ref.provider];
    if (ref.source !== 'file' || provider?.source !== 'file' || typeof ref.id !== 'string') return undefined;
    try {
      const file = JSON.parse(readFileSync(resolve(c, provider.path), 'utf8'));
      const value = ref.id
        .split('/')
        .slice(1)
        .reduce((node: any, key: string) => node?.[key], file);
      return typeof value === 'string' && value !== '' ? value : undefined;
    } catch {
      return undefined;
    }
  };
  const isHelper = (c: EmulatedContainer) => Array.isArray(c.config.Entrypoint) && c.config.Entrypoint.join(' ') === 'sh -c';
  const ready = (c: EmulatedContainer) => c.state.Running && !c.state.Restarting && Date.now() - c.startedMs >= c.readyDelayMs;

  function ensureVolume(name: string, labels: Record<string, string> = {}): Volume {
    let volume = volumes.get(name);
    if (!volume) {
      volume = { Name: name, Labels: labels, CreatedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
      volumes.set(name, volume);
      mkdirSync(volumeDir(name), { recursive: true });
    }
    return volume;
  }

  const volumeInfo = (v: Volume) => ({
    CreatedAt: v.CreatedAt,
    Driver: 'local',
    Labels: v.Labels,
    Mountpoint: `/var/lib/docker/volumes/${v.Name}/_data`,
    Name: v.Name,
    Options: null,
    Scope: 'local',
  });

  /** The gateway's paired devices go to its state volume, as OpenClaw keeps them in `openclaw.sqlite`. */
  function stopGateway(c: EmulatedContainer): void {
    const gateway = c.gateway;
    if (!gateway) return;
    try {
      if (c.devicesFile) writeFileSync(c.devicesFile, JSON.stringify([...gateway.pairing.paired.values()], null, 2));
    } catch {
      // the volume is gone (removed with the container): nothing to keep
    }
    c.gateway = null;
    void gateway.close();
  }

  function finish(c: EmulatedContainer, exitCode: number, options: { restart: boolean; oomKilled?: boolean }): void {
    stopGateway(c);
    endFollows(c); // the engine ends a follow when the container's process exits
    c.server?.closeAllConnections();
    c.server?.close();
    c.server = null;
    c.hostPort = null;
    const policy = c.hostConfig.RestartPolicy?.Name ?? 'no';
    const restarts = options.restart && (policy === 'always' || policy === 'unless-stopped' || (policy === 'on-failure' && exitCode !== 0));
    c.state = {
      ...c.state,
      Status: restarts ? 'restarting' : 'exited',
      Running: restarts, // the engine counts a container waiting for its restart as running
      Restarting: restarts,
      OOMKilled: options.oomKilled === true,
      Pid: 0,
      ExitCode: exitCode,
      FinishedAt: engineTime(),
    };
    if (restarts) c.restartCount += 1;
    for (const wake of c.waiters.splice(0)) wake();
  }

  async function runGateway(c: EmulatedContainer): Promise<void> {
    const behaviour = images.get(c.config.Image) ?? {};
    const env = envOf(c);
    const tag = String(c.config.Image).split(':').pop();
    c.state = {
      ...c.state,
      Status: 'running',
      Running: true,
      Restarting: false,
      OOMKilled: false,
      Pid: ++pids,
      ExitCode: 0,
      Error: '',
      StartedAt: engineTime(),
    };
    c.startedMs = Date.now();
    c.readyDelayMs = behaviour.readyDelayMs ?? 100;
    log(c, 1, `fake openclaw ${tag} starting`);
    const fail = (text: string) => {
      log(c, 2, text);
      finish(c, 1, { restart: true });
    };
    let config: any;
    try {
      config = JSON.parse(readFileSync(resolve(c, env.OPENCLAW_CONFIG_PATH ?? '/nonexistent'), 'utf8'));
    } catch {
      return fail(`Missing config at ${env.OPENCLAW_CONFIG_PATH}: run openclaw setup or set gateway.mode=local`);
    }
    if (config.gateway?.mode !== 'local') return fail('Gateway start blocked: set gateway.mode=local');
    const configPath = resolve(c, env.OPENCLAW_CONFIG_PATH ?? '/nonexistent');
    const startToken = tokenOf(c, config, env);
    if (startToken === undefined) return fail('Gateway auth token SecretRef is unresolved: refusing to start');
    if (config.gateway?.bind !== 'loopback' && !startToken) return fail('Refusing to bind beyond loopback without auth');
    const state = resolve(c, env.OPENCLAW_STATE_DIR ?? '/home/node/.openclaw');
    mkdirSync(state, { recursive: true });
    appendFileSync(join(state, 'starts.txt'), `${tag}\n`);
    if (behaviour.exitImmediately) return fail('fatal: this version cannot start');
    const starts = readFileSync(join(state, 'starts.txt'), 'utf8').split('\n').filter(Boolean).length;
    if (starts <= (behaviour.schedulerFailsStarts ?? 0)) {
      log(c, 2, '[cron] failed to start: StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle');
    }
    const workspace = resolve(c, config.agents?.defaults?.workspace ?? `${env.OPENCLAW_STATE_DIR}/workspace`);
    mkdirSync(join(workspace, 'memory'), { recursive: true });
    if (!existsSync(join(workspace, 'AGENTS.md'))) {
      for (const name of ['AGENTS.md', 'SOUL.md', 'IDENTITY.md', 'USER.md', 'BOOTSTRAP.md'])
        writeFileSync(join(workspace, name), `# ${name}\n`);
    }
    const server = createServer((req, res) => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const authorized = req.headers.authorization === `Bearer ${c.gateway?.currentToken() ?? startToken}`;
      if (req.url === '/healthz') return json(200, { ok: true, status: 'live' });
      if (req.url === '/v1/models') {
        return authorized
          ? json(200, { object: 'list', data: [{ id: 'openclaw/main', object: 'model', owned_by: 'openclaw' }] })
          : json(401, { error: { message: 'Unauthorized', type: 'unauthorized' } });
      }
      if (req.url === '/readyz') {
        const isReady = ready(c);
        const uptimeMs = Date.now() - c.startedMs;
        return json(
          isReady ? 200 : 503,
          authorized ? { ready: isReady, failing: isReady ? [] : ['startup-sidecars'], uptimeMs } : { ready: isReady },
        );
      }
      if (req.method === 'POST' && req.url === '/remember' && authorized) {
        mkdirSync(join(state, 'agents', 'main', 'agent'), { recursive: true });
        writeFileSync(join(state, 'agents', 'main', 'agent', 'openclaw-agent.sqlite'), 'sessions');
        writeFileSync(join(workspace, 'MEMORY.md'), 'remembered');
        writeFileSync(join(workspace, 'memory', '2026-01-01.md'), 'daily note');
        return json(200, { ok: true });
      }
      json(404, { error: 'not found' });
    });
    const gateway = await startFakeGatewayWs({
      token: startToken ?? '',
      remoteListener: true,
      failConfigApplyAfterWrite: behaviour.failConfigApplyAfterWrite,
      configFile: {
        read: () => readFileSync(configPath, 'utf8'),
        // Like OpenClaw, a config it writes itself carries its own `meta` block.
        write: (raw) => writeFileSync(configPath, JSON.stringify({ ...JSON.parse(raw), meta: { lastTouchedVersion: tag } }, null, 2)),
        resolveToken: () => {
          const token = tokenOf(c, JSON.parse(readFileSync(configPath, 'utf8')), env);
          if (!token) throw new Error('Gateway auth token SecretRef is unresolved');
          return token;
        },
      },
    });
    c.devicesFile = join(state, 'devices.json');
    if (existsSync(c.devicesFile)) {
      for (const device of JSON.parse(readFileSync(c.devicesFile, 'utf8')) as FakePairedDevice[])
        gateway.pairing.paired.set(device.deviceId, device);
    }
    c.gateway = gateway;
    // Docker's proxy: a WebSocket on the published port reaches the gateway from outside its loopback.
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const inside = c.gateway?.remotePort;
      if (!inside) return socket.destroy();
      const upstream = connectTcp(inside, '127.0.0.1', () => {
        const headers = Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => `${k}: ${x}`) : [`${k}: ${v}`]));
        upstream.write(`${req.method} ${req.url} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`);
        if (head.length > 0) upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    const binding = c.hostConfig.PortBindings?.['18789/tcp']?.[0] as { HostIp?: string } | undefined;
    await new Promise<void>((done) => server.listen(0, binding?.HostIp || '127.0.0.1', done));
    c.server = server;
    c.hostPort = (server.address() as { port: number }).port;
    log(c, 1, `[gateway] http server listening on 0.0.0.0:18789 (bind=${config.gateway?.bind})`);
  }

  function runHelper(c: EmulatedContainer): void {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(envOf(c))) {
      const mount = mountsOf(c).find((m) => m.Target === value);
      env[key] = mount ? volumeDir(mount.Source) : value;
    }
    const child = spawn('/bin/sh', ['-c', String(c.config.Cmd?.[0] ?? 'true')], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    c.process = child;
    c.state = { ...c.state, Status: 'running', Running: true, Pid: child.pid ?? ++pids, StartedAt: engineTime() };
    c.startedMs = Date.now();
    for (const [stream, source] of [
      [1, child.stdout],
      [2, child.stderr],
    ] as const) {
      source.setEncoding('utf8');
      source.on('data', (chunk: string) => {
        for (const line of chunk.split('\n').filter(Boolean)) log(c, stream, line);
      });
    }
    child.on('close', (code) => {
      c.process = null;
      finish(c, code ?? 137, { restart: false });
    });
  }

  /** Multiplexed-stream frames of an exec's output (header: stream type, 3 zero bytes, big-endian length). */
  function execFrames(exec: EmulatedExec): Buffer {
    return Buffer.concat(exec.output.map(({ stream, text }) => frame(stream, Buffer.from(text))));
  }

  /**
   * The part of OpenClaw's CLI an exec can run: `openclaw devices approve <requestId>` and `openclaw devices list`,
   * with `--json`. Like the real CLI inside the container they reach the gateway at its loopback with the token its
   * config resolves to (measured with the pinned OpenClaw: a file SecretRef is resolved, and wins over the environment),
   * so the gateway trusts them (no device, full scopes).
   */
  async function openclawCli(c: EmulatedContainer, exec: EmulatedExec): Promise<number> {
    const out = (text: string) => exec.output.push({ stream: 1, text });
    const err = (text: string) => exec.output.push({ stream: 2, text });
    const env = { ...envOf(c), ...Object.fromEntries(exec.Env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) };
    const args = exec.Cmd.slice(1);
    const json = args.includes('--json');
    const tokenAt = args.indexOf('--token');
    // Like OpenClaw's CLI: `--token`, else the config's token (a file SecretRef resolved as the gateway does), else the environment.
    const config = (() => {
      try {
        return JSON.parse(readFileSync(resolve(c, env.OPENCLAW_CONFIG_PATH ?? '/nonexistent'), 'utf8'));
      } catch {
        return {};
      }
    })();
    const token = tokenAt >= 0 ? args[tokenAt + 1] : (tokenOf(c, config, env) ?? undefined);
    const positional = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--token');
    const [group, command, requestId] = positional;
    if (group !== 'devices' || (command !== 'approve' && command !== 'list')) {
      err(`error: unknown command '${positional.join(' ')}'\n`);
      return 1;
    }
    if (command === 'approve' && !requestId) {
      // Without an id the real CLI only previews the newest request and exits 1.
      err('Approve this exact request with: openclaw devices approve <requestId>\n');
      return 1;
    }
    const gateway = c.gateway;
    if (!gateway) {
      err('Error: gateway connect failed: connect ECONNREFUSED 127.0.0.1:18789\n');
      return 1;
    }
    let conn: Awaited<ReturnType<typeof connectGateway>> | undefined;
    try {
      conn = await connectGateway({ url: gateway.url, token, clientId: 'cli', clientMode: 'cli', retryDeadlineMs: 0 });
      const result =
        command === 'list' ? await conn.request('device.pair.list', {}) : await conn.request('device.pair.approve', { requestId });
      if (json) out(`${JSON.stringify(result, null, 2)}\n`);
      else if (command === 'approve')
        out(`Approved ${(result as { device?: { deviceId?: string } }).device?.deviceId ?? 'ok'} (${requestId})\n`);
      else out(`${JSON.stringify(result)}\n`);
      return 0;
    } catch (failure) {
      const message = failure instanceof Error ? failure.message : String(failure);
      if (failure instanceof GatewayError && failure.code === 'INVALID_REQUEST' && message === 'unknown requestId') {
        err(`No pending device request matches ${requestId}. Run \`openclaw devices list\` and retry with the current request ID.\n`);
      } else err(`Error: ${message}\n`);
      return 1;
    } finally {
      await conn?.close();
    }
  }

  /**
   * Runs an exec: OpenClaw's CLI in a gateway container, else the command on this machine (see the top of the file).
   * `io` is the hijacked socket's side: input bytes come from it, output frames go to it as they are written.
   */
  async function runExec(
    c: EmulatedContainer,
    exec: EmulatedExec,
    io?: { input: Socket | null; pending: Buffer; write(frame: Buffer): void },
  ): Promise<void> {
    exec.Running = true;
    exec.Pid = ++pids;
    let code: number;
    if (exec.Cmd[0] === 'openclaw' && !isHelper(c)) {
      code = await openclawCli(c, exec);
      for (const { stream, text } of exec.output) io?.write(frame(stream, Buffer.from(text)));
    } else code = await runHere(c, exec, io);
    exec.Running = false;
    exec.ExitCode = code;
  }

  /** A command as the container would run it, on this machine: paths through the container's mounts, `node` is this Node. */
  function runHere(c: EmulatedContainer, exec: EmulatedExec, io?: { input: Socket | null; pending: Buffer; write(frame: Buffer): void }) {
    const [command = '', ...args] = exec.Cmd;
    const here = (arg: string) => (arg.startsWith('/') ? resolve(c, posix.normalize(arg)) : arg);
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
    for (const kv of exec.Env) env[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
    return new Promise<number>((done) => {
      const child = spawn(command === 'node' ? process.execPath : command, args.map(here), { env, stdio: ['pipe', 'pipe', 'pipe'] });
      const emit = (stream: 1 | 2, chunk: Buffer) => {
        exec.output.push({ stream, text: chunk.toString('utf8') });
        io?.write(frame(stream, chunk));
      };
      child.stdout.on('data', (chunk: Buffer) => emit(1, chunk));
      child.stderr.on('data', (chunk: Buffer) => emit(2, chunk));
      child.stdin.on('error', () => undefined); // the process may exit before taking all of its input
      const input = exec.attachStdin ? (io?.input ?? null) : null;
      if (input) {
        if (io?.pending.length) child.stdin.write(io.pending);
        input.on('data', (chunk: Buffer) => child.stdin.write(chunk));
        input.once('end', () => child.stdin.end());
      } else child.stdin.end();
      child.once('error', () => {
        emit(
          2,
          Buffer.from(
            `OCI runtime exec failed: exec failed: unable to start container process: exec: "${command}": executable file not found in $PATH: unknown\r\n`,
          ),
        );
        done(127);
      });
      child.once('close', (exitCode, signal) => done(exitCode ?? (signal ? 137 : 1)));
    });
  }

  function execInspect(exec: EmulatedExec) {
    return {
      CanRemove: false,
      ContainerID: exec.ContainerID,
      DetachKeys: '',
      ExitCode: exec.ExitCode,
      ID: exec.ID,
      OpenStderr: true,
      OpenStdin: exec.attachStdin,
      OpenStdout: true,
      ProcessConfig: { arguments: exec.Cmd.slice(1), entrypoint: exec.Cmd[0], privileged: false, tty: false, user: exec.User },
      Running: exec.Running,
      Pid: exec.Running ? exec.Pid : 0,
    };
  }

  /**
   * `POST /exec/{id}/start` with `Connection: Upgrade` / `Upgrade: tcp` (how the docker CLI and dockerode's `hijack`
   * attach): the engine answers `101 UPGRADED` and the raw socket then carries the multiplexed output until the
   * process ends, when the engine closes it.
   */
  function handleUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => undefined); // a client that gives up resets the connection
    const url = new URL(req.url ?? '/', 'http://docker');
    const versioned = /^\/v(\d+\.\d+)(\/.*)$/.exec(url.pathname);
    const path = decodeURIComponent(versioned?.[2] ?? url.pathname);
    const length = Number(req.headers['content-length'] ?? 0);
    const chunks = [head];
    let got = head.length;
    const run = () => {
      const raw = Buffer.concat(chunks).subarray(0, length);
      let body: any;
      try {
        body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      calls.push({
        method: req.method ?? 'POST',
        path,
        url: req.url ?? '',
        apiVersion: versioned?.[1] ?? null,
        query: Object.fromEntries(url.searchParams),
        body,
      });
      const match = /^\/exec\/([^/]+)\/start$/.exec(path);
      const exec = match ? execs.get(match[1] as string) : undefined;
      const refuse = (status: string, message: string) => {
        const text = `${JSON.stringify({ message })}\n`;
        socket.end(
          `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nApi-Version: ${ENGINE_API_VERSION}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
        );
      };
      if (req.method !== 'POST' || !match) return refuse('404 Not Found', 'page not found');
      if (!exec) return refuse('404 Not Found', `No such exec instance: ${match[1]}`);
      if (exec.ExitCode !== null || exec.Running) return refuse('409 Conflict', `Exec command ${exec.ID} is already running`);
      const c = containers.get(exec.ContainerID);
      if (!c?.state.Running) return refuse('409 Conflict', `container ${exec.ContainerID} is not running`);
      socket.write(
        `HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nApi-Version: ${ENGINE_API_VERSION}\r\nServer: ${SERVER}\r\n\r\n`,
      );
      // Bytes after the start request's body are the first of the process's input.
      const pending = Buffer.concat(chunks).subarray(length);
      const write = (data: Buffer) => {
        if (!socket.destroyed) socket.write(data);
      };
      void runExec(c, exec, { input: socket, pending, write }).then(() => socket.end());
    };
    if (got >= length) {
      run();
      return;
    }
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      got += chunk.length;
      if (got < length) return;
      socket.off('data', onData);
      run();
    };
    socket.on('data', onData);
  }

  function stopContainer(c: EmulatedContainer): void {
    if (c.process) {
      c.process.kill('SIGKILL');
      return;
    }
    if (c.server) log(c, 1, '[gateway] signal SIGTERM received, shutting down');
    finish(c, 0, { restart: false });
  }

  function health(c: EmulatedContainer) {
    if (!c.config.Healthcheck) return undefined;
    if (!c.state.Running || c.state.Restarting) return { Status: 'unhealthy', FailingStreak: 0, Log: [] };
    if (!ready(c)) return { Status: 'starting', FailingStreak: 0, Log: [] };
    const at = c.startedMs + c.readyDelayMs;
    return { Status: 'healthy', FailingStreak: 0, Log: [{ Start: engineTime(at), End: engineTime(at + 40), ExitCode: 0, Output: '' }] };
  }

  function statusText(c: EmulatedContainer): string {
    const ago = (since: string) => `${Math.max(1, Math.round((Date.now() - Date.parse(since)) / 1000))} seconds`;
    if (c.state.Restarting) return `Restarting (${c.state.ExitCode}) ${ago(c.state.FinishedAt)} ago`;
    if (c.state.Running) {
      const h = health(c)?.Status;
      return `Up ${ago(c.state.StartedAt)}${h ? ` (${h === 'starting' ? 'health: starting' : h})` : ''}`;
    }
    if (c.state.Status === 'created') return 'Created';
    return `Exited (${c.state.ExitCode}) ${ago(c.state.FinishedAt)} ago`;
  }

  function networks(c: EmulatedContainer) {
    const mode = c.hostConfig.NetworkMode ?? 'bridge';
    if (mode === 'none') return { none: { NetworkID: 'none-net', EndpointID: '', Gateway: '', IPAddress: '', IPPrefixLen: 0 } };
    return {
      [mode]: {
        IPAMConfig: null,
        Links: null,
        Aliases: null,
        MacAddress: c.state.Running ? '02:42:ac:11:00:02' : '',
        NetworkID: createHash('sha256').update(mode).digest('hex'),
        EndpointID: c.state.Running ? createHash('sha256').update(c.Id).digest('hex') : '',
        Gateway: c.state.Running ? '172.17.0.1' : '',
        IPAddress: c.state.Running ? '172.17.0.2' : '',
        IPPrefixLen: c.state.Running ? 16 : 0,
        IPv6Gateway: '',
        GlobalIPv6Address: '',
        GlobalIPv6PrefixLen: 0,
        DNSNames: null,
      },
    };
  }

  function inspect(c: EmulatedContainer) {
    const hostIp = c.hostConfig.PortBindings?.['18789/tcp']?.[0]?.HostIp ?? '0.0.0.0';
    const h = health(c);
    const cmd = [
      ...((c.config.Entrypoint as string[] | undefined) ?? ['docker-entrypoint.sh']),
      ...((c.config.Cmd as string[] | undefined) ?? []),
    ];
    return {
      Id: c.Id,
      Created: c.created,
      Path: cmd[0],
      Args: cmd.slice(1),
      State: { ...c.state, ...(h ? { Health: h } : {}) },
      Image: imageId(c.config.Image),
      ResolvConfPath: `/var/lib/docker/containers/${c.Id}/resolv.conf`,
      HostnamePath: `/var/lib/docker/containers/${c.Id}/hostname`,
      HostsPath: `/var/lib/docker/containers/${c.Id}/hosts`,
      LogPath: '',
      Name: `/${c.Name}`,
      RestartCount: c.restartCount,
      Driver: 'overlay2',
      Platform: 'linux',
      MountLabel: '',
      ProcessLabel: '',
      AppArmorProfile: 'docker-default',
      ExecIDs: null,
      HostConfig: { NetworkMode: 'bridge', RestartPolicy: { Name: 'no', MaximumRetryCount: 0 }, Memory: 0, NanoCpus: 0, ...c.hostConfig },
      Mounts: mountsOf(c).map((m) => ({
        Type: 'volume',
        Name: m.Source,
        Source: `/var/lib/docker/volumes/${m.Source}/_data`,
        Destination: m.Target,
        Driver: 'local',
        Mode: 'z',
        RW: m.ReadOnly !== true,
        Propagation: '',
      })),
      Config: {
        Hostname: c.Id.slice(0, 12),
        Domainname: '',
        User: c.config.User ?? '',
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        ExposedPorts: c.config.ExposedPorts ?? {},
        Tty: false,
        OpenStdin: false,
        StdinOnce: false,
        Env: [...(c.config.Env ?? []), 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'NODE_VERSION=24.11.0'],
        Cmd: c.config.Cmd ?? null,
        Healthcheck: c.config.Healthcheck,
        Image: c.config.Image,
        Volumes: null,
        WorkingDir: '/app',
        Entrypoint: c.config.Entrypoint ?? ['docker-entrypoint.sh'],
        OnBuild: null,
        Labels: c.config.Labels ?? {},
        StopSignal: c.config.StopSignal,
        StopTimeout: c.config.StopTimeout,
      },
      NetworkSettings: {
        Bridge: '',
        SandboxID: c.state.Running ? createHash('sha256').update(`sandbox${c.Id}`).digest('hex') : '',
        SandboxKey: c.state.Running ? `/var/run/docker/netns/${c.Id.slice(0, 12)}` : '',
        Ports: c.hostPort ? { '18789/tcp': [{ HostIp: hostIp, HostPort: String(c.hostPort) }] } : {},
        Networks: networks(c),
      },
    };
  }

  function summary(c: EmulatedContainer) {
    const hostIp = c.hostConfig.PortBindings?.['18789/tcp']?.[0]?.HostIp ?? '0.0.0.0';
    return {
      Id: c.Id,
      Names: [`/${c.Name}`],
      Image: c.config.Image,
      ImageID: imageId(c.config.Image),
      Command: [...(c.config.Entrypoint ?? ['docker-entrypoint.sh']), ...(c.config.Cmd ?? [])].join(' '),
      Created: Math.floor(Date.parse(c.created) / 1000),
      Ports: c.hostPort ? [{ IP: hostIp, PrivatePort: 18789, PublicPort: c.hostPort, Type: 'tcp' }] : [],
      Labels: c.config.Labels ?? {},
      State: c.state.Status,
      Status: statusText(c),
      HostConfig: { NetworkMode: c.hostConfig.NetworkMode ?? 'bridge' },
      NetworkSettings: { Networks: networks(c) },
      Mounts: mountsOf(c).map((m) => ({ Type: 'volume', Name: m.Source, Destination: m.Target, Driver: 'local', RW: m.ReadOnly !== true })),
    };
  }

  function stats(c: EmulatedContainer) {
    if (!c.state.Running || c.state.Restarting) {
      return {
        read: ZERO_TIME,
        preread: ZERO_TIME,
        pids_stats: {},
        cpu_stats: { cpu_usage: { total_usage: 0 }, throttling_data: {} },
        memory_stats: {},
      };
    }
    const now = Date.now();
    return {
      name: `/${c.Name}`,
      id: c.Id,
      read: engineTime(now),
      preread: engineTime(now - 1000),
      num_procs: 0,
      pids_stats: { current: 3, limit: c.hostConfig.PidsLimit },
      cpu_stats: {
        cpu_usage: { total_usage: 2_000_000_000, usage_in_kernelmode: 0, usage_in_usermode: 0 },
        system_cpu_usage: 90_000_000_000,
        online_cpus: 2,
      },
      precpu_stats: { cpu_usage: { total_usage: 2_000_000_000 }, system_cpu_usage: 88_000_000_000, online_cpus: 2 },
      memory_stats: { usage: 900_000_000, stats: { inactive_file: 0, anon: 900_000_000 }, limit: c.hostConfig.Memory },
      networks: { eth0: { rx_bytes: 0, tx_bytes: 0 } },
      ...c.stats,
    };
  }

  /** One frame of a multiplexed stream: stream type, three zero bytes, payload size (uint32 big-endian), payload. */
  function frame(stream: 1 | 2, payload: Buffer): Buffer {
    const header = Buffer.alloc(8);
    header[0] = stream;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  }

  const lineOf = (e: { text: string; time: string }, query: Record<string, string>) =>
    Buffer.from(`${truthy(query.timestamps) ? `${e.time} ` : ''}${e.text}\n`);
  const wanted = (e: { stream: 1 | 2; time: string }, query: Record<string, string>) => {
    const since = sinceNs(query.since);
    const streamWanted = (e.stream === 1 && truthy(query.stdout)) || (e.stream === 2 && truthy(query.stderr));
    return streamWanted && (since === null || since === 0n || timeNs(e.time) >= since);
  };

  function logFrames(c: EmulatedContainer, query: Record<string, string>): Buffer {
    let entries = c.logs.filter((e) => wanted(e, query));
    if (query.tail !== undefined && query.tail !== 'all') entries = Number(query.tail) > 0 ? entries.slice(-Number(query.tail)) : [];
    return Buffer.concat(entries.map((e) => frame(e.stream, lineOf(e, query))));
  }

  async function handle(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> {
    const send = (status: number, body?: unknown, type = 'application/json') => {
      const headers: Record<string, string> = {
        'api-version': ENGINE_API_VERSION,
        server: SERVER,
        'docker-experimental': 'false',
        ostype: 'linux',
      };
      if (body === undefined) {
        res.writeHead(status, headers);
        res.end();
        return;
      }
      res.writeHead(status, { ...headers, 'content-type': type });
      res.end(Buffer.isBuffer(body) || typeof body === 'string' ? body : `${JSON.stringify(body)}\n`);
    };
    const error = (status: number, message: string) => send(status, { message });

    const url = new URL(req.url ?? '/', 'http://docker');
    const versioned = /^\/v(\d+\.\d+)(\/.*)$/.exec(url.pathname);
    const apiVersion = versioned?.[1] ?? null;
    const path = decodeURIComponent(versioned?.[2] ?? url.pathname);
    const query = Object.fromEntries(url.searchParams);
    const method = req.method ?? 'GET';
    let body: any;
    let tarEntries: ReturnType<typeof parseTar> | null = null;
    let tarError: string | null = null;
    if (req.headers['content-type'] === 'application/tar') {
      try {
        tarEntries = parseTar(raw);
      } catch (failure) {
        tarError = (failure as Error).message;
      }
      body = tarEntries;
    } else if (raw.length > 0 && String(req.headers['content-type']).startsWith('application/json'))
      body = JSON.parse(raw.toString('utf8'));
    calls.push({ method, path, url: req.url ?? '', apiVersion, query, body });

    if (apiVersion && Number(apiVersion.split('.')[1]) > Number(ENGINE_API_VERSION.split('.')[1])) {
      return error(400, `client version ${apiVersion} is too new. Maximum supported API version is ${ENGINE_API_VERSION}`);
    }
    const imagePath = /^\/images\/(.+)\/json$/.exec(path);
    const containerPath = /^\/containers\/([^/]+)(\/[a-z]+)?$/.exec(path);
    const volumePath = /^\/volumes\/([^/]+)$/.exec(path);

    if ((method === 'GET' || method === 'HEAD') && path === '/_ping') return send(200, 'OK', 'text/plain; charset=utf-8');
    if (method === 'GET' && path === '/info') {
      const all = [...containers.values()];
      return send(200, {
        ID: 'EMUL:ATED:ENGI:NE00',
        Containers: all.length,
        ContainersRunning: all.filter((c) => c.state.Running).length,
        ContainersPaused: 0,
        ContainersStopped: all.filter((c) => !c.state.Running).length,
        Images: images.size,
        Driver: 'overlay2',
        MemoryLimit: true,
        SwapLimit: true,
        CpuCfsPeriod: true,
        CpuCfsQuota: true,
        PidsLimit: true,
        NCPU: options.ncpu ?? 2,
        MemTotal: options.memTotal ?? 24 * 1024 ** 3,
        ServerVersion: '27.3.1',
        OperatingSystem: 'Ubuntu 24.04.1 LTS',
        OSType: 'linux',
        Architecture: 'x86_64',
        KernelVersion: '6.8.0-45-generic',
        CgroupDriver: 'systemd',
        CgroupVersion: '2',
        LoggingDriver: 'json-file',
        DockerRootDir: '/var/lib/docker',
        Name: 'emulated-engine',
        SecurityOptions: ['name=apparmor', 'name=seccomp,profile=builtin', 'name=cgroupns'],
        Warnings: null,
      });
    }

    // Images
    if (method === 'GET' && imagePath) {
      const ref = imagePath[1] as string;
      if (!images.has(ref)) return error(404, `No such image: ${ref}`);
      return send(200, {
        Id: imageId(ref),
        RepoTags: [ref],
        RepoDigests: [],
        Created: '2026-09-06T00:00:00Z',
        Size: 1_024_000_000,
        Os: 'linux',
        Architecture: 'amd64',
      });
    }
    if (method === 'POST' && path === '/images/create') {
      const ref = query.tag ? `${query.fromImage}:${query.tag}` : (query.fromImage ?? '');
      const known = registry[ref];
      const failing = failingPulls[ref];
      if (!known && failing === undefined) return error(404, `manifest for ${ref} not found: manifest unknown: manifest unknown`);
      res.writeHead(200, { 'content-type': 'application/json', 'api-version': ENGINE_API_VERSION, server: SERVER });
      const line = (event: unknown) => res.write(`${JSON.stringify(event)}\r\n`);
      line({ status: `Pulling from ${query.fromImage}`, id: query.tag ?? 'latest' });
      line({ status: 'Pulling fs layer', progressDetail: {}, id: 'a1b2c3d4e5f6' });
      line({
        status: 'Downloading',
        progressDetail: { current: 1_048_576, total: 31_457_280 },
        progress: '[=>      ]  1.049MB/31.46MB',
        id: 'a1b2c3d4e5f6',
      });
      if (failing !== undefined) {
        line({ errorDetail: { message: failing }, error: failing });
        res.end();
        return;
      }
      line({ status: 'Download complete', progressDetail: {}, id: 'a1b2c3d4e5f6' });
      line({ status: 'Pull complete', progressDetail: {}, id: 'a1b2c3d4e5f6' });
      line({ status: `Digest: ${imageId(`${ref}@digest`)}` });
      line({ status: `Status: Downloaded newer image for ${ref}` });
      images.set(ref, known ?? {});
      res.end();
      return;
    }

    // Containers
    if (method === 'POST' && path === '/containers/create') {
      const name = query.name ?? `emulated_${randomBytes(4).toString('hex')}`;
      if (!/^\/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(name))
        return error(400, `Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`);
      const existing = find(name);
      if (existing) {
        return error(
          409,
          `Conflict. The container name "/${name}" is already in use by container "${existing.Id}". You have to remove (or rename) that container to be able to reuse that name.`,
        );
      }
      if (!body?.Image || !images.has(body.Image)) return error(404, `No such image: ${body?.Image}`);
      const { HostConfig: hostConfig = {}, ...config } = body as Record<string, any>;
      const c: EmulatedContainer = {
        Id: randomBytes(32).toString('hex'),
        Name: name.replace(/^\//, ''),
        created: engineTime(),
        config,
        hostConfig,
        state: {
          Status: 'created',
          Running: false,
          Paused: false,
          Restarting: false,
          OOMKilled: false,
          Dead: false,
          Pid: 0,
          ExitCode: 0,
          Error: '',
          StartedAt: ZERO_TIME,
          FinishedAt: ZERO_TIME,
        },
        restartCount: 0,
        hostPort: null,
        logs: [],
        archives: [],
        stats: null,
        startedMs: 0,
        readyDelayMs: 0,
        server: null,
        process: null,
        waiters: [],
        gateway: null,
        devicesFile: null,
        follows: new Set(),
      };
      for (const mount of mountsOf(c)) ensureVolume(mount.Source); // named volumes are created on first use
      containers.set(c.Id, c);
      return send(201, { Id: c.Id, Warnings: [] });
    }
    if (method === 'GET' && path === '/containers/json') {
      const filters = query.filters ? (JSON.parse(query.filters) as Record<string, unknown>) : {};
      const labels = labelFilters(filters, 'label');
      const statuses = labelFilters(filters, 'status');
      const list = [...containers.values()].filter(
        (c) =>
          (truthy(query.all) || c.state.Running) &&
          matchesLabels(c.config.Labels ?? {}, labels) &&
          (statuses.length === 0 || statuses.includes(c.state.Status)),
      );
      return send(200, list.map(summary));
    }
    if (containerPath) {
      const c = find(containerPath[1] as string);
      const action = containerPath[2] ?? '';
      if (!c) return error(404, `No such container: ${containerPath[1]}`);
      if (method === 'GET' && action === '/json') return send(200, inspect(c));
      if (method === 'POST' && action === '/start') {
        if (c.state.Running) return send(304);
        if (isHelper(c)) runHelper(c);
        else await runGateway(c);
        return send(204);
      }
      if (method === 'POST' && action === '/stop') {
        if (!c.state.Running) return send(304);
        stopContainer(c);
        return send(204);
      }
      if (method === 'POST' && action === '/wait') {
        if (c.state.Running && !c.state.Restarting) await new Promise<void>((wake) => c.waiters.push(wake));
        return send(200, { StatusCode: c.state.ExitCode, Error: null });
      }
      if (method === 'POST' && action === '/update') {
        for (const key of ['Memory', 'MemorySwap', 'NanoCpus', 'PidsLimit', 'CpuShares'])
          if (body?.[key] !== undefined) c.hostConfig[key] = body[key];
        return send(200, { Warnings: [] });
      }
      if (method === 'DELETE' && action === '') {
        if (c.state.Running && !truthy(query.force)) {
          return error(
            409,
            `cannot remove container "/${c.Name}": container is running: stop the container before removing or force remove`,
          );
        }
        if (c.state.Running) stopContainer(c);
        endFollows(c);
        containers.delete(c.Id);
        rmSync(join(options.dir, 'containers', c.Id), { recursive: true, force: true });
        return send(204);
      }
      if (method === 'GET' && action === '/logs') {
        if (!truthy(query.stdout) && !truthy(query.stderr)) return error(400, 'Bad parameters: you must choose at least one stream');
        if (query.since !== undefined && sinceNs(query.since) === null) {
          return error(400, `invalid value for "since": failed to parse value as time or duration: "${query.since}"`);
        }
        if (!truthy(query.follow)) return send(200, logFrames(c, query), 'application/vnd.docker.multiplexed-stream');
        res.writeHead(200, {
          'api-version': ENGINE_API_VERSION,
          server: SERVER,
          'content-type': 'application/vnd.docker.multiplexed-stream',
        });
        res.write(logFrames(c, query));
        if (!c.state.Running || c.state.Restarting) {
          res.end();
          return;
        }
        const follow = {
          send: (entry: { stream: 1 | 2; text: string; time: string }) => {
            if (wanted(entry, query)) res.write(frame(entry.stream, lineOf(entry, query)));
          },
          end: () => {
            c.follows.delete(follow);
            res.end();
          },
        };
        c.follows.add(follow);
        res.on('close', () => c.follows.delete(follow));
        return;
      }
      if (method === 'GET' && action === '/stats') return send(200, stats(c));
      if (method === 'POST' && action === '/exec') {
        if (c.state.Restarting) return error(409, `Container ${c.Id} is restarting, wait until the container is running`);
        if (!c.state.Running) return error(409, `container ${c.Id} is not running`);
        if (!Array.isArray(body?.Cmd) || body.Cmd.length === 0) return error(400, 'No exec command specified');
        const exec: EmulatedExec = {
          ID: randomBytes(32).toString('hex'),
          ContainerID: c.Id,
          Cmd: body.Cmd.map(String),
          Env: Array.isArray(body.Env) ? body.Env.map(String) : [],
          User: typeof body.User === 'string' ? body.User : (c.config.User ?? ''),
          Running: false,
          ExitCode: null,
          Pid: 0,
          output: [],
          attachStdin: body.AttachStdin === true,
        };
        execs.set(exec.ID, exec);
        return send(201, { Id: exec.ID });
      }
      if (method === 'GET' && action === '/archive') {
        // A regular file only (what the host reads); the engine's stat of it rides in a header, as Docker sends it.
        const source = query.path ?? '';
        if (!source) return error(400, 'bad parameter: path cannot be empty');
        const local = resolve(c, source);
        if (!existsSync(local) || !statSync(local).isFile()) return error(404, `Could not find the file ${source} in container ${c.Name}`);
        const info = statSync(local);
        const content = readFileSync(local);
        const name = posix.basename(source);
        const pathStat = { name, size: content.length, mode: info.mode & 0o777, mtime: info.mtime.toISOString(), linkTarget: '' };
        res.writeHead(200, {
          'api-version': ENGINE_API_VERSION,
          server: SERVER,
          'content-type': 'application/x-tar',
          'x-docker-container-path-stat': Buffer.from(JSON.stringify(pathStat)).toString('base64'),
        });
        res.end(tarArchive([{ name, type: 'file', mode: info.mode & 0o777, uid: info.uid, gid: info.gid, content }]));
        return;
      }
      if (method === 'POST' && action === '/rename') {
        const name = query.name ?? '';
        if (!name) return error(400, 'Neither old nor new names may be empty');
        const taken = find(name);
        if (taken && taken !== c) {
          return error(
            409,
            `Conflict. The container name "/${name}" is already in use by container "${taken.Id}". You have to remove (or rename) that container to be able to reuse that name.`,
          );
        }
        c.Name = name;
        return send(204);
      }
      if (method === 'PUT' && action === '/archive') {
        const dest = query.path ?? '';
        if (!dest) return error(400, 'bad parameter: path cannot be empty');
        if (!dirExists(c, dest)) return error(404, `Could not find the file ${dest} in container ${c.Name}`);
        if (tarError || !tarEntries) return error(400, `Error processing tar file: ${tarError ?? 'no archive'}`);
        const written: ArchiveEntry[] = [];
        for (const entry of tarEntries) {
          const target = posix.join(dest, entry.name);
          const local = resolve(c, target);
          if (entry.type === 'directory') mkdirSync(local, { recursive: true });
          else {
            mkdirSync(join(local, '..'), { recursive: true });
            rmSync(local, { force: true });
            writeFileSync(local, entry.content);
          }
          chmodSync(local, entry.mode);
          written.push({ ...entry, path: target.replace(/\/$/, '') });
        }
        c.archives.push(written);
        return send(200, undefined);
      }
    }

    // Exec instances (a start with `Upgrade: tcp` is answered by `handleUpgrade`)
    const execPath = /^\/exec\/([^/]+)\/(start|json)$/.exec(path);
    if (execPath) {
      const exec = execs.get(execPath[1] as string);
      if (!exec) return error(404, `No such exec instance: ${execPath[1]}`);
      if (method === 'GET' && execPath[2] === 'json') return send(200, execInspect(exec));
      if (method === 'POST' && execPath[2] === 'start') {
        if (exec.ExitCode !== null || exec.Running) return error(409, `Exec command ${exec.ID} is already running`);
        const c = containers.get(exec.ContainerID);
        if (!c?.state.Running) return error(409, `container ${exec.ContainerID} is not running`);
        // Without an upgrade the engine still streams the output and closes when the process ends.
        await runExec(c, exec);
        return send(200, execFrames(exec), 'application/vnd.docker.multiplexed-stream');
      }
    }

    // Volumes
    if (method === 'POST' && path === '/volumes/create') {
      const name = (body?.Name as string | undefined) ?? randomBytes(32).toString('hex');
      return send(201, volumeInfo(ensureVolume(name, body?.Labels ?? {})));
    }
    if (method === 'GET' && path === '/volumes') {
      const filters = query.filters ? (JSON.parse(query.filters) as Record<string, unknown>) : {};
      const labels = labelFilters(filters, 'label');
      const list = [...volumes.values()].filter((v) => matchesLabels(v.Labels, labels)).map(volumeInfo);
      return send(200, { Volumes: list, Warnings: [] });
    }
    if (volumePath) {
      const name = volumePath[1] as string;
      const volume = volumes.get(name);
      if (!volume) return error(404, `get ${name}: no such volume`);
      if (method === 'GET') return send(200, volumeInfo(volume));
      if (method === 'DELETE') {
        const users = [...containers.values()].filter((c) => mountsOf(c).some((mount) => mount.Source === name));
        if (users.length > 0) return error(409, `remove ${name}: volume is in use - [${users.map((c) => c.Id).join(', ')}]`);
        volumes.delete(name);
        rmSync(join(options.dir, 'volumes', name), { recursive: true, force: true });
        return send(204);
      }
    }
    return error(404, 'page not found');
  }

  rmSync(options.socketPath, { force: true });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch((failure: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: (failure as Error).message }));
      });
    });
  });
  server.on('upgrade', handleUpgrade);
  await new Promise<void>((done) => server.listen(options.socketPath, done));

  const mustFind = (nameOrId: string) => {
    const c = find(nameOrId);
    if (!c) throw new Error(`No such container: ${nameOrId}`);
    return c;
  };
  return {
    socketPath: options.socketPath,
    calls,
    callsTo: (method, path) => calls.filter((call) => call.method === method && path.test(call.path)),
    container: find,
    containers: () => [...containers.values()],
    volumeNames: () => [...volumes.keys()].sort(),
    volumeLabels: (name) => volumes.get(name)?.Labels,
    volumeDir,
    writeLog: (nameOrId, stream, text) => log(mustFind(nameOrId), stream === 'stdout' ? 1 : 2, text),
    setStats: (nameOrId, value) => {
      mustFind(nameOrId).stats = value;
    },
    crash: (nameOrId, crash = {}) => {
      const c = mustFind(nameOrId);
      log(c, 2, crash.oomKilled ? 'Killed' : 'fatal: crashed');
      finish(c, crash.exitCode ?? (crash.oomKilled ? 137 : 1), { restart: true, oomKilled: crash.oomKilled === true });
    },
    gateway: (nameOrId) => find(nameOrId)?.gateway ?? null,
    execs: () => [...execs.values()],
    close: async () => {
      for (const c of containers.values()) {
        c.process?.kill('SIGKILL');
        c.server?.closeAllConnections();
        c.server?.close();
        stopGateway(c);
        for (const wake of c.waiters.splice(0)) wake();
      }
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      rmSync(options.socketPath, { force: true });
    },
  };
}
