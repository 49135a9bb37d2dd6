import { readFileSync, readdirSync } from 'node:fs';
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

/** A query built in place: Kysely's builders or a raw `sql` template (handing `app.db` to a service is not one). */
const SQL = /\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto)\(|\bsql`/;

/** Services still handed a request or reply (sign-in's OAuth flow sets cookies itself); this list only shrinks. */
const SERVICES_WITH_HTTP_PENDING = ['sign-in/oauth-accounts.service.ts'];
/** Imports of another module's routes still to move into that module's service; this list only shrinks. */
const ROUTE_IMPORTS_PENDING = ['wallets/wallets.routes.ts', 'billing/billing.test.ts'];

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

  it('services are free of HTTP plumbing: no request or reply, no route file imported', () => {
    for (const folder of folders) {
      for (const file of filesOf(folder).filter((name) => name.endsWith('.service.ts'))) {
        if (SERVICES_WITH_HTTP_PENDING.includes(`${folder}/${file}`)) continue;
        const text = source(folder, file);
        expect(text, `${folder}/${file}`).not.toMatch(/FastifyRequest|FastifyReply|from '\.\.?\/[^']*\.routes\.js'/);
      }
    }
  });

  it('a module reaches into another module only through its services, never its routes', () => {
    for (const folder of folders) {
      for (const file of filesOf(folder)) {
        if (ROUTE_IMPORTS_PENDING.includes(`${folder}/${file}`)) continue;
        expect(source(folder, file), `${folder}/${file}`).not.toMatch(/from '\.\.\/[\w-]+\/[\w-]+\.routes\.js'/);
      }
    }
  });
});
