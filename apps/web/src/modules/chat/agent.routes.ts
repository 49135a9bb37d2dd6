import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WebContext } from '../../platform/context.js';
import { requireUser } from '../../platform/http/auth.js';
import { CHAT_RATE_LIMIT, checkMessage, checkSessionKey, restAgentChat } from './agent-chat.service.js';
import { AgentActionBody } from './chat.schemas.js';
import {
  AGENT_ACTIONS,
  agentPanel,
  checkAgentId,
  checkCredentialName,
  checkCredentialValue,
  checkNewSessionKey,
  checkSessionLabel,
  createAgentSession,
  setAgentCredential,
} from './agent-interaction.service.js';
import { updateSkill } from '../skills/skills.service.js';

const MINUTE = 60_000;

/**
 * Saving a channel token or the LLM key restarts the agent's gateway with it: a client gets this many saves a minute
 * (a dashboard needs a handful), so a loop cannot keep an agent restarting.
 */
export const CREDENTIAL_LIMIT_PER_MINUTE = 20;

/** 401 before the body is parsed: an anonymous caller learns nothing about what a valid body is. */
const authenticate = async (request: FastifyRequest) => {
  await requireUser(request);
};

/**
 * Spec §4.18 "Agent interaction": `GET /api/agent` is the dashboard's agent panel in one answer; `POST /api/agent`
 * takes an `action`. Session or API key. The schema checks the action; each action checks its own fields (see
 * `AgentActionBody`), so each bad body gets its own words.
 */
export async function agentInteractionRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart };
  // The `chat` action opens a turn like `POST /api/chat`, so it spends the same per-client budget.
  const chatLimit = app.rateLimit(CHAT_RATE_LIMIT);
  const credentialLimit = app.rateLimit({
    name: 'agent-credential',
    max: CREDENTIAL_LIMIT_PER_MINUTE,
    windowMs: MINUTE,
    message: 'Too many requests',
  });

  app.get(
    '/api/agent',
    {
      onRequest: authenticate,
      schema: {
        tags: ['agent'],
        description:
          'The agent panel: the agent, its gateway health and sessions (at most 10), memory (count and the 10 newest), ' +
          'skills and credentials (names, kinds and times only). `agentId` names one of the caller’s agents.',
        querystring: Type.Object({ agentId: Type.Optional(Type.String({ description: 'one of the caller’s agents' })) }),
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const agentId = checkAgentId(request.query.agentId || undefined);
      return agentPanel(deps, request.log, user, agentId);
    },
  );

  app.post(
    '/api/agent',
    {
      onRequest: authenticate,
      // A body that is not a JSON object has no action to read: said as such, not in the validator's words.
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['agent'],
        description: `Actions: ${AGENT_ACTIONS.join(', ')}.`,
        body: AgentActionBody,
      },
    },
    async (request, reply) => {
      const user = await requireUser(request);
      const body = request.body;
      switch (body.action) {
        case 'chat': {
          await chatLimit(request, reply);
          const message = checkMessage(body.message);
          const sessionKey = checkSessionKey(body.sessionKey);
          const agentId = checkAgentId(body.agentId);
          return restAgentChat(deps, request.log, user, { message, sessionKey, agentId });
        }
        case 'create-session': {
          const sessionKey = checkNewSessionKey(body.sessionKey);
          const label = checkSessionLabel(body.label);
          const agentId = checkAgentId(body.agentId);
          return createAgentSession(deps, request.log, user, { sessionKey, label, agentId });
        }
        case 'update-skill': {
          const { agentId, enabled, config, description } = body;
          return {
            success: true as const,
            skill: await updateSkill(app.db, user.id, body.name, { agentId, enabled, config, description }),
          };
        }
        case 'set-credential': {
          await credentialLimit(request, reply);
          const name = checkCredentialName(body.name);
          const value = checkCredentialValue(body.value);
          const agentId = checkAgentId(body.agentId);
          return setAgentCredential(deps, request.log, user, { name, value, agentId });
        }
      }
    },
  );
}
