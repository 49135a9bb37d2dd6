import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { requireUser } from '../../platform/http/auth.js';
import { backendPath, relayJson } from '../../platform/clients/backend-proxy.js';
import type { AuthUser } from '../../platform/sessions.js';
import { AgentConfigBackup, AgentConfigView, RestoredAgentConfig, SavedAgentConfig } from './agent-config.schemas.js';
import { parseConfigInput } from './agent-config.service.js';
import { requireCallersAgent } from '../../platform/owned-agent.js';

const Params = Type.Object({ id: Type.String({ maxLength: 64 }) });
/** The backend's route for one agent's configuration (the same path). */
const CONFIG = '/api/agents/:id/config';

// The fields are checked after the agent is found among the caller's (404 otherwise): a type in the schema would answer
// 400 for someone else's agent, so they stay untyped here and are checked in the handler.
const ConfigBody = Type.Object({
  config: Type.Optional(Type.Unknown({ description: 'the agent configuration: an object, or a string of JSON holding one' })),
});
const RestoreBody = Type.Object({ backupId: Type.Optional(Type.Unknown({ description: 'the id of one of the agent’s backups' })) });

/**
 * One agent's configuration (spec §4.15 `GET/PUT /api/agents/:id/config`; issue #19 "Configuration is per agent"):
 * kept by the backend, which backs up the configuration each save replaces (10 per agent, as §4.2 does for the
 * account) and has the agent's host apply it. The web checks the caller owns the agent and the configuration's known
 * keys (the same rules as `POST /api/config`), then relays. The response schemas describe the backend's answers for
 * the OpenAPI document; the relayed JSON text is sent as it came, never re-serialized through them.
 */
export async function agentConfigRoutes(app: App): Promise<void> {
  async function owner(request: FastifyRequest, agentId: string): Promise<AuthUser> {
    const user = await requireUser(request);
    await requireCallersAgent(app.db, user.id, agentId);
    return user;
  }

  app.get(
    '/api/agents/:id/config',
    { schema: { tags: ['agents'], params: Params, response: { 200: AgentConfigView } } },
    async (request, reply) => {
      const user = await owner(request, request.params.id);
      return relayJson(app.backend, request, reply, { method: 'GET', path: backendPath(CONFIG, request.params), user });
    },
  );

  app.put(
    '/api/agents/:id/config',
    {
      config: { invalidBody: 'INVALID_CONFIG_OBJECT' },
      schema: { tags: ['agents'], params: Params, body: ConfigBody, response: { 200: SavedAgentConfig } },
    },
    async (request, reply) => {
      const user = await owner(request, request.params.id);
      const config = parseConfigInput(request.body.config);
      return relayJson(app.backend, request, reply, { method: 'PUT', path: backendPath(CONFIG, request.params), user, body: { config } });
    },
  );

  // One backup's contents, so the dashboard can show what restoring it would change (as `/api/config/backups/:id`).
  app.get(
    '/api/agents/:id/config/backups/:backupId',
    {
      schema: {
        tags: ['agents'],
        params: Type.Object({ ...Params.properties, backupId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: AgentConfigBackup },
      },
    },
    async (request, reply) => {
      const user = await owner(request, request.params.id);
      return relayJson(app.backend, request, reply, {
        method: 'GET',
        path: backendPath(`${CONFIG}/backups/:backupId`, request.params),
        user,
      });
    },
  );

  // Restores a backup: the configuration it replaces is backed up first, and the agent's host applies the restored one.
  app.post(
    '/api/agents/:id/config/restore',
    {
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: { tags: ['agents'], params: Params, body: RestoreBody, response: { 200: RestoredAgentConfig } },
    },
    async (request, reply) => {
      const user = await owner(request, request.params.id);
      const { backupId } = request.body;
      if (typeof backupId !== 'string' || backupId === '') throw new DomainError('MISSING_BACKUPID');
      // No backup id is that long: it cannot be on record.
      if (backupId.length > 100) throw new DomainError('BACKUP_NOT_FOUND');
      return relayJson(app.backend, request, reply, {
        method: 'POST',
        path: backendPath(`${CONFIG}/restore`, request.params),
        user,
        body: { backupId },
      });
    },
  );
}
