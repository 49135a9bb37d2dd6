import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sendJson } from '../fake-http.js';

/** One request the fake received, as it arrived. */
export interface TradingApiRequest {
  method: string;
  /** Path without the query string, e.g. `/agent/job/job_1`. */
  path: string;
  query: Record<string, string>;
  /** The `X-API-Key` header, or undefined. */
  apiKey: string | undefined;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body, the raw text when it is not JSON, or undefined when empty. */
  body: unknown;
}

export interface TradingApiBehaviour {
  /** Wait this long before answering (to exercise client timeouts). */
  delayMs?: number;
  /** Answer every request with an HTML 502 page instead of JSON. */
  nonJson?: boolean;
}

export interface TradingJob {
  jobId: string;
  threadId: string;
  prompt: string;
  apiKey: string;
  status: 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';
  createdAt: string;
  polls: number;
}

export interface FakeTradingApi {
  /** `http://127.0.0.1:<port>`, the value of TRADING_API_URL. */
  url: string;
  readonly requests: TradingApiRequest[];
  readonly jobs: Map<string, TradingJob>;
  /** What the next requests meet; change it between tests. */
  behaviour: TradingApiBehaviour;
  close(): Promise<void>;
}

const KNOWN_CHAINS = new Set(['base', 'polygon', 'mainnet', 'solana', 'unichain', 'arbitrum', 'optimism']);

/** A deterministic wallet address for a key, so balances differ per key. */
function addressFor(apiKey: string): string {
  let hash = 0n;
  for (const ch of apiKey) hash = (hash * 131n + BigInt(ch.codePointAt(0) ?? 0)) % 2n ** 160n;
  return `0x${hash.toString(16).padStart(40, '0')}`;
}

/**
 * A local trading service speaking the agent API the web proxies to:
 * `GET /agent/balances?chains=`, `POST /agent/prompt` (202 with a job),
 * `GET /agent/job/:jobId` (a job is only visible to the key that made it;
 * it is `processing` on the first poll and `completed` afterwards).
 * Every request needs a known `X-API-Key` (401 otherwise).
 */
export async function startFakeTradingApi(options: { keys: string[] }): Promise<FakeTradingApi> {
  const keys = new Set(options.keys);
  const requests: TradingApiRequest[] = [];
  const jobs = new Map<string, TradingJob>();
  const fake: FakeTradingApi = { url: '', requests, jobs, behaviour: {}, close: async () => {} };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake-trading.local');
    const body = await readBody(req);
    const header = req.headers['x-api-key'];
    const apiKey = typeof header === 'string' ? header : undefined;
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      apiKey,
      headers: req.headers,
      body,
    });

    const { delayMs = 0, nonJson = false } = fake.behaviour;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (res.destroyed) return;
    if (nonJson) {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      return;
    }
    if (!apiKey || !keys.has(apiKey)) {
      sendJson(res, 401, { error: 'Unauthorized', message: 'Invalid or missing API key' });
      return;
    }

    if (req.method === 'GET' && url.pathname === '/agent/balances') {
      const chains = (url.searchParams.get('chains') ?? 'base').split(',').filter(Boolean);
      const unknown = chains.find((c) => !KNOWN_CHAINS.has(c));
      if (unknown) {
        sendJson(res, 400, { success: false, error: `Unsupported chain: ${unknown}` });
        return;
      }
      const address = addressFor(apiKey);
      const balances = Object.fromEntries(
        chains.map((chain) => [chain, { nativeBalance: '0.5', nativeUsd: '1500.00', tokenBalances: [], total: '1500.00' }]),
      );
      sendJson(res, 200, { success: true, evmAddress: address, solAddress: `So${address.slice(2, 34)}`, balances });
      return;
    }

    if (req.method === 'POST' && url.pathname === '/agent/prompt') {
      const input = (typeof body === 'object' && body !== null ? body : {}) as { prompt?: unknown; threadId?: unknown };
      if (typeof input.prompt !== 'string' || input.prompt === '') {
        sendJson(res, 400, { success: false, error: 'prompt is required' });
        return;
      }
      const job: TradingJob = {
        jobId: `job_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
        threadId: typeof input.threadId === 'string' ? input.threadId : `thr_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
        prompt: input.prompt,
        apiKey,
        status: 'pending',
        createdAt: new Date().toISOString(),
        polls: 0,
      };
      jobs.set(job.jobId, job);
      sendJson(res, 202, {
        success: true,
        jobId: job.jobId,
        threadId: job.threadId,
        status: 'pending',
        message: 'Job submitted successfully',
      });
      return;
    }

    const jobMatch = /^\/agent\/job\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && jobMatch) {
      const job = jobs.get(decodeURIComponent(jobMatch[1] ?? ''));
      if (!job || job.apiKey !== apiKey) {
        sendJson(res, 404, { success: false, error: 'Job not found' });
        return;
      }
      job.polls += 1;
      job.status = job.polls === 1 ? 'processing' : 'completed';
      sendJson(res, 200, {
        success: true,
        jobId: job.jobId,
        threadId: job.threadId,
        status: job.status,
        prompt: job.prompt,
        createdAt: job.createdAt,
        ...(job.status === 'completed'
          ? { response: `Done: ${job.prompt}`, completedAt: new Date().toISOString(), processingTime: 1200 }
          : {}),
      });
      return;
    }

    sendJson(res, 404, { error: 'Not found' });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}

/** A base URL on 127.0.0.1 where nothing listens (a port bound, then released). */
export async function unreachableUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
