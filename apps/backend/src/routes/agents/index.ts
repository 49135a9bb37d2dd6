import { invalidAs, refuse } from '@aop/core/request-schema';
import { totalmem } from 'node:os';
import { type App, DEFAULT_AGENT_TIER, DomainError, isDomainError, newId, parseEncryptionKey } from '@aop/core';
import { isUniqueViolation } from '@aop/db';
import { type AgentHost, type ChannelTokens, type LlmSpec, PINNED_OPENCLAW_VERSION, UpdateFailedError } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import {
  appliedConfigOnHost,
  getAgentConfigBackup,
  listAgentConfigBackups,
  restoreAgentConfig,
  backUpAgentConfig,
  saveAgentConfig,
} from '../../services/agent-config.js';
import { syncWalletEnv, walletEnvFor, withWalletEnv } from '../../services/agent-wallet-env.js';
import {
  agentLifecycleState,
  agentModelView,
  agentView,
  configureOnHost,
  createDeployment,
  deleteDeployment,
  hostState,
  listDeployments,
  llmFor,
  newGatewayToken,
  normalizeAiProvider,
  onHost,
  ownDeployment,
  publicUrl,
  setDeploymentStatus,
  setDeploymentVersion,
  setVerification,
  updateDeployment,
  upsertDeployment,
} from '../../services/agents.js';
import {
  AgentConfigBody,
  CreateAgentBody,
  DeploymentBody,
  SECRET_MAX,
  UpdateAgentBody,
  UpdateImageBody,
  VERIFICATION_TYPES,
  VerifyBody,
} from './schemas.js';

export interface AgentRoutesOptions {
  config: BackendConfig;
  host: AgentHost;
}

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const StateQuery = Type.Object({ waitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 30_000 })) });

/** The caller, from the signed user context; agents always belong to a real user. */
function callerId(request: FastifyRequest): string {
  const id = request.userContext?.userId;
  if (!id || id === 'anonymous') throw new DomainError('USER_CONTEXT_REQUIRED');
  return id;
}

/**
 * Wakes a sleeping agent whose new settings only its gateway can judge (`configureOnHost`), once the change is saved.
 * A wake that fails (a full host) is logged: the change stands, and the agent's next wake applies it.
 */
async function wakeForNewSettings(host: AgentHost, request: FastifyRequest, agentId: string): Promise<void> {
  await host.start(agentId).catch((error: unknown) => {
    request.log.warn({ agentId, reason: error instanceof Error ? error.message : String(error) }, 'agent not woken for its new settings');
  });
}

/**
 * A secret the schema let through (non-empty, no surrounding whitespace, at most SECRET_MAX code points), held to
 * SECRET_MAX UTF-16 units as well, as before (the error never repeats it).
 */
function checkedSecret(value: string, invalid: 'INVALID_CHANNEL_TOKENS' | 'INVALID_API_KEY'): string {
  if (value.length > SECRET_MAX) throw new DomainError(invalid);
  return value;
}

/** Channel tokens the schema let through (known channels, at least one), each held to SECRET_MAX UTF-16 units. */
function checkedChannelTokens(value: ChannelTokens): ChannelTokens {
  for (const token of Object.values(value)) if (token !== undefined) checkedSecret(token, 'INVALID_CHANNEL_TOKENS');
  return value;
}

/**
 * The caller ahead of the body schema: an anonymous caller gets 401 whatever fields it sent, as when the handler
 * checked them. A body that is not a JSON object was refused (400) first, and still is.
 */
async function callerBeforeObjectBody(request: FastifyRequest): Promise<void> {
  const { body } = request;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) callerId(request);
}

/** Auth for every agent route: internal key, then the signed user context (spec §5). */
export function agentAuth(config: BackendConfig) {
  return [requireInternalKey(config.internalApiKey), verifyUserContext(config.userContextSecret)];
}

