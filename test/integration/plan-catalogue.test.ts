import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Issue #17: packages/core/src/plans.ts is the only plan table. Each consumer's own tests check its behaviour for
// every tier against the catalogue (web: limits, prices, features, provisioning, tool profile; backend: plan
// middleware, fleet roles; docker and kubernetes hosts: container sizes). This guard covers what those cannot see,
// the dashboard included: a table keyed by plan names brought back anywhere in the sources.

const ROOT = join(import.meta.dirname, '../..');
const CATALOGUE = 'packages/core/src/plans.ts';
/** Plan names no other code has a reason to spell (`label`, `network`, `free`… are ordinary words). */
const TIER_NAME = /(['"`])(solo|collective|starter|enterprise|white_glove)\1|\b(solo|collective|starter|enterprise|white_glove)\s*:/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sources(path);
    return /\.(ts|tsx|mjs)$/.test(entry.name) && !/\.test\.tsx?$|\.test-support\.ts$/.test(entry.name) ? [path] : [];
  });
}

/** Comments may explain plans in prose (`solo:29,…` is PLAN_PRICES_GBP's format); only code counts. */
const withoutComments = (source: string) => source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

describe('one plan catalogue', () => {
  it('no source but the catalogue names two or more tiers in code', () => {
    const files = ['apps', 'packages'].flatMap((top) =>
      readdirSync(join(ROOT, top)).flatMap((name) => {
        const src = join(ROOT, top, name, 'src');
        try {
          return sources(src);
        } catch {
          return [];
        }
      }),
    );
    expect(files.some((f) => f.includes('apps/dashboard/src/'))).toBe(true);
    const tables: Record<string, string[]> = {};
    for (const file of files) {
      const path = relative(ROOT, file);
      if (path === CATALOGUE) continue;
      const names = new Set([...withoutComments(readFileSync(file, 'utf8')).matchAll(TIER_NAME)].map((m) => m[2] ?? m[3] ?? ''));
      if (names.size >= 2) tables[path] = [...names];
    }
    expect(tables).toEqual({});
    // The guard sees a table where there is one.
    const catalogue = withoutComments(readFileSync(join(ROOT, CATALOGUE), 'utf8'));
    expect(new Set([...catalogue.matchAll(TIER_NAME)].map((m) => m[2] ?? m[3])).size).toBe(5);
  });
});
