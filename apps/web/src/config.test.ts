import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TObject } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { WebEnvSchema } from './config.js';

const MODULES = join(import.meta.dirname, 'modules');

/** Each module's env slices: the `*EnvSchema` exports of `modules/<feature>/<feature>.config.ts`. */
async function moduleSlices(): Promise<{ feature: string; variables: string[] }[]> {
  const slices: { feature: string; variables: string[] }[] = [];
  for (const feature of readdirSync(MODULES).sort()) {
    const file = join(MODULES, feature, `${feature}.config.ts`);
    if (!existsSync(file)) continue;
    const exports = (await import(file)) as Record<string, unknown>;
    const schemas = Object.entries(exports).filter(([name]) => name.endsWith('EnvSchema'));
    expect(schemas, `${feature}.config.ts exports its env slice`).not.toHaveLength(0);
    for (const [, schema] of schemas) slices.push({ feature, variables: Object.keys((schema as TObject).properties) });
  }
  return slices;
}

describe('web configuration: config.ts composes the modules’ env slices (issue #17)', () => {
  it('imports no service', () => {
    const source = readFileSync(join(import.meta.dirname, 'config.ts'), 'utf8');
    const imports = [...source.matchAll(/from '([^']+)'/g)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((path) => path?.endsWith('.service.js'))).toEqual([]);
  });

  it('every module slice’s variables are in the composed schema, each owned by one module', async () => {
    const slices = await moduleSlices();
    expect(slices.map((s) => s.feature)).toContain('demo');
    const composed = Object.keys(WebEnvSchema.properties);
    const owner = new Map<string, string>();
    for (const { feature, variables } of slices) {
      expect(variables, feature).not.toHaveLength(0);
      for (const name of variables) {
        expect(composed, `${name} (${feature})`).toContain(name);
        expect(owner.get(name), `${name} is in ${feature} and ${owner.get(name)}`).toBeUndefined();
        owner.set(name, feature);
      }
    }
  });
});
