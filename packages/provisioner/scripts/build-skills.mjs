// Bundles the agent skills' scripts (today `skills/underground-bus/send.mjs`) into `dist/skills/<name>/`, each one
// self-contained ESM for plain Node >= 20: the agent's runtime has no node_modules of ours, so the small audited
// libraries it needs (@noble/curves, @noble/hashes, which come with viem) are bundled in with Vite (rolldown) in
// library mode. Run by `npm run build` (root) and `npm run build:skills -w packages/provisioner`; the provisioner calls
// `buildSkills()` itself when the bundle is missing (a checkout that was never built, tests).
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SKILL_SCRIPTS = [{ skill: 'underground-bus', file: 'send.mjs' }];

/** Builds each skill script in memory; returns `{ skill, file, code }`. */
export async function bundleSkills() {
  const { build } = await import('vite');
  const bundles = [];
  for (const { skill, file } of SKILL_SCRIPTS) {
    const output = await build({
      configFile: false,
      root: PACKAGE_DIR,
      logLevel: 'silent',
      publicDir: false,
      build: {
        write: false,
        target: 'node20',
        minify: false,
        sourcemap: false,
        emptyOutDir: false,
        lib: { entry: join(PACKAGE_DIR, 'skills', skill, file), formats: ['es'], fileName: () => file },
        // node: built-ins stay imports; everything else (@noble/*) is bundled.
        rollupOptions: { external: [/^node:/] },
      },
      // Plain Node, not a browser: no `browser` fields, no process.env replacement.
      ssr: { noExternal: true, target: 'node' },
      resolve: { conditions: ['node', 'import', 'default'] },
    });
    const chunks = (Array.isArray(output) ? output : [output]).flatMap((o) => o.output);
    const chunk = chunks.find((c) => c.type === 'chunk' && c.isEntry);
    if (!chunk || chunks.filter((c) => c.type === 'chunk').length !== 1) {
      throw new Error(`bundling ${skill}/${file} did not give exactly one file`);
    }
    bundles.push({ skill, file, code: `#!/usr/bin/env node\n${chunk.code}` });
  }
  return bundles;
}

/** Writes the bundles into `outDir/<skill>/<file>` (atomically: several builds may run at once, e.g. test workers). */
export async function buildSkills(outDir = join(PACKAGE_DIR, 'dist', 'skills')) {
  const written = [];
  for (const { skill, file, code } of await bundleSkills()) {
    const target = join(outDir, skill, file);
    await mkdir(dirname(target), { recursive: true });
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, code, { mode: 0o755 });
      await rename(tmp, target);
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
    written.push(target);
  }
  return written;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const path of await buildSkills(process.argv[2])) console.log(`built ${path}`);
}
