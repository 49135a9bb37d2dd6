import { type Static, Type } from '@sinclair/typebox';

/** `GET /api/auth/providers`: which sign-in methods this deployment offers. */
export const Providers = Type.Object({
  idp: Type.Boolean({ description: 'GET /api/auth/idp leads to the identity provider' }),
  codehost: Type.Boolean({ description: 'GET /api/auth/codehost leads to the code-hosting provider' }),
  wallet: Type.Object({
    chainId: Type.Integer({ description: 'chain id a SIWE message for POST /api/wallet-auth must name' }),
    domain: Type.String({ description: 'the SIWE domain it must name' }),
    uri: Type.String({ description: 'the SIWE URI it must name (this service)' }),
  }),
});
export type Providers = Static<typeof Providers>;

/** `GET /api/auth/csrf`. */
export const CsrfToken = Type.Object({ csrfToken: Type.String({ description: '{token}:{signed}' }) });
export type CsrfToken = Static<typeof CsrfToken>;

export const SessionUser = Type.Object({ id: Type.String(), name: Type.String(), email: Type.String(), isAdmin: Type.Boolean() });
export type SessionUser = Static<typeof SessionUser>;

/** `GET /api/auth/session`: null when signed out. */
export const Session = Type.Object({ user: Type.Union([SessionUser, Type.Null()]) });
export type Session = Static<typeof Session>;

/** `GET` and `POST /api/auth/nonce`. */
export const Nonce = Type.Object({ nonce: Type.String({ description: 'EIP-4361 nonce (96 alphanumerics), single use' }) });
export type Nonce = Static<typeof Nonce>;

/** `POST` and `GET /api/auth/token-gating/verify`. */
export const GateResult = Type.Object({
  address: Type.String(),
  allowed: Type.Boolean(),
  balance: Type.String({ description: 'Whole tokens, as a decimal string' }),
  required: Type.String({ description: 'The threshold in whole tokens (GATE_MIN_BALANCE)' }),
  token: Type.String(),
  chainId: Type.Integer(),
});
export type GateResult = Static<typeof GateResult>;

/** `GET` on the social-identity paths: how to call the `POST`. */
export const SocialIdentityEndpoint = Type.Object({
  endpoint: Type.String(),
  method: Type.Literal('POST'),
  description: Type.String(),
  body: Type.Record(Type.String(), Type.String()),
});
export type SocialIdentityEndpoint = Static<typeof SocialIdentityEndpoint>;
