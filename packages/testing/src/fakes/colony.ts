import { createHash, randomBytes } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sendJson } from '../fake-http.js';

/** One request the fake colony gateway received, as it arrived. */
export interface ColonyRequest {
  method: string;
  /** Path without the query string, e.g. `/gateway/fitness/atlas`. */
  path: string;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body, the raw text when it is not JSON, or undefined when empty. */
  body: unknown;
}

export interface ColonyBehaviour {
  /** Wait this long before answering (to exercise client timeouts). */
  delayMs?: number;
  /**
   * Answer with this HTTP status and a JSON error instead of the normal answer; 402 carries an x402 payment
   * challenge (`x402Version`, `accepts[]`) as a real paid gateway would.
   */
  failWith?: number;
  /** Answer with an HTML error page instead of JSON. */
  nonJson?: boolean;
  /** Drop every connection without an answer, as a crashed gateway behind a proxy would. */
  down?: boolean;
  /** Apply the behaviour only to these paths (e.g. `/gateway/colony/join`); to every path when unset. */
  paths?: string[];
}

export interface ColonyMember {
  agentId: string;
  walletAddress: string;
  userId: unknown;
  joinedAt: string;
}

export interface ColonyPayment {
  paymentId: string;
  agentId: string;
  amount: number;
  currency: string;
  recipient: string;
  method: string;
  endpoint: string | null;
  txHash: string;
}

export interface FakeColony {
  /** `http://127.0.0.1:<port>`, the value of X402_GATEWAY_URL. */
  url: string;
  readonly requests: ColonyRequest[];
  readonly members: Map<string, ColonyMember>;
  readonly payments: ColonyPayment[];
  /** What the next requests meet; change it between tests. */
  behaviour: ColonyBehaviour;
  close(): Promise<void>;
}

/** Currencies the fake settles; anything else is refused with 400, the way a real gateway refuses unknown tokens. */
export const COLONY_CURRENCIES = ['USDC', 'ETH', 'SOL'];

/** The extra endpoint the fake lists, so a test can tell its list from the web's fallback list. */
export const COLONY_EXTRA_ENDPOINT = { slug: '/gateway/stats', description: 'Colony statistics', price: 'Free' };

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** A deterministic fitness score for an agent: 0-100, from a hash of its id. */
export function colonyFitnessScore(agentId: string): number {
  return (createHash('sha256').update(agentId).digest()[0] ?? 0) % 101;
}

export const colonyTier = (score: number): string => (score >= 80 ? 'gold' : score >= 50 ? 'silver' : 'bronze');
const DISCOUNTS: Record<string, number> = { gold: 0.2, silver: 0.1, bronze: 0 };
const PRICING_TIERS: Record<string, string> = { gold: 'premium', silver: 'standard', bronze: 'basic' };
const BASE_RATE = 0.01;

const asRecord = (body: unknown): Record<string, unknown> =>
  typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};

/**
 * A local colony gateway speaking the paths the web's `/api/x402` proxies to: `GET /health`,
 * `POST /gateway/colony/join` (`{ agentId, walletAddress }`, EVM wallet required), `GET /gateway/fitness/:agentId`,
 * `GET /gateway/pricing/:agentId`, `GET /gateway/endpoints`, `POST /gateway/pay` (settles `COLONY_CURRENCIES`).
 * `behaviour` makes it slow, fail with a status, answer HTML or drop connections.
 */
