import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const COMPRESSIBLE = /\.(js|css|html|svg|json)$/;

/**
 * Writes `.br` and `.gz` beside every text asset once the bundle is on disk: the web service sends them as they
 * are (`preCompressed`), so no request pays for compression and browsers get the smallest file they accept.
 */
function precompress(): Plugin {
  return {
    name: 'aop-precompress',
    apply: 'build',
    writeBundle(options) {
      const walk = (dir: string): string[] =>
        readdirSync(dir).flatMap((name) => {
          const path = join(dir, name);
          return statSync(path).isDirectory() ? walk(path) : [path];
        });
      for (const file of walk(options.dir!).filter((f) => COMPRESSIBLE.test(f))) {
        const body = readFileSync(file);
        writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
        writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
      }
    },
  };
}

// `npm run dev -w apps/dashboard` serves the UI with hot reload and sends /api to the web service (npm start).
export default defineConfig({
  plugins: [react(), precompress()],
  resolve: {
    // The shared modules the UI bundles: the plan catalogue (plan names) and the schedule parser (the cron form checks
    // expressions as the server does). Each is read from its source, which imports nothing: the bundle can never take
    // in @aop/core's Node-only index, nor a stale dist build.
    alias: {
      // The agent state machine: which lifecycle actions are valid in each state, and why the others are not.
      '@aop/core/agent-state': fileURLToPath(new URL('../../packages/core/src/agent-state.ts', import.meta.url)),
      '@aop/core/plans': fileURLToPath(new URL('../../packages/core/src/plans.ts', import.meta.url)),
      '@aop/core/schedule-expression': fileURLToPath(new URL('../../packages/core/src/schedule-expression.ts', import.meta.url)),
      // The API client and its types, generated from the web service's OpenAPI document (no build needed).
      '@aop/sdk': fileURLToPath(new URL('../../packages/sdk/src/index.ts', import.meta.url)),
    },
  },
  build: {
    outDir: process.env.DASHBOARD_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    // Hashed file names under /assets: the web service serves them as immutable.
    assetsDir: 'assets',
    sourcemap: false,
  },
  server: {
    proxy: { '/api': { target: process.env.WEB_URL ?? 'http://127.0.0.1:3000', changeOrigin: false } },
  },
});
