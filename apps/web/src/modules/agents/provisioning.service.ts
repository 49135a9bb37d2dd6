import { DEFAULT_AGENT_TIER, DomainError, isPaidPlan, newId, provisioningBlock, tierWithin } from '@aop/core';
import type { Database } from '@aop/db';
import type { WebConfig } from '../../config.js';
import { type BackendClient, BackendUnavailableError } from '../../platform/clients/backend-client.js';
import { type DeploymentWatcher, deployDirect, sealGatewayToken } from './hosting.service.js';
import { AGENT_PLATFORM_KEY_PROVIDERS, PLATFORM_DEFAULT_PROVIDER } from '../../platform/agent-ai-keys.js';
import { type AuthUser, backendCaller } from '../../platform/sessions.js';

/** Providers a user may pick; others exist only as fallbacks and are refused (spec §4.15). */
const AI_PROVIDERS = new Set(['openrouter', 'gemini', 'google', 'groq', 'anthropic', 'openai']);

export interface ProvisionRequest {
  name?: unknown;
  telegramToken?: unknown;
  discordToken?: unknown;
  whatsappToken?: unknown;
  autoProvision?: unknown;
  agentType?: unknown;
  aiProvider?: unknown;
  apiKey?: unknown;
  tier?: unknown;
}

const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

/** The checks of spec §4.15, in its order: kill switch, plan, subscription, tier limit, channel tokens, provider. */
async function admit(db: Database, config: WebConfig, user: AuthUser, body: ProvisionRequest) {
  if (config.provisioningDisabled) throw new DomainError('PROVISIONING_TEMPORARILY_DISABLED');
  const account = await db.withUser(user.id, (trx) =>
    trx.selectFrom('users').select(['plan', 'subscription_status']).where('id', '=', user.id).executeTakeFirstOrThrow(),
  );
  // An agent gets the tier asked for, else its account's own; an account on no paid plan (an administrator's) the default.
  const plan = text(body.tier) ?? (isPaidPlan(account.plan) ? account.plan : DEFAULT_AGENT_TIER);
  if (!user.isAdmin) {
    const count = await db.withUser(user.id, (trx) =>
      trx
        .selectFrom('agents')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '!=', 'error')
        .executeTakeFirstOrThrow(),
    );
    // The same rule the dashboard states before its wizard opens (`GET /api/dashboard/new-agent`).
    const block = provisioningBlock({
      plan: account.plan,
      subscriptionStatus: account.subscription_status,
      agents: Number(count.n),
      isAdmin: false,
    });
    if (block?.reason === 'paid-plan') throw new DomainError('PAID_PLAN_TO_PROVISION');
    if (block?.reason === 'subscription') throw new DomainError('ACTIVE_SUBSCRIPTION_REQUIRED');
    if (block?.reason === 'agent-limit') throw new DomainError('AGENT_LIMIT_REACHED', { plan: account.plan, limit: block.limit });
    if (!tierWithin(plan, account.plan)) throw new DomainError('TIER_NOT_IN_PLAN', { plan, plan2: account.plan });
  }
  const autoProvision = body.autoProvision === true || body.agentType === 'business';
  const tokens = { telegram: text(body.telegramToken), discord: text(body.discordToken), whatsapp: text(body.whatsappToken) };
  if (!autoProvision && !tokens.telegram && !tokens.discord && !tokens.whatsapp) {
    throw new DomainError('AT_LEAST_ONE_CHANNEL_TOKEN');
  }
  const aiProvider = platformKeyCheck(text(body.aiProvider), text(body.apiKey));
  return { plan, autoProvision, tokens, aiProvider };
}

/**
 * The agent's model key (issue #19): an agent with no key fails every model call, so a named provider needs the
 * owner's key unless the platform gives agents its own for that provider, and `aiProvider: "platform"` ("Platform
 * default") needs a platform key at all; it then stands for the first provider the platform has a key for. No
 * `aiProvider` at all keeps the spec's default (the backend's default provider) as before.
 */
export function platformKeyCheck(
  aiProvider: string | undefined,
  apiKey: string | undefined,
  platformKeys: readonly string[] = AGENT_PLATFORM_KEY_PROVIDERS,
): string | undefined {
  if (aiProvider === PLATFORM_DEFAULT_PROVIDER) {
    if (platformKeys.length === 0) throw new DomainError('PLATFORM_AI_KEY_MISSING');
    return platformKeys[0];
  }
  if (aiProvider && !AI_PROVIDERS.has(aiProvider)) throw new DomainError('AI_PROVIDER_NOT_SELECTABLE', { aiProvider });
  if (aiProvider && !apiKey && !platformKeys.includes(aiProvider)) throw new DomainError('AI_PROVIDER_KEY_REQUIRED', { aiProvider });
  return aiProvider;
}

export type ProvisionResult =
  | {
      success: true;
      userId: string;
      agentId: string;
      subdomain: string;
      url: string | null;
      status: string;
      streamKey: string | null;
      liveStreamId: string | null;
    }
  | { success: true; userId: string; agentId: string; status: 'deploying'; url: string; controlUiUrl: string };

