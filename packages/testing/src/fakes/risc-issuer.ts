import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { type CryptoKey, type JWK, type JWTPayload, SignJWT, exportJWK, generateKeyPair } from 'jose';

export interface RiscIssuerOptions {
  /** Also publish `/.well-known/risc-configuration`, naming its own key-set path (`/risc/jwks`). */
  riscConfiguration?: boolean;
}

export interface SecurityEventClaims {
  /** `events` claim: event type URI → event body (`subject`, `reason`, …). */
  events: Record<string, Record<string, unknown>>;
  /** Defaults to the issuer's URL; `null` leaves the claim out. */
  iss?: string | null;
  aud?: string | string[] | null;
  /** A fresh UUID by default; `null` leaves the claim out. */
  jti?: string | null;
  /** Seconds since the epoch; now by default. */
  iat?: number;
  exp?: number;
  sub_id?: Record<string, unknown>;
  [claim: string]: unknown;
}

export interface SecurityEventSignOptions {
  /** Another private key (a forged signature); the issuer's own by default. */
  key?: CryptoKey;
  /** The `kid` header; the issuer's key id by default, `null` for none. */
  kid?: string | null;
  /** The `typ` header; `secevent+jwt` by default. */
  typ?: string;
}

/**
 * An identity provider's account-protection side on 127.0.0.1, speaking the
 * real protocol: OpenID discovery (`/.well-known/openid-configuration` with
 * `issuer` and `jwks_uri`), a JWKS with one RS256 key, and security event
 * tokens (RFC 8417 SETs, `typ: secevent+jwt`) signed with that key. It counts
 * every fetch so tests can see the receiver's key cache at work.
 */
export interface RiscIssuer {
  /** The issuer identifier, also its base URL: `http://127.0.0.1:<port>`. */
  url: string;
  kid: string;
  publicJwk: JWK;
  /** Requests served per path (`/.well-known/openid-configuration`, `/jwks`, …). */
  fetches: Record<string, number>;
  readonly jwksFetches: number;
  /** A signed SET; `aud` must be given unless `defaultAudience` was set. */
  sign(claims: SecurityEventClaims, options?: SecurityEventSignOptions): Promise<string>;
  /** The audience `sign` uses when the claims give none. */
  defaultAudience: string | undefined;
  close(): Promise<void>;
}

export async function startRiscIssuer(options: RiscIssuerOptions = {}): Promise<RiscIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const kid = `risc-${randomUUID().slice(0, 8)}`;
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const fetches: Record<string, number> = {};
  let base = '';

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', base).pathname;
    fetches[path] = (fetches[path] ?? 0) + 1;
    if (req.method !== 'GET') return json(res, 405, { error: 'method_not_allowed' });
    switch (path) {
      case '/.well-known/openid-configuration':
        return json(res, 200, {
          issuer: base,
          jwks_uri: `${base}/jwks`,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        });
      case '/.well-known/risc-configuration':
        if (!options.riscConfiguration) return json(res, 404, { error: 'not_found' });
        // As the provider publishes it: its issuer with a trailing slash.
        return json(res, 200, {
          issuer: `${base}/`,
          jwks_uri: `${base}/risc/jwks`,
          delivery_methods_supported: ['https://schemas.openid.net/secevent/risc/delivery-method/push'],
        });
      case '/jwks':
      case '/risc/jwks':
        return json(res, 200, { keys: [publicJwk] });
      default:
        return json(res, 404, { error: 'not_found' });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  base = `http://127.0.0.1:${port}`;

  const issuer: RiscIssuer = {
    url: base,
    kid,
    publicJwk,
    fetches,
    get jwksFetches() {
      return (fetches['/jwks'] ?? 0) + (fetches['/risc/jwks'] ?? 0);
    },
    defaultAudience: undefined,
    async sign(claims, signOptions = {}) {
      const { iss, aud, jti, iat, ...rest } = claims;
      const payload: JWTPayload = { ...rest };
      if (iss !== null) payload.iss = iss ?? base;
      const audience = aud === undefined ? issuer.defaultAudience : aud;
      if (audience !== null && audience !== undefined) payload.aud = audience;
      if (jti !== null) payload.jti = jti ?? randomUUID();
      payload.iat = iat ?? Math.floor(Date.now() / 1000);
      const header: { alg: string; typ: string; kid?: string } = { alg: 'RS256', typ: signOptions.typ ?? 'secevent+jwt' };
      const keyId = signOptions.kid === undefined ? kid : signOptions.kid;
      if (keyId !== null) header.kid = keyId;
      return new SignJWT(payload).setProtectedHeader(header).sign(signOptions.key ?? privateKey);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
  return issuer;
}
