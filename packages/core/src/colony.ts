/**
 * The colony gateway behind x402 (spec §4.5, `X402_GATEWAY_URL`): one bounded HTTP call and the reading of its
 * fitness answer. The web's `/api/x402` proxies every action through it; the backend's mission control asks it for the
 * fleet's fitness scores. One client keeps both services' timeouts, body cap and redirect rule the same.
 *
 * Upstream paths (below the gateway URL; the slugs of the spec's fallback endpoint list): `GET /health`,
 * `POST /gateway/colony/join`, `GET /gateway/fitness/:agentId`, `GET /gateway/pricing/:agentId`,
 * `GET /gateway/endpoints`, `POST /gateway/pay`.
 */

/** The reason of a call made while no gateway is configured. */
export const COLONY_NOT_CONFIGURED = 'x402 gateway not configured';

/** An upstream answer larger than this is not read (and counts as not JSON). */
const UPSTREAM_BODY_MAX = 1_048_576;

export interface ColonyCall {
  method: 'GET' | 'POST';
  /** Path below the gateway URL, already encoded. */
  path: string;
  json?: unknown;
  timeoutMs: number;
}

/** What the upstream did: answered (with its JSON body, or `json: false`), or could not be reached in time. */
export type ColonyResult =
  | { reached: true; status: number; ok: boolean; json: true; body: unknown }
  | { reached: true; status: number; ok: boolean; json: false }
  | { reached: false; reason: string };

/**
 * One call to the colony gateway at `gatewayUrl` (no trailing slash). Never throws: an unset gateway, a network error
 * or the timeout (which also covers reading the body) is `reached: false` with a short reason that carries no upstream
 * content. Redirects are not followed, so a request never travels to a host the operator did not configure.
 */
export async function requestColony(gatewayUrl: string | undefined, call: ColonyCall): Promise<ColonyResult> {
  if (!gatewayUrl) return { reached: false, reason: COLONY_NOT_CONFIGURED };
  const signal = AbortSignal.timeout(call.timeoutMs);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (call.json !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await fetch(`${gatewayUrl}${call.path}`, {
      method: call.method,
      headers,
      ...(call.json !== undefined ? { body: JSON.stringify(call.json) } : {}),
      signal,
      redirect: 'manual',
    });
    const text = await readCapped(res);
    let body: unknown;
    try {
      if (text === undefined || text.trim() === '') throw new Error('no body');
      body = JSON.parse(text) as unknown;
    } catch {
      return { reached: true, status: res.status, ok: res.ok, json: false };
    }
    return { reached: true, status: res.status, ok: res.ok, json: true, body };
  } catch (err) {
    if (signal.aborted) return { reached: false, reason: `timed out after ${call.timeoutMs} ms` };
    return { reached: false, reason: describeFetchError(err) };
  }
}

/** The body as text, or undefined when it is larger than UPSTREAM_BODY_MAX (the rest is not read). */
async function readCapped(res: Response): Promise<string | undefined> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > UPSTREAM_BODY_MAX) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A short reason for a network failure, without the URL or anything the upstream said. */
function describeFetchError(err: unknown): string {
  const code = (err as { cause?: { code?: unknown } })?.cause?.code;
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? `unreachable (${code})` : 'unreachable';
}

export interface Fitness {
  score: number;
  tier: string;
  details: Record<string, unknown> | null;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A fitness score: a finite number from 0 to 100. */
export const isColonyScore = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100;

/** A tier name: any non-blank text (`bronze`, `silver`, `gold`, …). */
export const isColonyTier = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/** The upstream's fitness answer in the spec's shape `{ score, tier, details }`, or undefined when it is not one. */
export function fitnessFrom(body: unknown): Fitness | undefined {
  if (!isObject(body) || !isColonyScore(body.score) || !isColonyTier(body.tier)) return undefined;
  return { score: body.score, tier: body.tier, details: isObject(body.details) ? body.details : null };
}

/**
 * `GET /gateway/fitness/:agentId`: the agent's fitness, undefined when the upstream gave no usable answer, with the
 * call's result (for a log line saying why).
 */
export async function colonyFitness(
  gatewayUrl: string | undefined,
  agentId: string,
  timeoutMs: number,
): Promise<{ fitness: Fitness | undefined; result: ColonyResult }> {
  const result = await requestColony(gatewayUrl, { method: 'GET', path: `/gateway/fitness/${encodeURIComponent(agentId)}`, timeoutMs });
  return { fitness: result.reached && result.ok && result.json ? fitnessFrom(result.body) : undefined, result };
}
