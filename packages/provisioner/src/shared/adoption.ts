import type { GatewayConnection } from '@aop/gateway-client';
import { HostFullError } from '../host.js';

/**
 * Adopting a warm gateway (issue #20), the part every provider does the same way once the agent's secrets are in the
 * gateway's secret file: the agent's configuration through `config.apply`, then the proof that the gateway takes the
 * agent's token. Measured with the pinned OpenClaw: docs/operations.md "Warm gateways (the pool)".
 */

/** Why a pool stays empty on a provider that reaches its gateways only through the platform device, without one. */
export const POOL_NEEDS_DEVICE = 'a warm pool needs the platform device (adoption applies the configuration over its connection)';

/** A warm gateway's control connection under the pool's token, opened once it was ready, with its config's hash. */
export interface PoolConnection {
  conn: GatewayConnection;
  hash: string | undefined;
}

const configHash = async (conn: GatewayConnection) => (await conn.request<{ hash?: string }>('config.get', {}, { timeoutMs: 10_000 })).hash;

/** Opens the connection kept for an adoption and reads the config's hash on it (so `config.apply` can start at once). */
export async function openPoolConnection(connect: () => Promise<GatewayConnection>): Promise<PoolConnection> {
  const conn = await connect();
  try {
    return { conn, hash: await configHash(conn) };
  } catch (error) {
    await conn.close().catch(() => undefined);
    throw error;
  }
}

export interface AdoptionOptions {
  /** The connection kept for the adoption (null: none, or it failed to open); a closed one is replaced by `connect`. */
  kept: PoolConnection | null;
  /** A new connection under the pool's token, with the scopes `config.apply` needs. */
  connect: () => Promise<GatewayConnection>;
  /** The agent's configuration, whose SecretRefs point into the secret file already rewritten. */
  config: Record<string, unknown>;
  note: string;
  /** `GET <baseUrl>/v1/models` with `headers` must answer 200 afterwards: the agent's token is the gateway's. */
  baseUrl: string;
  headers: Record<string, string>;
  /** Told when the kept connection had closed (a new one is made). */
  onReconnect?: () => void;
}

/**
 * Applies the agent's configuration over the pool's connection: OpenClaw resolves the secret file again (the agent's
 * token replaces the pool's; connections made with the pool's are closed) and applies the configuration before it
 * answers, without the file watcher's wait. Answers what it took, step by step, for the host's log.
 */
export async function applyAdoption(options: AdoptionOptions): Promise<string> {
  const started = performance.now();
  const mark = () => `${((performance.now() - started) / 1000).toFixed(2)} s`;
  const pooled = options.kept && !options.kept.conn.closed ? options.kept : null;
  if (options.kept && !pooled) options.onReconnect?.();
  const conn = pooled?.conn ?? (await options.connect());
  const connected = pooled ? 'connected before' : `connected ${mark()}`;
  let applied: string;
  try {
    const raw = `${JSON.stringify(options.config, null, 2)}\n`;
    const apply = (baseHash: string | undefined) =>
      conn.request('config.apply', { raw, baseHash, note: `platform: ${options.note}` }, { timeoutMs: 30_000 });
    // A hash read when the gateway became ready that is stale now (its config changed since) is refused: read it again.
    await apply(pooled?.hash ?? (await configHash(conn))).catch(async (error: unknown) => {
      if (!pooled) throw error;
      await apply(await configHash(conn));
    });
    applied = `applied ${mark()}`;
  } finally {
    await conn.close().catch(() => undefined);
  }
  // The proof that the agent's token is the gateway's now (the pool's is refused from here on).
  const res = await fetch(`${options.baseUrl}/v1/models`, { headers: options.headers, signal: AbortSignal.timeout(10_000) });
  await res.body?.cancel();
  if (res.status !== 200) throw new Error(`the gateway refused the agent's token after config.apply (HTTP ${res.status})`);
  return `${connected}, ${applied}, token checked ${mark()}`;
}

export interface PoolFill {
  /** One more warm gateway is wanted (the pool is short of its target and the host open). */
  short: () => boolean;
  /** An agent is being created or started, or became live moments ago: a warm gateway's start waits. */
  busy: () => boolean;
  /** Starts one warm gateway and waits until it is ready to be adopted. */
  add: () => Promise<void>;
}

/**
 * Fills a host's warm pool one gateway at a time, each only while no agent is starting (a warm gateway's start, 20 s
 * of CPU, must not slow a customer's), and only while one more fits (never making room for one: a full host ends the
 * fill). Stops after three failures in a row; the next `start()` (an adoption, `restore()`) tries again.
 */
export class PoolFiller {
  /** Why the pool is short (null once a warm gateway was added), for the host's `warmPoolStatus()`. */
  lastError: string | null = null;
  private running: Promise<void> | null = null;

  constructor(private readonly fill: PoolFill) {}

  /** Starts filling, unless a fill is under way or nothing is short. */
  start(): void {
    if (this.running || !this.fill.short()) return;
    this.running = this.run().finally(() => {
      this.running = null;
    });
  }

  /** Waits for the fill under way, if any. */
  async settled(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.fill.short() && failures < 3) {
      while (this.fill.short() && this.fill.busy()) await new Promise((resolve) => setTimeout(resolve, 1_000));
      if (!this.fill.short()) return;
      try {
        await this.fill.add();
        this.lastError = null;
        failures = 0;
      } catch (error) {
        this.lastError = (error as Error).message;
        if (error instanceof HostFullError) return;
        failures += 1;
      }
    }
  }
}
