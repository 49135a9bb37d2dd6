import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';

/**
 * Every web path of the spec's part 4 (`interface-spec.md`, outside this repository: README "The contract"), with its
 * methods, as listed there once, section by section. Path parameters keep the spec's `:name` form.
 *
 * Left out, because the web service does not serve them:
 * - the summarizer (§4.7 and §4.18 `POST /api/summarize`, `/api/extract`): its own service, its own document;
 * - the backend's own paths, marked "(backend)" or backend-only in the spec: `{backend_url}/health` (§4.10), the agent
 *   bus `POST /api/underground/bus/send` (§4.11: agents call the backend directly), `POST /api/deployments` and
 *   `GET /api/agents/:id/verification` (§4.15), and in §4.18 `POST /api/validate-key`, `POST /api/subscriptions/deploy`,
 *   the AI group and the runtime group;
 * - `POST /api/agents` and `GET /api/agents/:id/token` (§4.15): the backend's agent record and gateway token (the
 *   reference behaviour in docs/decisions.md "Agents CRUD"); on the web an agent is created by `POST /api/provision`
 *   and its token handed out by `GET /api/user/runtime`;
 * - the agent containers' probes `/healthz`, `/readyz` (§4.10): served by each OpenClaw gateway.
 * The backend areas the web relays for the signed-in user (§4.11 underground, §4.18 installations, metrics, logs,
 * workspace browse, tool host, swarms, colony; docs/decisions.md "Backend areas through the web") are web paths too,
 * and so are the per-agent actions §4.15 gives the backend, which the web also serves (issue #19).
 */
const SPEC_WEB_PATHS: Record<string, string[]> = {
  '4.1 Accounts and authentication': [
    'POST /api/register',
    'POST /api/auth/login',
    'GET /api/auth/session',
    'POST /api/auth/signout',
    'GET /api/auth/codehost',
    'GET /api/auth/idp',
    'GET /api/auth/idp/callback',
    'GET /api/auth/nonce',
    'POST /api/auth/nonce',
    'POST /api/wallet-auth',
    'GET /api/settings',
    'POST /api/settings',
    'PATCH /api/settings',
    'POST /api/settings/password',
    'POST /api/auth/forgot-password',
    'POST /api/auth/reset-password',
    'GET /api/auth/social-identity/verify',
    'POST /api/auth/social-identity/verify',
    'GET /api/auth/social-identity/refresh',
    'POST /api/auth/social-identity/refresh',
    'GET /api/auth/token-gating/verify',
    'POST /api/auth/token-gating/verify',
    'POST /api/security/risc',
    'GET /api/security/risc',
    'POST /api/auth/idp/risc',
  ],
  '4.2 Configuration': ['GET /api/config', 'POST /api/config', 'PUT /api/config'],
  '4.3 Cron': ['GET /api/cron', 'POST /api/cron', 'DELETE /api/cron'],
  '4.4 Plugin gateway and chat': [
    'POST /api/v1/gateway',
    'POST /api/wallet/sessions',
    'POST /api/gateway/chat',
    'GET /api/gateway/status',
    'POST /api/chat',
    'GET /api/chat',
  ],
  '4.5 x402 payment gateway': ['GET /api/x402', 'POST /api/x402'],
  '4.6 Demo chat': ['GET /api/demo/chat', 'POST /api/demo/chat'],
  '4.8 Bridge': ['POST /api/bridge/send', 'GET /api/bridge/inbox', 'GET /api/bridge/health'],
  '4.9 Workflows': [
    'GET /api/workflows',
    'POST /api/workflows',
    'GET /api/workflows/:workflowId',
    'PUT /api/workflows/:workflowId',
    'DELETE /api/workflows/:workflowId',
  ],
  '4.10 Health and heartbeat': [
    'GET /api/health',
    'GET /api/admin/health',
    'GET /api/heartbeat',
    'PUT /api/heartbeat',
    'POST /api/heartbeat',
    'DELETE /api/heartbeat',
  ],
  '4.11 Underground (relayed to the backend)': [
    'GET /api/underground/events',
    'POST /api/underground/events',
    'POST /api/underground/wallets',
    'GET /api/underground/wallets/:address/balance',
    'POST /api/underground/splits',
  ],
  '4.12 Devices': ['GET /api/devices', 'POST /api/devices'],
  '4.13 Trading service': [
    'GET /api/user/trading-key',
    'POST /api/user/trading-key',
    'DELETE /api/user/trading-key',
    'GET /api/trading/balances',
    'POST /api/trading/prompt',
    'GET /api/trading/prompt',
  ],
  '4.14 Dashboards and usage': ['GET /api/dashboard/cost', 'GET /api/dashboard/stats'],
  '4.15 Agents': [
    'GET /api/agents',
    'GET /api/agents/:id',
    'GET /api/agents/:id/config',
    'PUT /api/agents/:id/config',
    'GET /api/agents/:id/messages',
    'GET /api/agents/:id/stats',
    'POST /api/agents/clone',
    'GET /api/agents/clone',
    'GET /api/agents/provision',
    'POST /api/agents/provision',
    'POST /api/provision',
    ...['start', 'stop', 'restart', 'update', 'repair', 'reset-memory'].flatMap((action) => [
      `POST /api/agents/:id/${action}`,
      `POST /api/instance/:userId/${action}`,
    ]),
    'GET /api/instance/:userId',
    'GET /api/instance/:userId/stats',
    'POST /api/agents/:id/verify',
    'DELETE /api/agents/:id/verify',
    'GET /api/user/runtime',
  ],
  '4.16 Streaming': ['GET /api/radio/live', 'POST /api/radio/streams', 'POST /api/generate-video', 'POST /api/webhooks/streaming'],
  '4.17 Mission control': ['graph', 'traces', 'costs', 'bookings'].map((view) => `GET /api/mission-control/fleet/${view}`),
  '4.18 Other listed endpoints': [
    ...['channels', 'sessions', 'daily-brief', 'metrics', 'credits', 'models'].map((what) => `GET /api/${what}`),
    'GET /api/memory',
    'POST /api/memory',
    'GET /api/keys',
    'POST /api/keys',
    'GET /api/keys/:id',
    'DELETE /api/keys/:id',
    'POST /api/keys/validate',
    'GET /api/skills',
    'POST /api/skills',
    'POST /api/skills/:name',
    'GET /api/skills/booking-settlement',
    'POST /api/skills/booking-settlement',
    'GET /api/skills/instant-split',
    'POST /api/skills/instant-split',
    'GET /api/wallet',
    'POST /api/wallet',
    'GET /api/wallet/address',
    'POST /api/wallet/create',
    'GET /api/wallet/provider',
    'POST /api/wallet/provider',
    'GET /api/wallet/top-up',
    'POST /api/wallet/top-up',
    'GET /api/wallet-provider',
    'POST /api/wallet-provider',
    'GET /api/basename',
    'GET /api/agent',
    'POST /api/agent',
    'GET /api/files',
    'POST /api/files',
    'DELETE /api/files',
    'GET /api/billing',
    'POST /api/billing',
    'GET /api/checkout/verify',
    'GET /api/payments/card/checkout',
    'GET /api/payments/card/credits',
    'POST /api/payments/card/storage-upgrade',
    'GET /api/scheduled-tasks',
    'POST /api/scheduled-tasks',
    'PUT /api/scheduled-tasks',
    'DELETE /api/scheduled-tasks',
    'POST /api/register-home',
    'POST /api/register-link',
    'GET /api/installations',
    ...['historical', 'performance', 'summary'].map((view) => `GET /api/metrics/:userId/${view}`),
    ...['health', 'info', 'setup', 'tools', 'examples', 'docs', 'github'].map((what) => `GET /api/tool-host/${what}`),
    'POST /api/tool-host/validate-config',
    'POST /api/webhooks/email',
    'POST /api/webhooks/hosting-status',
    'GET /api/webhooks/hosting-status',
    'GET /api/logs/:agentId/stream',
    'GET /api/logs/:agentId/history',
    'POST /api/logs/:agentId/stop',
    'GET /api/logs/active',
    ...['tree', 'read', 'git-status', 'git-diff', 'git-log'].map((what) => `GET /api/browse/${what}`),
    'POST /api/browse/write',
    'POST /api/browse/git-sync',
    'GET /api/swarms',
    'POST /api/swarms',
    'GET /api/colony/status',
    'POST /api/invite',
    'POST /api/invites/verify',
    'GET /api/admin/invites',
    'POST /api/admin/invites',
    'GET /api/data-feeds',
    'POST /api/debug',
  ],
};

