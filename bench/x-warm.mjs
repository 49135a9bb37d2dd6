// Throwaway: does a warm-up turn during a pause take the 2-4.5 s off the next turn? (delete after)
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalAgentHost } from '../packages/provisioner/dist/local/host.js';
import { warmUpGateway } from '../packages/provisioner/dist/shared/warm-up.js';
import { connectGateway } from '../packages/gateway-client/dist/index.js';
import { startFakeLlm } from '../packages/testing/dist/fakes/llm.js';

const llm = await startFakeLlm();
const work = mkdtempSync(join(tmpdir(), 'aop-x-warm-'));
const host = new LocalAgentHost({ dataDir: join(work, 'data'), encryptionKey: randomBytes(32), warmPool: 0 });
const agentId = 'xwarm';
const gatewayToken = randomBytes(24).toString('base64url');
await host.create({
  agentId,
  userId: 'usr_x',
  plan: 'solo',
  config: {},
  gatewayToken,
  llm: { baseUrl: llm.url, apiKey: 'k', model: 'fake-1' },
});
const ready = await host.waitUntilReady(agentId, { timeoutMs: 240_000 });
const turn = async (text) => {
  const t = performance.now();
  const res = await fetch(`${ready.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gatewayToken}`, 'content-type': 'application/json', 'x-openclaw-session-key': 'agent:main:x' },
    body: JSON.stringify({ model: 'openclaw/main', messages: [{ role: 'user', content: text }] }),
  });
  await res.text();
  return Math.round(performance.now() - t);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const warm = () =>
  warmUpGateway({
    baseUrl: ready.url,
    token: gatewayToken,
    timeoutMs: 60_000,
    connect: () => connectGateway({ url: ready.url.replace(/^http/, 'ws'), token: gatewayToken }),
  });
console.log('first', await turn('hello'), 'second', await turn('again'));
for (let round = 0; round < 3; round++) {
  await sleep(75_000);
  console.log(`round ${round}: after 75 s pause, plain turn`, await turn(`plain ${round}`));
  await sleep(70_000);
  const w = await warm();
  await sleep(4_000);
  console.log(`round ${round}: after 70 s pause, warm-up ${w.ms} ms (${w.outcome}), 4 s later turn`, await turn(`warmed ${round}`));
}
await host.shutdown();
await llm.close?.();
process.exit(0);
