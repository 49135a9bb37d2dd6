import { listen, type RunningService, tempDataDir, testCounters, testEnv } from '@aop/testing';
import { buildApp } from './app.js';
import { loadSummarizerConfig } from './config.js';

/** A real summarizer on 127.0.0.1 with its own data dir and counters, configured by `env`. */
export async function startSummarizer(env: Record<string, string>): Promise<RunningService> {
  const data = tempDataDir();
  const config = loadSummarizerConfig(testEnv(data.dir, env));
  const counters = testCounters();
  const running = await listen(await buildApp({ config, counters }));
  return {
    ...running,
    async close() {
      await running.close();
      await counters.close();
      data.remove();
    },
  };
}