/** Paths of the spec the web must not serve (left out above): the check sees an absent path as absent. */
const NOT_WEB_PATHS = [
  'POST /api/summarize',
  'POST /api/extract',
  'POST /api/underground/bus/send',
  'POST /api/deployments',
  'GET /api/agents/:id/verification',
  'POST /api/validate-key',
  'POST /api/subscriptions/deploy',
  'POST /api/ai/chat',
  'GET /api/runtime/version',
];

/** `GET /api/agents/:id` → `get /api/agents/{}`: parameter names may differ between the spec and a route. */
const operation = (entry: string): string => {
  const [method, path] = entry.split(' ') as [string, string];
  return `${method.toLowerCase()} ${path.replace(/:[A-Za-z]+/g, '{}')}`;
};

describe('the OpenAPI document covers the spec', () => {
  let web: TestWeb;
  let documented: Set<string>;
  beforeAll(async () => {
    web = await startWeb();
    const res = await request(`${web.url}/api/openapi.json`);
    expect(res.status).toBe(200);
    documented = new Set(
      Object.entries(res.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => `${method} ${path.replace(/\{[^}]+\}/g, '{}')}`),
      ),
    );
  });
  afterAll(async () => {
    await web?.close();
  });

  it('every web path of spec part 4 is in /api/openapi.json with each of its methods', () => {
    const listed = Object.values(SPEC_WEB_PATHS).flat();
    expect(listed.length).toBeGreaterThan(180);
    expect(new Set(listed).size).toBe(listed.length);
    const missing = Object.entries(SPEC_WEB_PATHS).flatMap(([section, entries]) =>
      entries.filter((entry) => !documented.has(operation(entry))).map((entry) => `§${section}: ${entry}`),
    );
    expect(missing).toEqual([]);
  });

  it('the paths left out are not the web’s (so an absent path reads as absent)', () => {
    expect(NOT_WEB_PATHS.filter((entry) => documented.has(operation(entry)))).toEqual([]);
  });
});