export async function startFakeColony(): Promise<FakeColony> {
  const requests: ColonyRequest[] = [];
  const members = new Map<string, ColonyMember>();
  const payments: ColonyPayment[] = [];
  const fake: FakeColony = { url: '', requests, members, payments, behaviour: {}, close: async () => {} };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake-colony.local');
    const body = await readBody(req);
    requests.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers, body });

    const { delayMs = 0, failWith, nonJson = false, down = false, paths } = fake.behaviour;
    const applies = !paths || paths.includes(url.pathname);
    if (applies && down) {
      req.socket.destroy();
      return;
    }
    if (applies && delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (res.destroyed) return;
    if (applies && nonJson) {
      res.writeHead(failWith ?? 200, { 'content-type': 'text/html' });
      res.end('<html><body><h1>Colony gateway</h1></body></html>');
      return;
    }
    if (applies && failWith === 402) {
      sendJson(res, 402, {
        x402Version: 1,
        error: 'Payment required to join this colony',
        accepts: [
          {
            scheme: 'exact',
            network: 'base',
            maxAmountRequired: '10000',
            resource: `${fake.url}${url.pathname}`,
            payTo: '0x1111111111111111111111111111111111111111',
            asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
            maxTimeoutSeconds: 300,
          },
        ],
      });
      return;
    }
    if (applies && failWith !== undefined) {
      sendJson(res, failWith, { error: `Colony ${STATUS_CODES[failWith] ?? 'error'}` });
      return;
    }

    if (req.method === 'GET' && url.pathname === '/health') {
      sendJson(res, 200, {
        status: 'healthy',
        service: 'colony-gateway',
        agents: members.size,
        colonies: 1,
        timestamp: new Date().toISOString(),
      });
      return;
    }

    if (req.method === 'POST' && url.pathname === '/gateway/colony/join') {
      const input = asRecord(body);
      if (typeof input.agentId !== 'string' || input.agentId === '') {
        sendJson(res, 400, { success: false, error: 'agentId required' });
        return;
      }
      if (typeof input.walletAddress !== 'string' || !EVM_ADDRESS.test(input.walletAddress)) {
        sendJson(res, 400, { success: false, error: 'A valid walletAddress is required' });
        return;
      }
      const member: ColonyMember = {
        agentId: input.agentId,
        walletAddress: input.walletAddress,
        userId: input.userId,
        joinedAt: new Date().toISOString(),
      };
      members.set(member.agentId, member);
      sendJson(res, 200, {
        success: true,
        colony: 'main',
        agentId: member.agentId,
        walletAddress: member.walletAddress,
        joinedAt: member.joinedAt,
        members: members.size,
      });
      return;
    }

    const fitnessMatch = /^\/gateway\/(fitness|pricing)\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && fitnessMatch) {
      const agentId = decodeURIComponent(fitnessMatch[2] ?? '');
      const score = colonyFitnessScore(agentId);
      const tier = colonyTier(score);
      if (fitnessMatch[1] === 'fitness') {
        sendJson(res, 200, { score, tier, details: { member: members.has(agentId), uptime: 0.99, tasksCompleted: score * 3 } });
      } else {
        const discount = DISCOUNTS[tier] ?? 0;
        sendJson(res, 200, {
          agentId,
          tier: PRICING_TIERS[tier],
          pricing: { rate: Math.round(BASE_RATE * (1 - discount) * 10_000) / 10_000, discount },
          fitness: { score, tier },
        });
      }
      return;
    }

    if (req.method === 'GET' && url.pathname === '/gateway/endpoints') {
      sendJson(res, 200, {
        success: true,
        endpoints: [
          { slug: '/gateway/colony/join', description: 'Join agent colony', price: 'Free' },
          { slug: '/gateway/fitness/:agentId', description: 'Get agent fitness score', price: 'Free' },
          { slug: '/gateway/pricing/:agentId', description: 'Get dynamic pricing', price: 'Free' },
          { slug: '/gateway/pay', description: 'Make payment', price: 'Variable' },
          COLONY_EXTRA_ENDPOINT,
        ],
      });
      return;
    }

    if (req.method === 'POST' && url.pathname === '/gateway/pay') {
      const input = asRecord(body);
      const { agentId, amount, currency, recipient, method, endpoint } = input;
      if (typeof agentId !== 'string' || typeof amount !== 'number' || amount <= 0 || typeof recipient !== 'string') {
        sendJson(res, 400, { success: false, error: 'Invalid payment' });
        return;
      }
      if (typeof currency !== 'string' || !COLONY_CURRENCIES.includes(currency)) {
        sendJson(res, 400, { success: false, error: `Unsupported currency: ${String(currency)}` });
        return;
      }
      const payment: ColonyPayment = {
        paymentId: `pay_${randomBytes(8).toString('hex')}`,
        agentId,
        amount,
        currency,
        recipient,
        method: typeof method === 'string' ? method : 'default',
        endpoint: typeof endpoint === 'string' ? endpoint : null,
        txHash: `0x${randomBytes(32).toString('hex')}`,
      };
      payments.push(payment);
      sendJson(res, 200, { success: true, status: 'settled', ...payment });
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
