import { createCounterStore } from '@aop/core';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadSummarizerConfig } from './config.js';

const config = loadSummarizerConfig();
const counters = createCounterStore(config.redisUrl);
const app = await buildApp({ config, counters });

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'shutting down');
  await app.close();
  await counters.close();
});

await app.listen({ host: config.host, port: config.port });
