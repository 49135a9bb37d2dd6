import { WARM_UP_PROVIDER_ID, WARM_UP_SESSION_KEY } from '@aop/core/agent-state';
import type { GatewayConnection } from '@aop/gateway-client';
import { OWN_GATEWAY_AGENT_ID } from '../host.js';

/**
 * "Ready means answers a chat" (issue #19). OpenClaw answers `/readyz` long before it can answer a message quickly: its
 * first agent turn loads the agent runner, plans SQLite maintenance, catalogues the tools, verifies the state database
 * and opens the memory index, about 7–9 s of CPU on an idle 2-core machine (measured: first turn 8.3–8.9 s, the next
 * 0.4–1.5 s, whether the gateway had idled 30 s first or not — the work is lazy, not background).
 *
 * So a start is finished only after one warm-up turn, which does all of that without calling any model and without
 * touching the customer's provider key:
 * - The agent's configuration carries one extra provider (`warmUpProvider`) whose address is the gateway's own
 *   `/v1/chat/completions`, authenticated with the gateway's own token, asking for an agent that never exists. The
 *   gateway refuses that at once with 400, which OpenClaw classes as a request-format failure: no retry, no fallback to
 *   other models (an `x-openclaw-model` choice is strict), no auth cool-down (a 401 would put the provider in a
 *   cool-down that survives restarts, so the next start's warm-up would fail before doing the work).
 * - The warm-up turn asks for that model on a session of its own, which is deleted afterwards.
 * Measured with the pinned OpenClaw: warm-up 8.5–10.5 s, then the customer's first turn 0.6–3.2 s instead of 8–9 s.
 */

/** The agent target the warm-up provider asks its own gateway for: an agent id no gateway ever has. */
const NO_SUCH_AGENT = 'openclaw/aop-warm-up-no-such-agent';

/** The model the warm-up turn asks for (`x-openclaw-model`): `<provider>/<model id>`. */
export const WARM_UP_MODEL = `${WARM_UP_PROVIDER_ID}/${NO_SUCH_AGENT}`;

/**
 * The `models.providers` entry the warm-up turn uses (see above). `port` is the gateway's port where it runs (its own
 * loopback: the container's in a container); the key is a SecretRef to the gateway token, never the token.
 */
export function warmUpProvider(port: number, tokenRef: Record<string, unknown>): Record<string, unknown> {
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey: tokenRef,
    api: 'openai-completions',
    models: [
      {
        id: NO_SUCH_AGENT,
        name: 'Platform warm-up (never answers)',
        reasoning: false,
        input: ['text'],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 128_000,
        maxTokens: 16,
      },
    ],
  };
}

export interface WarmUpOptions {
  /** `http(s)://host:port` of the gateway, as the host reaches it. */
  baseUrl: string;
  token: string;
  /** Extra headers of the host's HTTP calls to this gateway (none for a local one). */
  headers?: Record<string, string>;
  /** Opens a control connection with full scopes (loopback token, or the paired platform device), for the clean-up. */
  connect: () => Promise<GatewayConnection>;
  /** Bound of the whole warm-up; a gateway that has not finished by then is reported ready anyway (it answers /readyz). */
  timeoutMs: number;
}

export interface WarmUpResult {
  /** `prepared`: the turn ran through to the (refused) model call; `incomplete`: it ended otherwise (see `detail`). */
  outcome: 'prepared' | 'incomplete';
  ms: number;
  detail: string;
}

/** The host log line of a warm-up's outcome (the same on every provider, so operators read one wording). */
export const warmUpLogLine = (result: WarmUpResult) =>
  `[host] first turn ${result.outcome === 'prepared' ? 'prepared' : 'not prepared'} in ${(result.ms / 1000).toFixed(1)} s: ${result.detail}`;

/**
 * Runs the warm-up turn and deletes its session. Never throws: a warm-up that cannot run leaves a gateway that answers
 * its first message slowly, not one that does not answer, so the caller reports it and carries on.
 */
export async function warmUpGateway(options: WarmUpOptions): Promise<WarmUpResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let outcome: WarmUpResult['outcome'] = 'incomplete';
  let detail: string;
  try {
    const res = await fetch(new URL('/v1/chat/completions', options.baseUrl), {
      method: 'POST',
      headers: {
        ...options.headers,
        authorization: `Bearer ${options.token}`,
        'content-type': 'application/json',
        'x-openclaw-model': WARM_UP_MODEL,
        // Agent-scoped: with several agents in a gateway OpenClaw refuses a session key that names no agent, whatever the
        // model names (AgentSelectionRequiredError, an HTTP 500; seen with the pinned OpenClaw).
        'x-openclaw-session-key': `agent:${OWN_GATEWAY_AGENT_ID}:${WARM_UP_SESSION_KEY}`,
      },
      body: JSON.stringify({
        // The gateway's first agent by name: once a customer's other agents share the gateway (issue #20), OpenClaw
        // refuses a turn that names none ("no explicit owner"), which would pass for the planned refusal.
        model: `openclaw/${OWN_GATEWAY_AGENT_ID}`,
        messages: [{ role: 'user', content: 'Platform warm-up before the first message (no model is called).' }],
      }),
      signal: AbortSignal.timeout(Math.max(1, Math.round(options.timeoutMs))),
    });
    const text = await res.text();
    // The refused model call comes back as OpenClaw's 400 (request format); anything else means the turn stopped short.
    if (res.status === 400) {
      outcome = 'prepared';
      detail = `refused model call as planned (HTTP ${res.status})`;
    } else detail = `HTTP ${res.status}: ${text.slice(0, 200)}`;
  } catch (err) {
    detail = (err as Error).name === 'TimeoutError' ? `did not finish within ${options.timeoutMs} ms` : (err as Error).message;
  }
  // A turn refused before it began (e.g. a gateway without the endpoint) left no session behind.
  if (outcome === 'prepared' || detail.startsWith('did not finish')) {
    await deleteWarmUpSession(options.connect).catch((err: Error) => {
      detail += `; its session was not deleted (${err.message})`;
    });
  }
  return { outcome, ms: elapsed(), detail };
}

/** Deletes the warm-up session wherever the gateway's first agent keeps it (`agent:main:aop-warm-up`). */
async function deleteWarmUpSession(connect: () => Promise<GatewayConnection>): Promise<void> {
  const conn = await connect();
  try {
    const list = await conn.request<{ sessions?: { key?: unknown }[] }>('sessions.list', {}, { timeoutMs: 15_000 });
    for (const s of list.sessions ?? []) {
      if (typeof s.key === 'string' && s.key.endsWith(`:${WARM_UP_SESSION_KEY}`)) {
        await conn.request('sessions.delete', { key: s.key }, { timeoutMs: 15_000 });
      }
    }
  } finally {
    await conn.close();
  }
}
