import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

/*
 * Each field answers with the message it had when the handler checked it (see `invalidAs` in @aop/core), in the order
 * it was checked. What JSON Schema cannot say stays in the service's `parse*`: trimming and the length of the name,
 * decoding the key, parsing the URL, and null or empty counting as absent.
 */

export const Installation = Type.Object({
  id: Type.String(),
  name: Type.String(),
  url: Type.Union([Type.String(), Type.Null()]),
  publicKey: Type.String({ description: 'base64url of the raw Ed25519 public key' }),
  deviceId: Type.String({ description: 'SHA-256 hex of the raw public key' }),
  version: Type.Union([Type.String(), Type.Null()]),
  status: Type.String({ description: '`pending` until the home signed its challenge, then `linked`' }),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  linkedAt: Type.Union([Type.String(), Type.Null()]),
  lastSeenAt: Type.Union([Type.String(), Type.Null()]),
});

export const RegisterHomeBody = Type.Object({
  name: Type.String({
    pattern: '\\S',
    description: 'trimmed; at most 100 characters',
    ...invalidAs(refuse('FIELD_REQUIRED', { field: 'name' })),
  }),
  // Optional here: a missing key was refused after the name was checked (in code), and so it still is.
  publicKey: Type.Optional(
    orNull(
      Type.String({ description: 'the raw 32-byte Ed25519 public key, base64url or base64', ...invalidAs(refuse('INVALID_PUBLICKEY')) }),
    ),
  ),
  url: Type.Optional(orNull(Type.String({ description: 'http(s), without credentials', ...invalidAs(refuse('INVALID_URL')) }))),
  version: Type.Optional(orNull(Type.String({ ...invalidAs(refuse('INVALID_VERSION')) }))),
});
export type RegisterHomeBody = Static<typeof RegisterHomeBody>;

const linkField = Type.String({ minLength: 1, ...invalidAs(refuse('INSTALLATIONID_SIGNATURE_ARE_REQUIRED')) });

export const RegisterLinkBody = Type.Object({
  installationId: linkField,
  signature: Type.String({ ...linkField, description: 'base64url Ed25519 signature of `link.message`' }),
});
export type RegisterLinkBody = Static<typeof RegisterLinkBody>;
