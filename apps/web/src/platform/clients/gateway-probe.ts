import { PLATFORM_USER_AGENT } from '@aop/gateway-client';

/**
 * One plain HTTP look at an agent gateway's own health endpoints (`/healthz`: live, `/readyz`: ready). Callers read
 * the answer their own way (the event stream wants two booleans, instance stats relays the gateway's JSON, the status
 * page wants words), but the request, its deadline and what counts as "not reached" are the same.
 */
export type GatewayProbe =
  | {
      reached: true;
      /** HTTP status of the answer; `ok` when 2xx. */
      status: number;
      ok: boolean;
      /** The parsed JSON body; undefined when it was not JSON (`bodyError` says why). */
      body: unknown;
      bodyError?: string;
    }
  | { reached: false; timedOut: boolean; error: string };

export async function probeGateway(baseUrl: string, path: '/healthz' | '/readyz', timeoutMs = 5_000): Promise<GatewayProbe> {
  let res: Response;
  try {
    res = await fetch(new URL(path, baseUrl), {
      headers: { 'user-agent': PLATFORM_USER_AGENT },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    return {
      reached: false,
      timedOut: err instanceof Error && err.name === 'TimeoutError',
      error: err instanceof Error ? err.message : String(err),
    };
  }
  try {
    return { reached: true, status: res.status, ok: res.ok, body: await res.json() };
  } catch (err) {
    return { reached: true, status: res.status, ok: res.ok, body: undefined, bodyError: err instanceof Error ? err.message : String(err) };
  }
}