/** `POST /api/deployments` (spec §4.15; body and answers from the reference): deploys an agent's gateway. */
export async function deploymentRoutes(app: App, { config, host }: AgentRoutesOptions): Promise<void> {
  const walletDeps = { db: app.db, encryptionKey: parseEncryptionKey(config.encryptionKey), config };
  app.post(
    '/',
    {
      onRequest: agentAuth(config),
      preValidation: callerBeforeObjectBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) },
      schema: { tags: ['agents'], body: DeploymentBody },
    },
    async (request, reply) => {
      const userId = callerId(request);
      const body = request.body;
      // The schema refused a missing, empty or malformed agentId; null counts as missing too.
      if (body.agentId === null) throw new DomainError('FIELD_REQUIRED', { field: 'agentId' });
      const agentId = body.agentId;
      const deploy = (typeof body.config === 'object' && body.config !== null ? body.config : {}) as Record<string, unknown>;
      const autoProvision = deploy.autoProvision === true || deploy.agentType === 'business';
      const telegramToken = typeof deploy.telegramToken === 'string' ? deploy.telegramToken : undefined;
      const discordToken = typeof deploy.discordToken === 'string' ? deploy.discordToken : undefined;
      if (!telegramToken && !discordToken && !autoProvision) throw new DomainError('FIELD_REQUIRED', { field: 'telegramToken' });
      const aiProvider = normalizeAiProvider(deploy.aiProvider);
      const plan = typeof deploy.plan === 'string' && deploy.plan ? deploy.plan : DEFAULT_AGENT_TIER;
      const agentConfig =
        typeof deploy.agentConfig === 'object' && deploy.agentConfig !== null ? (deploy.agentConfig as Record<string, unknown>) : {};
      const apiKey = typeof deploy.apiKey === 'string' && deploy.apiKey ? deploy.apiKey : undefined;
      const name = body.name?.trim() || agentId;
      const now = new Date();

      const { row, created } = await app.db
        .withUser(userId, (trx) =>
          upsertDeployment(trx, {
            id: agentId,
            userId,
            userEmail: request.userContext?.email ?? null,
            name,
            plan,
            aiProvider,
            config: agentConfig,
            now,
          }),
        )
        .catch((err) => {
          // An id another user already deployed is not theirs to take over.
          if (isUniqueViolation(err)) throw new DomainError('AGENT_ID_ALREADY_IN_USE');
          throw err;
        });

      const spec = {
        agentId,
        userId,
        plan,
        config: agentConfig,
        channelTokens: { ...(telegramToken ? { telegram: telegramToken } : {}), ...(discordToken ? { discord: discordToken } : {}) },
        ...(llmFor(config, aiProvider, apiKey) ? { llm: llmFor(config, aiProvider, apiKey) } : {}),
      };
      // An agent that already has an underground wallet gets its key in its environment (spec §4.11 bus signing); a
      // key that cannot be opened (e.g. ENCRYPTION_KEY rotated) must not stop the deployment itself.
      const wallet = await walletEnvFor(walletDeps, userId, agentId).catch((err: unknown) => {
        request.log.warn({ agentId, reason: err instanceof Error ? err.message : String(err) }, 'agent wallet not handed over');
        return undefined;
      });
      const state = await onHost(async () => {
        const existing = await hostState(host, agentId);
        if (existing) {
          await host.configure(agentId, {
            config: spec.config,
            plan,
            channelTokens: spec.channelTokens,
            ...(spec.llm ? { llm: spec.llm } : {}),
            ...(wallet ? { agentEnv: withWalletEnv((await host.spec(agentId)).agentEnv, wallet) } : {}),
          });
          return host.start(agentId).catch(() => host.status(agentId));
        }
        return host.create({ ...spec, ...(wallet ? { agentEnv: wallet } : {}), gatewayToken: newGatewayToken(config) });
      }).catch(async (err) => {
        // A refused change (what an agent sharing its gateway cannot have) left the agent as it was: not an error state.
        const refused = err instanceof DomainError && err.code === 'AGENT_SHARES_GATEWAY';
        if (!refused) await app.db.withUser(userId, (trx) => setDeploymentStatus(trx, agentId, 'error'));
        throw err;
      });
      await app.db.withUser(userId, (trx) => setDeploymentStatus(trx, agentId, 'active'));
      return reply.code(created ? 201 : 200).send({
        id: `deploy-${agentId}`,
        agentId,
        subdomain: row.subdomain,
        url: publicUrl(config, row.subdomain, state),
        status: 'active',
        openclawVersion: state.version,
      });
    },
  );
}

