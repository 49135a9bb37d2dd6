/**
 * Starts the real web, backend and summarizer (their `server.ts`, run from source with tsx) for the fuzzer, wired to
 * each other on 127.0.0.1 and to nothing else: every upstream with a public default points at a closed local port,
 * the rest stay unset, and `loopback-only.ts` refuses any other connection. The environment is built from scratch,
 * so provider keys in the caller's shell never reach the services.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SERVICE_DATABASES, createDatabase, pgliteDirFor } from '@aop/db';
// The database module alone: the package's index also loads every fake third party, seconds of start-up for nothing.
import { createTestDatabase, pgliteTemplate } from '@aop/testing/database';

const root = fileURLToPath(new URL('../..', import.meta.url));
const guard = fileURLToPath(new URL('./loopback-only.ts', import.meta.url));

export type ServiceName = 'web' | 'backend' | 'summarizer';

/** A line a service logged at error level (LOG_LEVEL=error), keyed by request id when it has one. */
export interface ServiceLog {
  service: ServiceName;
  reqId: string | undefined;
  msg: string;
  err: string | undefined;
}

export interface Services {
  urls: Record<ServiceName, string>;
  internalApiKey: string;
  hmacSecret: string;
  /** Error-level log lines, in order. */
  logs: ServiceLog[];
  /** Outbound connections the loopback guard refused: `service → host`. */
  blocked: string[];
  /** Services that exited while they should have been running, with their exit code or signal. */
  exited: string[];
  stop(): Promise<void>;
}

/** A port that was free a moment ago: used both to listen on and, left unbound, as an upstream that refuses. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitForHealth(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${url} exited before it answered`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      if (res.status < 500) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${url} did not come up within ${timeoutMs / 1000} s`);
}

/**
 * Both PGlite directories start as a copy of the tests' cached, migrated template: creating and migrating a database
 * from nothing costs each service many seconds of start-up. The services still run their migrations (a no-op here).
 */
async function seedPglite(dataDir: string): Promise<void> {
  const [first, ...rest] = SERVICE_DATABASES;
  const seed = createDatabase({ pgliteDir: pgliteDirFor(dataDir, first), pgliteTemplate: await pgliteTemplate() });
  await seed.close();
  for (const service of rest) cpSync(pgliteDirFor(dataDir, first), pgliteDirFor(dataDir, service), { recursive: true });
}

function hostsOf(...urls: (string | undefined)[]): string[] {
  return urls.filter((u): u is string => Boolean(u)).map((u) => new URL(u).hostname);
}

export async function startServices(options: { databaseUrl: string | undefined; redisUrl: string | undefined }): Promise<Services> {
  const dataDir = mkdtempSync(join(tmpdir(), 'aop-fuzz-'));
  const children = new Map<ServiceName, ChildProcess>();
  // However the fuzzer ends (its watchdog, Ctrl-C), no service outlives it.
  process.on('exit', () => {
    for (const child of children.values()) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  // On a Postgres server the run gets a fresh database of its own (dropped at the end), shared by web and backend as
  // in production; PGlite lives in the temporary data directory.
  const database = options.databaseUrl ? await createTestDatabase(options.databaseUrl) : undefined;
  const [webPort, backendPort, summarizerPort, closedPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const closed = `http://127.0.0.1:${closedPort}`;
  const internalApiKey = randomBytes(24).toString('hex');
  const hmacSecret = randomBytes(24).toString('hex');
  const common: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'development',
    LOG_LEVEL: 'error',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    // Each fuzz request comes from its own documentation address (X-Forwarded-For), so per-client limits do not turn
    // the whole run into 429s after the first few cases.
    TRUST_PROXY: '127.0.0.1',
    INTERNAL_API_KEY: internalApiKey,
    HMAC_SECRET: hmacSecret,
    ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    FUZZ_ALLOWED_HOSTS: hostsOf(database?.databaseUrl, options.redisUrl).join(','),
    ...(database?.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
  };
  const envs: Record<ServiceName, NodeJS.ProcessEnv> = {
    backend: {
      ...common,
      BACKEND_PORT: String(backendPort),
      // Local agents, but none may start: a body that happens to be a valid deployment is refused for capacity.
      PROVISIONER: 'local',
      AGENT_MAX: '0',
      AGENT_WARM_POOL: '0',
      OPENROUTER_BASE_URL: closed,
      GEMINI_BASE_URL: closed,
      GROQ_BASE_URL: closed,
      ANTHROPIC_BASE_URL: closed,
      OPENAI_BASE_URL: closed,
    },
    summarizer: { ...common, SUMMARIZER_PORT: String(summarizerPort) },
    web: {
      ...common,
      PORT: String(webPort),
      SESSION_SECRET: randomBytes(32).toString('hex'),
      BACKEND_API_URL: `http://127.0.0.1:${backendPort}`,
      SUMMARIZER_URL: `http://127.0.0.1:${summarizerPort}`,
      CODEHOST_AUTHORIZE_URL: closed,
      CODEHOST_TOKEN_URL: closed,
      CODEHOST_USER_URL: closed,
      CODEHOST_EMAILS_URL: closed,
      TRADING_API_URL: closed,
      STREAMING_API_URL: closed,
    },
  };
  const urls: Record<ServiceName, string> = {
    web: `http://127.0.0.1:${webPort}`,
    backend: `http://127.0.0.1:${backendPort}`,
    summarizer: `http://127.0.0.1:${summarizerPort}`,
  };

  const logs: ServiceLog[] = [];
  const blocked: string[] = [];
  const exited: string[] = [];
  let stopping = false;
  function spawnService(name: ServiceName): void {
    const child = spawn(
      process.execPath,
      ['--conditions=development', '--import', 'tsx', '--import', guard, join(root, 'apps', name, 'src', 'server.ts')],
      { cwd: root, env: envs[name], stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.set(name, child);
    child.on('exit', (code, signal) => {
      if (!stopping) exited.push(`${name} (${signal ?? `exit ${code}`})`);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line);
        logs.push({ service: name, reqId: entry.reqId, msg: String(entry.msg ?? ''), err: entry.err?.stack ?? entry.err?.message });
      } catch {
        logs.push({ service: name, reqId: undefined, msg: line, err: undefined });
      }
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      const refused = /^fuzz-guard: refused outbound connection to (.+)$/.exec(line);
      if (refused) blocked.push(`${name} → ${refused[1]}`);
      else logs.push({ service: name, reqId: undefined, msg: line, err: undefined });
    });
  }
  async function stop(): Promise<void> {
    stopping = true;
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const kill = setTimeout(() => child.kill('SIGKILL'), 12_000);
            child.once('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    await database?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }

  try {
    // The summarizer has no database: it starts while the PGlite directories are prepared.
    spawnService('summarizer');
    if (!database) await seedPglite(dataDir);
    spawnService('backend');
    spawnService('web');
    await Promise.all([
      waitForHealth(`${urls.backend}/health`, children.get('backend')!, 120_000),
      waitForHealth(`${urls.summarizer}/health`, children.get('summarizer')!, 120_000),
      waitForHealth(`${urls.web}/api/health`, children.get('web')!, 120_000),
    ]);
  } catch (err) {
    for (const entry of logs.slice(-20)) process.stderr.write(`[${entry.service}] ${entry.msg}\n`);
    await stop();
    throw err;
  }
  return { urls, internalApiKey, hmacSecret, logs, blocked, exited, stop };
}
