import { type App, DomainError, parseEncryptionKey } from '@aop/core';
import { refuse } from '@aop/core/request-schema';
import type { AgentHost } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import {
  createEvent,
  createSplit,
  createWallet,
  listEvents,
  parseEventInput,
  parseSplitInput,
  requiredAgentId,
  walletBalance,
} from '../../services/underground.js';
import { syncWalletEnv } from '../../services/agent-wallet-env.js';
import { type AgentMessage, removeWebhook, sendBusMessage, setWebhook } from '../../services/underground-bus.js';
import { checkWebhookUrl } from '../../services/underground-delivery.js';
import { AgentMessageBody, EventBody, SplitBody, WalletBody, WebhookBody } from './schemas.js';

export interface UndergroundRoutesOptions {
  config: BackendConfig;
  /** Where agents run: a new wallet's key is handed to its agent there. Absent when provisioning is not configured. */
  host?: AgentHost;
}

/** A loose email check: the web service signs what it sends; this only refuses empty or obviously broken values. */
const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+$/;

/**
 * Spec §4.11: both `x-user-id` and `x-user-email` are required (401), after the internal key and the
 * signature check of the user context (spec §5). The user id comes only from here, never from a body or query.
 */
function callerId(request: FastifyRequest): string {
  const ctx = request.userContext;
  if (!ctx || ctx.userId === 'anonymous' || !ctx.email || !EMAIL_FORMAT.test(ctx.email)) throw new DomainError('USER_CONTEXT_REQUIRED');
  return ctx.userId;
}

/**
 * Underground (spec §4.11, under `/api/underground`): the agent-to-agent bus (its own signature auth), and events,
 * wallets, splits and agents' bus webhooks for the calling user (internal key + signed user context; the agent named
 * must be the caller's, else 403).
 */
export async function undergroundRoutes(app: App, { config, host }: UndergroundRoutesOptions): Promise<void> {
  const encryptionKey = parseEncryptionKey(config.encryptionKey);

  // The bus authenticates each message by its sending agent's wallet signature; no internal key or user context.
  app.post(
    '/bus/send',
    {
      config: { invalidBody: 'MESSAGEID_ACTION_SIGNATURE_ARE_REQUIRED' },
      schema: {
        tags: ['underground'],
        summary: 'Send an agent-to-agent message',
        description:
          '`AgentMessage`: `messageId`, `action`, `signature` (EIP-191 signature by the sending agent’s wallet over the canonical JSON of the message without `signature`), optional `fromAgentId`, `toAgentId`, `payload`. `BOOKING_*` actions negotiate a booking, `AMPLIFY_*` fan out to `payload.targets`.',
        body: AgentMessageBody,
      },
    },
    // The schema held `signature` to 0x and hex digits.
    async (request) => sendBusMessage({ db: app.db, config, encryptionKey, clock: app.clock }, request.body as AgentMessage),
  );

  await app.register(async (user: App) => {
    user.addHook('onRequest', requireInternalKey(config.internalApiKey));
    user.addHook('onRequest', verifyUserContext(config.userContextSecret));
    // Before the body is read: a caller without a full user context gets 401, whatever it sent.
    user.addHook('onRequest', async (request) => {
      callerId(request);
    });

    user.get(
      '/events',
      { schema: { tags: ['underground'], summary: 'Events of the user’s agents, newest event_date first' } },
      async (request) => listEvents(app.db, callerId(request)),
    );

    user.post(
      '/events',
      {
        config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) },
        schema: { tags: ['underground'], summary: 'Create an event', body: EventBody },
      },
      async (request, reply) => {
        const userId = callerId(request);
        const event = await createEvent(app.db, userId, parseEventInput(request.body));
        return reply.code(201).send(event);
      },
    );

    user.post(
      '/wallets',
      {
        config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) },
        schema: { tags: ['underground'], summary: 'Create the agent’s wallet (one per agent)', body: WalletBody },
      },
      async (request, reply) => {
        const userId = callerId(request);
        const agentId = requiredAgentId(request.body.agentId);
        const { wallet, created } = await createWallet(app.db, encryptionKey, userId, agentId);
        // The agent signs its own bus messages: its runtime gets the key (an existing wallet too, if it lacks it).
        // The wallet stands either way; an agent not reached now gets the key at its next deployment or repair.
        if (host) {
          await syncWalletEnv({ db: app.db, encryptionKey, config }, host, userId, agentId).catch((err: unknown) => {
            request.log.warn(
              { agentId, reason: err instanceof Error ? err.message : String(err) },
              'handing the wallet to the agent failed',
            );
          });
        }
        return reply.code(created ? 201 : 200).send(wallet);
      },
    );

    user.get(
      '/wallets/:address/balance',
      {
        schema: {
          tags: ['underground'],
          summary: 'USDC balance of one of the user’s agent wallets',
          params: Type.Object({ address: Type.String() }),
        },
      },
      async (request) => walletBalance(app.db, config.underground, callerId(request), request.params.address, request.log),
    );

    user.post(
      '/splits',
      {
        config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'agentId' }) },
        schema: { tags: ['underground'], summary: 'Record a royalty split', body: SplitBody },
      },
      async (request) => {
        const userId = callerId(request);
        const splitId = await createSplit(app.db, userId, parseSplitInput(request.body));
        return { success: true, splitId, status: 'completed' as const };
      },
    );

    const AgentParams = Type.Object({ agentId: Type.String() });

    // Where the bus delivers an agent's messages. The secret that signs deliveries is shown once, here.
    user.put(
      '/agents/:agentId/webhook',
      {
        config: { invalidBody: 'URL_NOT_HTTP' },
        schema: { tags: ['underground'], summary: 'Set the agent’s bus webhook', params: AgentParams, body: WebhookBody },
      },
      async (request) => {
        const userId = callerId(request);
        const agentId = requiredAgentId(request.params.agentId);
        const url = checkWebhookUrl(request.body.url, config.underground.webhook.allowPrivate);
        const secret = await setWebhook(app.db, encryptionKey, userId, agentId, url);
        return { agentId, url, secret };
      },
    );

    user.delete(
      '/agents/:agentId/webhook',
      { schema: { tags: ['underground'], summary: 'Remove the agent’s bus webhook', params: AgentParams } },
      async (request) => {
        const userId = callerId(request);
        const agentId = requiredAgentId(request.params.agentId);
        await removeWebhook(app.db, userId, agentId);
        return { success: true, agentId };
      },
    );
  });
}