/** Agents (spec §4.15 backend rows): CRUD, lifecycle, token. Every route is limited to the caller's agents. */
export async function agentRoutes(app: App, { config, host }: AgentRoutesOptions): Promise<void> {
  const walletDeps = { db: app.db, encryptionKey: parseEncryptionKey(config.encryptionKey), config };
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  app.addHook('onRequest', verifyUserContext(config.userContextSecret));

  const view = async (row: Parameters<typeof agentView>[1]) => agentView(config, row, await hostState(host, row.id));

  app.get('/agents', { schema: { tags: ['agents'] } }, async (request) => {
    const userId = callerId(request);
    const rows = await app.db.withUser(userId, (trx) => listDeployments(trx));
    const states = new Map((await host.list()).map((s) => [s.agentId, s]));
    return rows.map((row) => agentView(config, row, states.get(row.id) ?? null));
  });

  app.post(
    '/agents',
    {
      preValidation: callerBeforeObjectBody,
      config: { invalidBody: 'NAME_REQUIRED' },
      schema: { tags: ['agents'], body: CreateAgentBody },
    },
    async (request, reply) => {
      const userId = callerId(request);
      // The schema refused a blank name; its length counts once trimmed.
      const name = request.body.name.trim();
      if (name.length > 100) throw new DomainError('NAME_AT_MOST_100_CHARACTERS');
      const agentConfig = typeof request.body.config === 'object' && request.body.config !== null ? request.body.config : {};
      const id = newId('agent');
      const row = await app.db.withUser(userId, (trx) =>
        createDeployment(trx, {
          id,
          userId,
          userEmail: request.userContext?.email ?? null,
          name,
          plan: request.body.plan ?? DEFAULT_AGENT_TIER,
          config: agentConfig,
        }),
      );
      return reply.code(201).send({
        id,
        name,
        agentId: id,
        status: 'pending',
        subdomain: row.subdomain,
        url: publicUrl(config, row.subdomain, null),
        createdAt: row.created_at.toISOString(),
      });
    },
  );

  app.get('/agents/:id', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const userId = callerId(request);
    return view(await app.db.withUser(userId, (trx) => ownDeployment(trx, request.params.id)));
  });

  app.put(
    '/agents/:id',
    {
      preValidation: callerBeforeObjectBody,
      schema: { tags: ['agents'], params: IdParams, body: UpdateAgentBody },
    },
    async (request) => {
      const userId = callerId(request);
      const body = request.body;
      const aiProvider = body.aiProvider === undefined ? undefined : normalizeAiProvider(body.aiProvider);
      const agentConfig = body.config;
      const channelTokens = body.channelTokens === undefined ? undefined : checkedChannelTokens(body.channelTokens);
      const apiKey = body.apiKey === undefined ? undefined : checkedSecret(body.apiKey, 'INVALID_API_KEY');
      // Tokens and keys live only in the agent's host spec: an agent that is not deployed has nowhere to keep them.
      if (channelTokens || apiKey) {
        await app.db.withUser(userId, (trx) => ownDeployment(trx, request.params.id));
        if ((await hostState(host, request.params.id)) === null) throw new DomainError('AGENT_NOT_DEPLOYED');
      }
      const row = await app.db.withUser(userId, async (trx) => {
        await ownDeployment(trx, request.params.id);
        // A new configuration keeps the one it replaces as a backup, as the configuration routes do.
        if (agentConfig) await backUpAgentConfig(trx, request.params.id, new Date(app.clock()));
        return updateDeployment(trx, request.params.id, { plan: body.plan, aiProvider, config: agentConfig });
      });
      const state = await hostState(host, row.id);
      if (state && (agentConfig || body.plan || channelTokens || apiKey)) {
        const spec = channelTokens || apiKey ? await onHost(() => host.spec(row.id)) : undefined;
        // The host replaces channel tokens as a whole: merge, so setting one channel keeps the others.
        const tokens = channelTokens ? { ...spec?.channelTokens, ...channelTokens } : undefined;
        let llm: LlmSpec | undefined;
        if (apiKey) {
          // The agent's provider; a new key for the provider it runs on keeps its model, else the provider's default.
          const provider = normalizeAiProvider(row.ai_provider);
          const keptModel = spec?.llm?.baseUrl === config.aiBaseUrls[provider] ? spec.llm.model : undefined;
          llm = llmFor(config, provider, apiKey, keptModel);
        }
        const wake = await onHost(() =>
          configureOnHost(host, row.id, {
            ...(agentConfig ? { config: agentConfig } : {}),
            ...(body.plan ? { plan: body.plan } : {}),
            ...(tokens ? { channelTokens: tokens } : {}),
            ...(llm ? { llm } : {}),
          }),
        );
        if (wake) await wakeForNewSettings(host, request, row.id);
      }
      const current = agentView(config, row, state);
      return {
        id: row.id,
        plan: row.plan,
        aiProvider: row.ai_provider,
        subdomain: row.subdomain,
        status: current.status,
        message: 'Agent updated',
      };
    },
  );

  // Best effort (spec §4.15): deleting an unknown agent still answers deleted.
  app.delete('/agents/:id', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const userId = callerId(request);
    const owned = await app.db.withUser(userId, (trx) => deleteDeployment(trx, request.params.id));
    if (owned) await host.delete(request.params.id).catch((err) => request.log.warn({ err }, 'agent host delete failed'));
    return { id: request.params.id, deleted: true };
  });

  /** Runs a lifecycle action on an agent the caller owns. */
  async function lifecycle<T>(request: FastifyRequest, action: (id: string) => Promise<T>): Promise<T> {
    const userId = callerId(request);
    const { id } = request.params as { id: string };
    await app.db.withUser(userId, (trx) => ownDeployment(trx, id));
    if ((await hostState(host, id)) === null) throw new DomainError('AGENT_NOT_DEPLOYED');
    return onHost(() => action(id));
  }

  const lifecycleSchema = { tags: ['agents'], params: IdParams };
  /** Agents this backend is updating now (their state is `updating` until the update settles). */
  const updating = new Set<string>();

  // Issue #19: the one agent state machine (`@aop/core/agent-state`), derived from the host's process state and the
  // gateway's /readyz each time it is asked; the web relays it on `/api/agents/:id/health` and the event stream.
  // `waitMs`: an agent that is starting is answered once it is ready (or `waitMs` has passed), not at once, so a caller
  // waiting for it (a message sent while it starts or wakes) hears of it the moment it is live instead of polling.
  app.get('/agents/:id/state', { schema: { tags: ['agents'], params: IdParams, querystring: StateQuery } }, async (request) => {
    const row = await app.db.withUser(callerId(request), (trx) => ownDeployment(trx, request.params.id));
    const waitMs = request.query.waitMs ?? 0;
    if (waitMs > 0 && !updating.has(row.id)) {
      const now = await hostState(host, row.id);
      if (now?.status === 'starting' || now?.status === 'restarting') {
        await host.waitUntilReady(row.id, { timeoutMs: waitMs }).catch(() => undefined); // the state says how it went
      }
    }
    return onHost(() => agentLifecycleState(host, row, updating.has(row.id) ? 'update' : null));
  });

  app.post('/agents/:id/start', { schema: lifecycleSchema }, async (request) => {
    await lifecycle(request, (id) => host.start(id));
    return { success: true, status: 'active' };
  });

  app.post('/agents/:id/stop', { schema: lifecycleSchema }, async (request) => {
    await lifecycle(request, (id) => host.stop(id));
    return { success: true, status: 'stopped' };
  });

  app.post('/agents/:id/restart', { schema: lifecycleSchema }, async (request) => {
    const before = await hostState(host, request.params.id);
    const state = await lifecycle(request, (id) => host.restart(id));
    return {
      success: true,
      status: 'active',
      healedLegacyModel: false,
      healMessage: before?.status === 'running' ? 'skip' : 'skip:container-not-running',
      openclawVersion: state.version,
    };
  });

  app.post('/agents/:id/update', { schema: { tags: ['agents'], params: IdParams, body: UpdateImageBody } }, async (request, reply) => {
    const image = request.body.image ?? PINNED_OPENCLAW_VERSION;
    const previous = await hostState(host, request.params.id);
    // While the update runs the gateway is down on purpose: the state says `updating`, not `stopped` or `degraded`.
    updating.add(request.params.id);
    try {
      const state = await lifecycle(request, (id) => host.update(id, { version: image }));
      await app.db.withUser(callerId(request), (trx) => setDeploymentVersion(trx, request.params.id, state.version));
      return {
        success: true,
        status: 'active',
        image,
        previousImage: previous?.version ?? null,
        backupPath: null,
        openclawVersion: state.version,
      };
    } catch (err) {
      // The new version did not start: the previous one runs again and the backup stays (spec §3.2).
      if (err instanceof UpdateFailedError) {
        return reply
          .code(500)
          .send({ error: err.message, backupPath: err.backupPath, previousImage: err.previousVersion, status: 'active' });
      }
      throw err;
    } finally {
      updating.delete(request.params.id);
    }
  });

  app.post('/agents/:id/repair', { schema: lifecycleSchema }, async (request) => {
    // Repair also hands the agent its wallet if its runtime lacks it (or a stale one, or the bus URL changed).
    await lifecycle(request, async (id) => {
      await syncWalletEnv(walletDeps, host, callerId(request), id).catch((err: unknown) => {
        request.log.warn({ agentId: id, reason: err instanceof Error ? err.message : String(err) }, 'agent wallet not handed over');
      });
      return host.repair(id);
    });
    return { success: true, message: 'Agent repaired successfully' };
  });

  app.post('/agents/:id/reset-memory', { schema: lifecycleSchema }, async (request) => {
    await lifecycle(request, (id) => host.resetMemory(id));
    return { success: true, message: 'Memory reset successfully' };
  });

  app.get('/agents/:id/stats', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const userId = callerId(request);
    const row = await app.db.withUser(userId, (trx) => ownDeployment(trx, request.params.id));
    const state = await hostState(host, row.id);
    const stats = state
      ? await onHost(() => host.stats(row.id)).catch((err: unknown) => {
          // A provider that reports no resource figures (hosting) still answers, with N/A figures (reference shape).
          if (isDomainError(err, 'STATS_UNAVAILABLE')) return null;
          throw err;
        })
      : { cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 };
    if (!stats) {
      return {
        stats: {
          agentId: row.id,
          cpu: 'N/A',
          memory: 'N/A',
          memoryPercent: 'N/A',
          network: 'N/A',
          uptime: 'N/A',
          uptimeFormatted: 'N/A',
          status: agentView(config, row, state).status,
          pids: 'N/A',
        },
        status: 'ok',
      };
    }
    const total = totalmem();
    const seconds = Math.floor(stats.uptimeMs / 1000);
    return {
      stats: {
        agentId: row.id,
        cpu: `${stats.cpuPercent.toFixed(1)}%`,
        memory: `${(stats.memoryBytes / 1024 ** 2).toFixed(1)} MiB`,
        memoryPercent: `${((stats.memoryBytes / total) * 100).toFixed(1)}%`,
        network: 'N/A',
        uptime: seconds,
        uptimeFormatted: `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m ${seconds % 60}s`,
        status: agentView(config, row, state).status,
        pids: stats.pids,
      },
      status: 'ok',
    };
  });

  // Issue #19: each agent's configuration, with its own backups (services/agent-config.ts). A save backs up the
  // configuration it replaces and is applied by the agent's host (OpenClaw hot-reloads its config file) in the same
  // transaction, so a host that refuses leaves the record and the backups as they were. It answers whether a sleeping
  // agent is to be woken for its new settings (`configureOnHost`): done once the transaction is over (a start takes
  // seconds).
  const applyOnHost = async (agentId: string, next: Record<string, unknown>): Promise<boolean> =>
    (await hostState(host, agentId)) ? onHost(() => configureOnHost(host, agentId, { config: next })) : false;

  app.get('/agents/:id/config', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const { row, backups } = await app.db.withUser(callerId(request), async (trx) => ({
      row: await ownDeployment(trx, request.params.id),
      backups: await listAgentConfigBackups(trx, request.params.id),
    }));
    // What the gateway runs with (its model, its log level), from the configuration its host writes; null when no
    // host of this backend runs the agent.
    const applied = (await hostState(host, row.id)) ? await onHost(() => appliedConfigOnHost(host, row.id)) : null;
    return { agentId: row.id, config: row.config, backups, applied };
  });

  app.put(
    '/agents/:id/config',
    {
      config: { invalidBody: 'INVALID_CONFIG_OBJECT' },
      schema: { tags: ['agents'], params: IdParams, body: AgentConfigBody },
    },
    async (request) => {
      const next = request.body.config;
      const agentId = request.params.id;
      let wake = false;
      const saved = await app.db.withUser(callerId(request), (trx) =>
        saveAgentConfig(trx, agentId, next, new Date(app.clock()), async () => {
          wake = await applyOnHost(agentId, next);
        }),
      );
      if (wake) await wakeForNewSettings(host, request, agentId);
      return { success: true, agentId, config: next, ...saved };
    },
  );

  app.get(
    '/agents/:id/config/backups/:backupId',
    {
      schema: { tags: ['agents'], params: Type.Object({ id: Type.String({ maxLength: 64 }), backupId: Type.String({ maxLength: 100 }) }) },
    },
    async (request) => {
      const { id, backupId } = request.params;
      const backup = await app.db.withUser(callerId(request), async (trx) => {
        await ownDeployment(trx, id);
        return getAgentConfigBackup(trx, id, backupId);
      });
      return { agentId: id, backup };
    },
  );

  app.post(
    '/agents/:id/config/restore',
    {
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['agents'],
        params: IdParams,
        body: Type.Object({ backupId: Type.String({ minLength: 1, maxLength: 100, ...invalidAs(refuse('MISSING_BACKUPID')) }) }),
      },
    },
    async (request) => {
      const agentId = request.params.id;
      const { backupId } = request.body;
      let wake = false;
      const restored = await app.db.withUser(callerId(request), (trx) =>
        restoreAgentConfig(trx, agentId, backupId, new Date(app.clock()), async (config) => {
          wake = await applyOnHost(agentId, config);
        }),
      );
      if (wake) await wakeForNewSettings(host, request, agentId);
      return { success: true, agentId, config: restored.config, restoredFrom: backupId, backups: restored.backups };
    },
  );

  app.get('/agents/:id/verification', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const row = await app.db.withUser(callerId(request), (trx) => ownDeployment(trx, request.params.id));
    return { agentId: row.id, verified: row.verification !== null, ...(row.verification ?? {}) };
  });

  app.post(
    '/agents/:id/verify',
    {
      schema: { tags: ['agents'], params: IdParams, body: VerifyBody },
    },
    async (request) => {
      const body = request.body;
      // The schema refused any other type; a missing one is refused here, after the other fields, as before.
      if (body.type === undefined) throw new DomainError('INVALID_VERIFICATION_TYPE', { allowed: VERIFICATION_TYPES.join(', ') });
      const verification =
        body.verified === false
          ? null
          : {
              type: body.type,
              verifierAddress: body.verifierAddress ?? null,
              metadata: body.metadata ?? {},
              verifiedAt: new Date().toISOString(),
            };
      await app.db.withUser(callerId(request), async (trx) => {
        await ownDeployment(trx, request.params.id);
        await setVerification(trx, request.params.id, verification);
      });
      return { success: true, agentId: request.params.id, verified: verification !== null, ...(verification ?? {}) };
    },
  );

  app.delete('/agents/:id/verify', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    await app.db.withUser(callerId(request), async (trx) => {
      await ownDeployment(trx, request.params.id);
      await setVerification(trx, request.params.id, null);
    });
    return { success: true, agentId: request.params.id, verified: false };
  });

  // Issue #19: the model the agent runs, for the web's agent record, chat footers and usage ledger (a lighter read
  // than the configuration route: no config body, no backups), with the host's status it was read beside.
  app.get('/agents/:id/model', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const row = await app.db.withUser(callerId(request), (trx) => ownDeployment(trx, request.params.id));
    const state = await hostState(host, row.id);
    const applied = state ? await onHost(() => appliedConfigOnHost(host, row.id)) : null;
    return agentModelView(row, applied, state?.status ?? null);
  });

  app.get('/agents/:id/token', { schema: { tags: ['agents'], params: IdParams } }, async (request) => {
    const userId = callerId(request);
    await app.db.withUser(userId, (trx) => ownDeployment(trx, request.params.id));
    const [spec, state] = await onHost(() => Promise.all([host.spec(request.params.id), host.status(request.params.id)]));
    // `backend`: the gateway only gives a paired device its scopes from where the web reaches it, and that device is
    // the backend's: control calls go through `POST /api/agents/:id/rpc`. `direct`: a token-only WebSocket works.
    // `openclawAgentId`: the agent inside that gateway, named by every call the web makes to it. `status`: the host's
    // word for the agent — a stopped agent whose gateway runs on for the customer's other agents is refused by the web.
    return {
      agentId: request.params.id,
      token: spec.gatewayToken,
      control: host.controlCredentials ? 'backend' : 'direct',
      openclawAgentId: state.openclawAgentId,
      status: state.status,
    };
  });
}
