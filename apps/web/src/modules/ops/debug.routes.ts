import { type App, DomainError } from '@aop/core';
import type { WebConfig } from '../../config.js';
import { requireUser } from '../../platform/http/auth.js';
import { emailEventStats, hostingEventStats, latestMigration, suppressedAddressCount } from './debug.service.js';

const BACKEND_PROBE_TIMEOUT_MS = 3_000;

/**
 * Spec §4.18 Other: `POST /api/debug`, administrators only (401 / 403 `Forbidden`). A live diagnostic of this web
 * instance: runtime, database (reachable, schema version), backend reachability, mail and webhook set-up with the
 * latest events, and which integrations are configured. Only facts and booleans: no secret, key, token, URL with
 * credentials or connection string is ever part of the answer. POST because it runs live checks.
 */
export async function debugRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  app.post(
    '/api/debug',
    {
      schema: {
        tags: ['health'],
        description: 'Administrators: a live diagnostic of this web instance (no secrets). Any body is ignored.',
      },
    },
    async (request) => {
      const user = await requireUser(request);
      if (!user.isAdmin) throw new DomainError('FORBIDDEN');
      const db = app.db.kysely;

      const [reachable, migration, backend, suppressed, emailLatest, hostingLatest] = await Promise.all([
        app.db.ping().catch(() => false),
        latestMigration(db),
        probeBackend(app),
        suppressedAddressCount(db),
        emailEventStats(db),
        hostingEventStats(db),
      ]);
      const iso = (value: unknown) => (value ? new Date(value as string | Date).toISOString() : null);
      const memory = process.memoryUsage();

      return {
        service: 'web',
        requestId: request.id,
        time: new Date(app.clock()).toISOString(),
        environment: config.production ? 'production' : 'development',
        runtime: {
          node: process.version,
          platform: process.platform,
          arch: process.arch,
          uptimeSeconds: Math.round(process.uptime()),
          memory: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed },
        },
        database: {
          kind: app.db.kind,
          reachable,
          schemaVersion: migration ? { version: migration.version, name: migration.name, appliedAt: iso(migration.applied_at) } : null,
        },
        backend,
        mail: { transport: config.mail.smtpUrl ? 'smtp' : 'outbox', suppressedAddresses: suppressed },
        webhooks: {
          email: {
            configured: Boolean(config.webhooks.emailSecret),
            events: Number(emailLatest?.n ?? 0),
            lastEventAt: iso(emailLatest?.at),
          },
          hosting: {
            configured: Boolean(config.webhooks.hostingSecret),
            events: Number(hostingLatest?.n ?? 0),
            lastEventAt: iso(hostingLatest?.at),
          },
        },
        integrations: {
          cardPayments: Boolean(config.stripe),
          chainPayments: Boolean(config.payments),
          directDeployment: Boolean(config.hosting),
          sharedGateway: Boolean(config.gateway.sharedUrl),
          demoChat: Boolean(config.demo.llm),
          x402: Boolean(config.x402.gatewayUrl),
          identityProvider: Boolean(config.idp.clientId && config.idp.issuer),
          codeHost: Boolean(config.codehost.clientId),
          provisioningDisabled: config.provisioningDisabled,
        },
        caller: { id: user.id, email: user.email, via: user.via },
      };
    },
  );
}

/** The backend's own `/health`, briefly: reachable or not, and what it says about provisioning. */
async function probeBackend(app: App) {
  if (!app.backend.configured) return { configured: false, reachable: false };
  try {
    const answer = await app.backend.request<{ status?: unknown; provisioning?: unknown; provisioner?: unknown }>('/health', {
      timeoutMs: BACKEND_PROBE_TIMEOUT_MS,
    });
    const body = answer.body ?? {};
    return {
      configured: true,
      reachable: answer.status === 200,
      status: typeof body.status === 'string' ? body.status : null,
      provisioning: typeof body.provisioning === 'string' ? body.provisioning : null,
      provisioner: typeof body.provisioner === 'string' ? body.provisioner : null,
    };
  } catch {
    return { configured: true, reachable: false };
  }
}
