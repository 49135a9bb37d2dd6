import { type IncomingMessage, createServer } from 'node:http';

export interface SocialIdentity {
  fid?: number;
  username?: string;
}

/**
 * A social-identity verification endpoint on 127.0.0.1, speaking the protocol
 * the web service expects at `SOCIAL_VERIFY_URL`: `POST` a JSON body
 * `{ "token": "…" }` and get `200 { "valid": true, "fid", "username" }` for a
 * known token, `200 { "valid": false }` for any other. Anything but a JSON POST
 * with a string `token` is answered 400 (405 for other methods).
 */
export async function startSocialVerifier(known: Record<string, SocialIdentity> = {}): Promise<{
  /** The verification endpoint: `http://127.0.0.1:<port>/verify`. */
  url: string;
  /** Tokens accepted from now on (tests add and revoke them). */
  tokens: Map<string, SocialIdentity>;
  /** Every token presented, in order. */
  received: string[];
  close(): Promise<void>;
}> {
  const tokens = new Map(Object.entries(known));
  const received: string[] = [];
  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };

  const server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || !req.url?.startsWith('/verify')) return answer(405, { error: 'POST /verify only' });
    readBody(req)
      .then((raw) => {
        let token: unknown;
        try {
          token = (JSON.parse(raw) as { token?: unknown }).token;
        } catch {}
        if (!(req.headers['content-type'] ?? '').includes('application/json') || typeof token !== 'string') {
          return answer(400, { error: 'JSON body { token } required' });
        }
        received.push(token);
        const identity = tokens.get(token);
        answer(200, identity ? { valid: true, ...identity } : { valid: false });
      })
      .catch(() => answer(500, { error: 'read failed' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/verify`,
    tokens,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