/**
 * Spec §4.15 / §3.2: the agent record exists at once (`provisioning`), the
 * backend deploys it (15 s, then the fallback URL), and the record moves to
 * `running` or `error`. The user record keeps the runtime URL and instance id.
 * A direct deployment answers `deploying`; `watcher` then follows the provider's
 * deployment and moves the record to `running` or `error` in the background.
 */
export async function provisionAgent(
  db: Database,
  backend: BackendClient,
  config: WebConfig,
  user: AuthUser,
  body: ProvisionRequest,
  watcher?: DeploymentWatcher,
): Promise<ProvisionResult> {
  const { plan, autoProvision, tokens, aiProvider } = await admit(db, config, user, body);
  const agentId = newId('agent');
  const name = text(body.name)?.slice(0, 100) ?? 'My agent';
  await db.withUser(user.id, (trx) =>
    trx.insertInto('agents').values({ id: agentId, user_id: user.id, name, status: 'provisioning', plan }).execute(),
  );

  const setStatus = (status: string, extra: { url?: string | null; subdomain?: string | null } = {}) =>
    db.withUser(user.id, (trx) =>
      trx
        .updateTable('agents')
        .set({ status, updated_at: new Date(), ...extra })
        .where('id', '=', agentId)
        .execute(),
    );

  let answer: Awaited<ReturnType<BackendClient['request']>>;
  try {
    answer = await backend.request('/api/deployments', {
      caller: backendCaller(user),
      timeoutMs: 15_000,
      body: {
        agentId,
        name,
        config: {
          ...(tokens.telegram ? { telegramToken: tokens.telegram } : {}),
          ...(tokens.discord ? { discordToken: tokens.discord } : {}),
          ...(tokens.whatsapp ? { whatsappToken: tokens.whatsapp } : {}),
          ...(aiProvider ? { aiProvider } : {}),
          ...(typeof body.apiKey === 'string' ? { apiKey: body.apiKey } : {}),
          autoProvision,
          plan,
        },
      },
    });
  } catch (err) {
    if (!(err instanceof BackendUnavailableError)) {
      await setStatus('error');
      throw err;
    }
    // No backend answered: deploy directly through the hosting provider, when one is configured.
    if (!config.hosting) {
      await setStatus('error');
      throw new DomainError('PROVISIONING_FAILED_BACKEND_UNREACHABLE_NO');
    }
    try {
      const channelTokens = Object.fromEntries(Object.entries(tokens).filter((e): e is [string, string] => Boolean(e[1])));
      const direct = await deployDirect(config.hosting, { agentId, name, channelTokens });
      await db.withUser(user.id, async (trx) => {
        await trx
          .updateTable('agents')
          .set({
            status: 'deploying',
            url: direct.url,
            // Kept for the owner (GET /api/user/runtime): no backend knows this agent's token.
            gateway_token_sealed: sealGatewayToken(config.encryptionKey, agentId, direct.gatewayToken),
            hosting_service_id: direct.serviceId,
            hosting_deployment_id: direct.deploymentId,
            updated_at: new Date(),
          })
          .where('id', '=', agentId)
          .execute();
        await trx.updateTable('users').set({ runtime_url: direct.url, runtime_instance_id: agentId }).where('id', '=', user.id).execute();
      });
      watcher?.watch(direct.deploymentId, ({ status }) => settleDirectDeployment(db, user.id, agentId, status));
      return { success: true, userId: user.id, agentId, status: 'deploying', url: direct.url, controlUiUrl: direct.controlUiUrl };
    } catch (hostingErr) {
      await setStatus('error');
      const reason = hostingErr instanceof Error ? hostingErr.message : 'the hosting provider failed';
      throw new DomainError('PROVISIONING_FAILED_BACKEND_UNREACHABLE', { reason });
    }
  }
  const deployed = answer.body as { subdomain?: string; url?: string | null; status?: string; error?: string };
  if (answer.status >= 400) {
    await setStatus('error');
    const detail = deployed.error ?? `backend answered ${answer.status}`;
    throw new DomainError(answer.status === 503 ? 'PROVISIONING_BACKEND_UNAVAILABLE' : 'PROVISIONING_BACKEND_FAILED', { detail });
  }
  await setStatus('running', { url: deployed.url ?? null, subdomain: deployed.subdomain ?? null });
  await db.withUser(user.id, (trx) =>
    trx
      .updateTable('users')
      .set({ runtime_url: deployed.url ?? null, runtime_instance_id: agentId })
      .where('id', '=', user.id)
      .execute(),
  );
  return {
    success: true,
    userId: user.id,
    agentId,
    subdomain: deployed.subdomain ?? '',
    url: deployed.url ?? null,
    status: 'running',
    // No streaming provider is configured in this version: spec §4.15 answers null stream fields then.
    streamKey: null,
    liveStreamId: null,
  };
}

/**
 * Spec §3.2: a direct deployment's record leaves `deploying` once the provider's deployment settles. Only a record
 * still `deploying` moves, so a record changed meanwhile (deleted, redeployed) is left alone.
 */
export async function settleDirectDeployment(db: Database, userId: string, agentId: string, status: 'running' | 'error'): Promise<void> {
  await db.withUser(userId, (trx) =>
    trx.updateTable('agents').set({ status, updated_at: new Date() }).where('id', '=', agentId).where('status', '=', 'deploying').execute(),
  );
}
