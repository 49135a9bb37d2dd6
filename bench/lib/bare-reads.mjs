// The baseline for the signed-in reads: a bare node:http server doing the same work as the web's GET /api/config and
// GET /api/workflows — find the session by the cookie's hash, then read the same rows — with no framework, no
// row-level-security transaction and no cache, as a hand-written server would. It seeds its own account (the same
// shapes the benchmark gives the web's) and prints `token=<cookie value>` once it listens.
// Usage: node bare-reads.mjs PORT [DATABASE_URL]   (no URL: an embedded PGlite of its own)
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createDatabase, migrate } from '../../packages/db/dist/index.js';
import { CompiledQuery } from 'kysely';
import pg from 'pg';

const [port, databaseUrl] = [Number(process.argv[2]), process.argv[3] || undefined];
const db = createDatabase({ databaseUrl });
await migrate(db);

// Seed: one user with a session, a saved configuration with 10 backups, 5 workflows of 4 nodes.
const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const id = (prefix) => `${prefix}_${randomBytes(16).toString('base64url')}`;
const userId = id('usr');
const token = randomBytes(32).toString('hex');
const k = db.kysely;
await k
  .insertInto('users')
  .values({ id: userId, email: `${userId}@example.com`, name: 'Bare' })
  .execute();
await k
  .insertInto('sessions')
  .values({ id: id('sid'), user_id: userId, token_hash: sha256(token), expires_at: new Date(Date.now() + 86_400_000) })
  .execute();
await k
  .insertInto('agent_configs')
  .values({ user_id: userId, config: JSON.stringify({ logging: { level: 'info' } }) })
  .execute();
for (let i = 0; i < 10; i++) {
  await k
    .insertInto('config_backups')
    .values({ id: id('bkp'), user_id: userId, config: JSON.stringify({ logging: { level: 'debug' }, i }) })
    .execute();
}
for (let w = 0; w < 5; w++) {
  const workflowId = id('wf');
  await k
    .insertInto('workflows')
    .values({ id: workflowId, user_id: userId, name: `workflow ${w}`, description: null, enabled: true })
    .execute();
  for (let n = 0; n < 4; n++) {
    await k
      .insertInto('workflow_nodes')
      .values({
        id: id('wfn'),
        workflow_id: workflowId,
        user_id: userId,
        type: 'action',
        config: '{"step":1}',
        position: '{"x":0,"y":0}',
        seq: n,
      })
      .execute();
  }
}

// Plain queries: pg's pool on a server, the embedded session otherwise (the same one Kysely uses).
let query;
if (databaseUrl) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  query = async (text, params) => (await pool.query(text, params)).rows;
} else {
  query = async (text, params) => (await k.executeQuery(CompiledQuery.raw(text, params))).rows;
}

const SESSION = `select s.expires_at, u.id, u.name, u.email, u.is_admin, u.email_verified_at
  from sessions s join users u on u.id = s.user_id where s.token_hash = $1 and u.disabled_at is null`;

async function sessionUser(req) {
  const cookie = /(?:^|;\s*)service-session=([0-9a-f]{64})/.exec(req.headers.cookie ?? '')?.[1];
  if (!cookie) return null;
  const [row] = await query(SESSION, [sha256(cookie)]);
  return row && new Date(row.expires_at).getTime() > Date.now() ? row : null;
}

const routes = {
  async '/config'(user) {
    const [saved] = await query('select config from agent_configs where user_id = $1', [user.id]);
    const backups = await query('select id, created_at from config_backups where user_id = $1 order by seq desc limit 10', [user.id]);
    return { config: saved?.config ?? {}, backups: backups.map((b) => ({ id: b.id, timestamp: new Date(b.created_at).toISOString() })) };
  },
  async '/workflows'(user) {
    const workflows = await query('select * from workflows where user_id = $1 order by updated_at desc, id', [user.id]);
    const nodes = await query(
      'select id, workflow_id, type, config, position, created_at from workflow_nodes where workflow_id = any($1) order by workflow_id, seq',
      [workflows.map((w) => w.id)],
    );
    return {
      workflows: workflows.map((w) => ({
        id: w.id,
        name: w.name,
        description: w.description,
        enabled: w.enabled,
        createdAt: new Date(w.created_at).toISOString(),
        updatedAt: new Date(w.updated_at).toISOString(),
        nodes: nodes
          .filter((n) => n.workflow_id === w.id)
          .map((n) => ({
            id: n.id,
            type: n.type,
            config: n.config,
            position: n.position,
            createdAt: new Date(n.created_at).toISOString(),
          })),
      })),
    };
  },
};

createServer(async (req, res) => {
  try {
    const route = routes[req.url];
    const user = route && (await sessionUser(req));
    const [status, body] = !route ? [404, { error: 'Not found' }] : !user ? [401, { error: 'Unauthorized' }] : [200, await route(user)];
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  } catch (err) {
    res.writeHead(500);
    res.end(String(err));
  }
}).listen(port, '127.0.0.1', () => console.log(`token=${token}`));
