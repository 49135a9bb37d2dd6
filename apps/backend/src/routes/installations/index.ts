import { refuse } from '@aop/core/request-schema';
import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { BackendConfig } from '../../config.js';
import { callerBeforeBody, callerId, identityAuth } from '../../plugins/caller.js';
import {
  linkHome,
  listInstallations,
  parseHomeUrl,
  parseName,
  parsePublicKey,
  parseVersion,
  registerHome,
} from '../../services/installations.js';
import { Installation as InstallationSchema, RegisterHomeBody, RegisterLinkBody } from './schemas.js';

const tags = ['installations'];

/** Spec §4.18 "Installations (backend, identity headers)": self-hosted homes linked to the caller's account. */
export async function installationRoutes(app: App, { config }: { config: BackendConfig }): Promise<void> {
  const onRequest = identityAuth(config);

  app.post(
    '/register-home',
    {
      onRequest,
      preValidation: callerBeforeBody,
      config: { invalidBody: refuse('FIELD_REQUIRED', { field: 'name' }) },
      schema: {
        tags,
        description:
          'Registers (or refreshes) a self-hosted home by its Ed25519 key. 201 for a new home, 200 for a known one; `link` carries the challenge and the exact message the home must sign for `/api/register-link` (10 minutes), null once linked.',
        body: RegisterHomeBody,
        response: {
          '2xx': Type.Object({
            installation: InstallationSchema,
            link: Type.Union([Type.Object({ challenge: Type.String(), message: Type.String(), expiresAt: Type.String() }), Type.Null()]),
          }),
        },
      },
    },
    async (request, reply) => {
      const userId = callerId(request);
      const body = request.body;
      const name = parseName(body.name);
      if (body.publicKey === undefined || body.publicKey === null || body.publicKey === '')
        throw new DomainError('FIELD_REQUIRED', { field: 'publicKey' });
      const key = parsePublicKey(body.publicKey);
      const url = parseHomeUrl(body.url);
      const version = parseVersion(body.version);
      const result = await app.db.withUser(userId, (trx) => registerHome(trx, userId, { name, url, version, key }, new Date()));
      return reply.code(result.created ? 201 : 200).send({ installation: result.installation, link: result.link });
    },
  );

  app.post(
    '/register-link',
    {
      onRequest,
      preValidation: callerBeforeBody,
      config: { invalidBody: 'INSTALLATIONID_SIGNATURE_ARE_REQUIRED' },
      schema: {
        tags,
        description:
          'Links a registered home to the account: `signature` is the base64url Ed25519 signature of the `link.message` that `/api/register-home` returned.',
        body: RegisterLinkBody,
        response: { 200: Type.Object({ success: Type.Literal(true), installation: InstallationSchema }) },
      },
    },
    async (request) => {
      const userId = callerId(request);
      const { installationId, signature } = request.body;
      if (installationId.length > 64) throw new DomainError('INSTALLATION_NOT_FOUND');
      const installation = await app.db.withUser(userId, (trx) => linkHome(trx, userId, installationId, signature, new Date()));
      return { success: true as const, installation };
    },
  );

  app.get(
    '/installations',
    {
      onRequest,
      schema: {
        tags,
        description: "The caller's installations, newest first.",
        response: { 200: Type.Object({ installations: Type.Array(InstallationSchema) }) },
      },
    },
    async (request) => {
      const userId = callerId(request);
      return { installations: await app.db.withUser(userId, listInstallations) };
    },
  );
}
