import { refuse } from '@aop/core/request-schema';
import { execFileSync } from 'node:child_process';
import { type App, DomainError } from '@aop/core';
import { type AgentHost, PINNED_OPENCLAW_VERSION, defaultNodeBin } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { BackendConfig } from '../../config.js';
import { requireAdmin, requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { onHost } from '../../services/agents.js';

/** The Node 24 binary's version, read once (the gateways run on it, not on the backend's Node). */
let runtimeNode: string | null | undefined;
function runtimeNodeVersion(): string | null {
  if (runtimeNode === undefined) {
    try {
      runtimeNode = execFileSync(defaultNodeBin(), ['--version'], { encoding: 'utf8', timeout: 5_000 }).trim();
    } catch {
      runtimeNode = null;
    }
  }
  return runtimeNode;
}

/**
 * Spec §4.18 Runtime (backend), for operators: the runtime version, every agent
 * instance on this host with its stats, and maintenance (liveness and readiness
 * of all instances; restart one). Instances span tenants, so beyond the internal
 * key the user context must be an administrator.
 */
export async function runtimeRoutes(app: App, { config, host }: { config: BackendConfig; host: AgentHost }): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));

  app.get('/runtime/version', { schema: { tags: ['runtime'] } }, async () => ({
    openclawVersion: PINNED_OPENCLAW_VERSION,
    runtimeNode: runtimeNodeVersion(),
    backendNode: process.version,
    provider: host.provider,
  }));

  await app.register(async (admin: App) => {
    admin.addHook('onRequest', verifyUserContext(config.userContextSecret));
    admin.addHook('onRequest', requireAdmin(config.adminEmails));

    admin.get('/runtime/instances', { schema: { tags: ['runtime'] } }, async () => {
      const instances = await host.list();
      return { count: instances.length, instances };
    });

    admin.get(
      '/runtime/instances/:id/stats',
      { schema: { tags: ['runtime'], params: Type.Object({ id: Type.String({ maxLength: 64 }) }) } },
      async (request) => {
        const [state, stats, health] = await onHost(() =>
          Promise.all([host.status(request.params.id), host.stats(request.params.id), host.health(request.params.id)]),
        );
        return { agentId: request.params.id, status: state.status, version: state.version, stats, health };
      },
    );

    admin.get('/runtime/maintenance', { schema: { tags: ['runtime'] } }, async () => {
      const instances = await host.list();
      const checks = await Promise.all(
        instances.map(async (s) => ({ agentId: s.agentId, status: s.status, ...(await host.health(s.agentId)) })),
      );
      return {
        status: checks.every((c) => c.status !== 'running' || c.ready) ? 'ok' : 'degraded',
        total: checks.length,
        live: checks.filter((c) => c.live).length,
        ready: checks.filter((c) => c.ready).length,
        instances: checks,
      };
    });

    admin.post(
      '/runtime/maintenance',
      {
        config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) },
        schema: {
          tags: ['runtime'],
          body: Type.Object({ agentId: Type.Optional(Type.String({ maxLength: 64 })), action: Type.Optional(Type.String()) }),
        },
      },
      async (request) => {
        const agentId = request.body?.agentId;
        if (!agentId) throw new DomainError('FIELD_REQUIRED', { field: 'agentId' });
        const action = request.body?.action ?? 'restart';
        if (action !== 'restart') throw new DomainError('UNSUPPORTED_ACTION_USE_RESTART');
        const state = await onHost(() => host.restart(agentId));
        return { success: true, agentId, action, status: state.status };
      },
    );
  });
}
