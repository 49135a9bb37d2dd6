import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Issue #17, docs/architecture.md: the web service's house rules, checked on the sources so they stay true.

const MODULES = join(import.meta.dirname, '../../apps/web/src/modules');
const folders = readdirSync(MODULES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const filesOf = (folder: string): string[] =>
  readdirSync(join(MODULES, folder), { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'));
const source = (folder: string, file: string) => readFileSync(join(MODULES, folder, file), 'utf8');

/** An import of Fastify or one of its subpaths, static or `import('fastify')` in a type. */
const FASTIFY_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]fastify(?:\/[^'"]*)?['"]/;

/** A query built in place: Kysely's builders or a raw `sql` template (handing `app.db` to a service is not one). */
const SQL = /\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto)\(|\bsql`/;

const ROOT = join(import.meta.dirname, '../..');
/** Every non-test source file of the services and packages, relative to the repository root. */
const sourceFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !/\.test(-support)?\.ts$|\.d\.ts$/.test(name))
    .map((name) => `${dir}/${name}`);
/**
 * The only places that build an answer from a status and message themselves: the shared HTTP layer (a rate limit
 * rule's message), x402's `{ success: false }` reshaping of every answer, and two
 * relays of another program's status and message (the summarizer's page fetch, the workspace program).
 */
const HTTP_ERROR_EDGES = [
  'packages/core/src/errors.ts',
  'packages/core/src/http/rate-limit.ts',
  'apps/web/src/modules/payments/x402.routes.ts',
  'apps/web/src/modules/plugin-gateway/plugin-gateway.routes.ts',
  'apps/summarizer/src/routes/summarizer.ts',
  'packages/provisioner/src/shared/workspace.ts',
];

describe('one error catalogue', () => {
  it('services and routes throw catalogue codes (DomainError); only the listed edges build raw HTTP errors', () => {
    const files = ['apps/web/src', 'apps/backend/src', 'apps/summarizer/src', 'packages'].flatMap((dir) =>
      dir === 'packages' ? readdirSync(join(ROOT, dir)).flatMap((pkg) => sourceFiles(`packages/${pkg}/src`)) : sourceFiles(dir),
    );
    expect(files.length).toBeGreaterThan(200);
    const raw = files.filter((file) => /\bHttpError\b/.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(raw.sort()).toEqual([...HTTP_ERROR_EDGES].sort());
  });
});

describe('the web house plan', () => {
  it('every module folder has its index.ts and is registered in modules/index.ts', () => {
    expect(folders.length).toBeGreaterThan(20);
    const registry = readFileSync(join(MODULES, 'index.ts'), 'utf8');
    for (const folder of folders) {
      expect(filesOf(folder), folder).toContain('index.ts');
      expect(registry, folder).toContain(`from './${folder}/index.js'`);
    }
  });

  it('route files hold no SQL: their queries live in the module services', () => {
    const withSql = folders.flatMap((folder) =>
      filesOf(folder)
        .filter((file) => file.endsWith('.routes.ts') && SQL.test(source(folder, file)))
        .map((file) => `${folder}/${file}`),
    );
    expect(withSql).toEqual([]);
    // The rule sees a query where there is one.
    expect(SQL.test("await trx.selectFrom('agents').select('id')")).toBe(true);
  });

  it('services are free of HTTP plumbing: nothing from Fastify (a logger is @aop/core `Logger`), no route file imported', () => {
    for (const folder of folders) {
      for (const file of filesOf(folder).filter((name) => name.endsWith('.service.ts'))) {
        const text = source(folder, file);
        expect(FASTIFY_IMPORT.test(text), `${folder}/${file}`).toBe(false);
        expect(text, `${folder}/${file}`).not.toMatch(/from '\.\.?\/[^']*\.routes\.js'/);
      }
    }
  });

  it('a module reaches into another module only through its services, never its routes', () => {
    for (const folder of folders) {
      for (const file of filesOf(folder)) {
        expect(source(folder, file), `${folder}/${file}`).not.toMatch(/from '\.\.\/[\w-]+\/[\w-]+\.routes\.js'/);
      }
    }
  });
});

describe('the backend house plan', () => {
  it('route files hold no SQL: their queries live in services/', () => {
    const routes = sourceFiles('apps/backend/src/routes');
    expect(routes.length).toBeGreaterThan(10);
    expect(routes.filter((file) => SQL.test(readFileSync(join(ROOT, file), 'utf8')))).toEqual([]);
    // The rule sees a query where there is one, on the owner connection too.
    expect(SQL.test("await app.db.kysely.updateTable('api_keys').set({ last_used_at: now })")).toBe(true);
  });

  it('services are free of Fastify: they take the db, the host, a logger and the caller, never a request or reply', () => {
    const services = sourceFiles('apps/backend/src/services');
    expect(services.length).toBeGreaterThan(10);
    expect(services.filter((file) => FASTIFY_IMPORT.test(readFileSync(join(ROOT, file), 'utf8')))).toEqual([]);
    // The rule sees an import where there is one.
    expect(FASTIFY_IMPORT.test("import type { FastifyRequest } from 'fastify';")).toBe(true);
    expect(FASTIFY_IMPORT.test("log: import('fastify').FastifyBaseLogger")).toBe(true);
  });
});
