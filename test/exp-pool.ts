import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { connectGateway, restChat } from '@aop/gateway-client';
import { openClawRuntime, PINNED_OPENCLAW_VERSION } from '@aop/provisioner';
import { startFakeLlm } from '@aop/testing';

const t0 = performance.now();
const ms = () => Math.round(performance.now() - t0);
const freePort = () =>
  new Promise<number>((r) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as any).port;
      s.close(() => r(p));
    });
  });
const rt = openClawRuntime(PINNED_OPENCLAW_VERSION);
const dir = await mkdtemp(join(tmpdir(), 'aop-pool-'));
const llm = await startFakeLlm();
const port = await freePort();
const secretsFile = join(dir, 'secrets.json');
const writeSecrets = async (v: object) => {
  await writeFile(secretsFile + '.tmp', JSON.stringify(v), { mode: 0o600 });
  const { rename } = await import('node:fs/promises');
  await rename(secretsFile + '.tmp', secretsFile);
};
const fileRef = (id: string) => ({ source: 'file', provider: 'aop', id });
const warm = {
  baseUrl: `http://127.0.0.1:${port}/v1`,
  apiKey: fileRef('/gatewayToken'),
  api: 'openai-completions',
  models: [
    {
      id: 'openclaw/aop-warm-up-no-such-agent',
      name: 'w',
      reasoning: false,
      input: ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128000,
      maxTokens: 16,
    },
  ],
};
const base = (extra: any = {}) => ({
  gateway: {
    mode: 'local',
    port,
    bind: 'loopback',
    auth: { mode: 'token', token: fileRef('/gatewayToken') },
    http: { endpoints: { chatCompletions: { enabled: true } } },
  },
  secrets: { providers: { aop: { source: 'file', path: secretsFile, mode: 'json' } } },
  models: { mode: 'merge', providers: { 'aop-warm-up': warm, ...(extra.providers ?? {}) } },
  agents: {
    defaults: { workspace: extra.workspace ?? join(dir, 'pool-workspace'), ...(extra.model ? { model: { primary: extra.model } } : {}) },
  },
});
const configPath = join(dir, 'openclaw.json');
await mkdir(join(dir, 'state'), { recursive: true, mode: 0o700 });
await mkdir(join(dir, 'home'), { recursive: true });
await writeSecrets({ gatewayToken: 'T0-pool-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaa' });
await writeFile(configPath, JSON.stringify(base(), null, 2), { mode: 0o600 });
const child = spawn(rt.nodeBin, [rt.entry, 'gateway', 'run', '--port', String(port)], {
  cwd: join(dir, 'home'),
  env: {
    PATH: `/usr/bin:/bin`,
    HOME: join(dir, 'home'),
    TMPDIR: '/tmp/aop-openclaw-cache',
    OPENCLAW_STATE_DIR: join(dir, 'state'),
    OPENCLAW_CONFIG_PATH: configPath,
    OPENCLAW_NO_AUTO_UPDATE: '1',
    OPENCLAW_OFFLINE: '1',
    OPENCLAW_DISABLE_BONJOUR: '1',
    LANG: 'C.UTF-8',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const lines: string[] = [];
child.stdout.on('data', (d) => lines.push(...String(d).split('\n')));
child.stderr.on('data', (d) => lines.push(...String(d).split('\n')));
const url = `http://127.0.0.1:${port}`;
for (;;) {
  try {
    const r = await fetch(`${url}/readyz`);
    if (r.status === 200) break;
  } catch {}
  await new Promise((r) => setTimeout(r, 300));
}
console.log('pool gateway ready', ms());
// warm-up with T0
let s = ms();
const w = await fetch(`${url}/v1/chat/completions`, {
  method: 'POST',
  headers: {
    authorization: 'Bearer T0-pool-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    'content-type': 'application/json',
    'x-openclaw-model': 'aop-warm-up/openclaw/aop-warm-up-no-such-agent',
    'x-openclaw-session-key': 'aop-warm-up',
  },
  body: JSON.stringify({ model: 'openclaw', messages: [{ role: 'user', content: 'warm' }] }),
});
console.log('warm', w.status, ms() - s);
await new Promise((r) => setTimeout(r, 2000));
// ADOPT
const adoptAt = ms();
const T1 = 'T1-customer-token-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
await mkdir(join(dir, 'customer-workspace'), { recursive: true });
await writeSecrets({ gatewayToken: T1, llmApiKey: 'sk-local' });
const conn = await connectGateway({ url: url.replace(/^http/, 'ws'), token: 'T0-pool-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaa' });
await writeFile(
  configPath,
  JSON.stringify(
    base({
      workspace: join(dir, 'customer-workspace'),
      model: 'platform/gpt-4.1-mini',
      providers: {
        platform: {
          baseUrl: llm.url,
          apiKey: fileRef('/llmApiKey'),
          api: 'openai-completions',
          models: [
            {
              id: 'gpt-4.1-mini',
              name: 'gpt-4.1-mini',
              reasoning: false,
              input: ['text'],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow: 128000,
              maxTokens: 4096,
            },
          ],
        },
      },
    }),
    null,
    2,
  ),
  { mode: 0o600 },
);
try {
  console.log(
    'secrets.reload',
    JSON.stringify(await conn.request('secrets.reload', {}, { timeoutMs: 20000 })).slice(0, 200),
    ms() - adoptAt,
  );
} catch (e) {
  console.log('secrets.reload failed', String(e));
}
await conn.close().catch(() => {});
const conn1 = await connectGateway({ url: url.replace(/^http/, 'ws'), token: T1 });
console.log('T1 connection after', ms() - adoptAt);
for (let i = 0; i < 100; i++) {
  const c: any = await conn1.request('config.get', {});
  if (c.appliedConfigHash && c.appliedConfigHash === c.configRevisionHash && JSON.stringify(c.config).includes('customer-workspace')) {
    console.log('config applied after', ms() - adoptAt);
    break;
  }
  await new Promise((r) => setTimeout(r, 100));
}
await conn1.close();
// wait until T1 accepted
for (let i = 0; i < 100; i++) {
  const r = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${T1}` } });
  if (r.status === 200) {
    console.log('T1 accepted after', ms() - adoptAt);
    break;
  }
  await new Promise((r) => setTimeout(r, 200));
}
const old = await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer T0-pool-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaa' } });
console.log('T0 now', old.status);
s = ms();
try {
  const r = await restChat({
    baseUrl: url,
    token: T1,
    messages: [{ role: 'user', content: 'hello customer' }],
    user: 'c1',
    timeoutMs: 60000,
  });
  console.log(
    'first answer',
    r.text,
    ms() - s,
    'since adopt',
    ms() - adoptAt,
    'llm calls',
    llm.requests.length,
    'auth',
    llm.requests.at(-1)?.headers?.authorization,
  );
} catch (e) {
  console.log('chat failed', String(e).slice(0, 300));
}
console.log(lines.filter((l) => /agent model|reload applied/i.test(l)).join('\n'));
child.kill('SIGTERM');
await llm.close();
