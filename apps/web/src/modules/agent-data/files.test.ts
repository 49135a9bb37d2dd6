import { newId } from '@aop/core';
import { type TestResponse, request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestWeb, startWeb } from '../../web.test-support.js';
import { FILE_PATH_MAX, FILE_PATH_PATTERN, isValidFilePath } from './files.service.js';

// Spec §4.18 Agent interaction: GET, POST, DELETE /api/files (a workspace per agent).
describe('files', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(async () => {
    await web?.close();
  });

  const url = (query = '') => `${web.url}/api/files${query}`;
  const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;
  const get = (cookie: string, params: Record<string, string>) => request(url(q(params)), { headers: { cookie } });
  const save = (cookie: string, json: unknown) => request(url(), { method: 'POST', headers: { cookie }, json });
  const remove = (cookie: string, params: Record<string, string>) => request(url(q(params)), { method: 'DELETE', headers: { cookie } });
  const expectError = (res: TestResponse, status: number, error: string) => {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error });
  };

  async function userWithAgent() {
    const user = await web.signIn();
    const agentId = newId('agent');
    await web.database.db.kysely.insertInto('agents').values({ id: agentId, user_id: user.userId, name: 'Agent' }).execute();
    return { ...user, agentId };
  }

  it('401 without a session on every method', async () => {
    expectError(await request(url('?agentId=a')), 401, 'Unauthorized');
    expectError(await request(url(), { method: 'POST', json: { agentId: 'a', path: 'x', content: '' } }), 401, 'Unauthorized');
    expectError(await request(url('?agentId=a&path=x'), { method: 'DELETE' }), 401, 'Unauthorized');
  });

  it('400 agentId is required on every method', async () => {
    const { cookie } = await web.signIn();
    expectError(await get(cookie, {}), 400, 'agentId is required');
    expectError(await get(cookie, { path: 'a.txt' }), 400, 'agentId is required');
    expectError(await request(url(), { method: 'POST', headers: { cookie } }), 400, 'agentId is required');
    expectError(await save(cookie, { path: 'a.txt', content: 'x' }), 400, 'agentId is required');
    expectError(await save(cookie, { agentId: '  ', path: 'a.txt', content: 'x' }), 400, 'agentId is required');
    expectError(await remove(cookie, { path: 'a.txt' }), 400, 'agentId is required');
  });

  it('creates (201), reads, replaces (200) and lists files sorted by path with their UTF-8 size', async () => {
    const { cookie, agentId } = await userWithAgent();
    const created = await save(cookie, { agentId, path: 'notes/todo.md', content: 'héllo' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ file: { path: 'notes/todo.md', size: 6, updatedAt: expect.any(String) } });

    const read = await get(cookie, { agentId, path: 'notes/todo.md' });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ file: { path: 'notes/todo.md', content: 'héllo', size: 6, updatedAt: created.body.file.updatedAt } });

    const replaced = await save(cookie, { agentId, path: 'notes/todo.md', content: '' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.file).toMatchObject({ path: 'notes/todo.md', size: 0 });
    expect(Date.parse(replaced.body.file.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.file.updatedAt));
    expect((await get(cookie, { agentId, path: 'notes/todo.md' })).body.file.content).toBe('');

    for (const path of ['src/b.ts', 'README.md', 'src/a.ts', 'a.txt'])
      expect((await save(cookie, { agentId, path, content: path })).status).toBe(201);
    const listed = await get(cookie, { agentId });
    expect(listed.status).toBe(200);
    expect(listed.body.files.map((f: { path: string }) => f.path)).toEqual(['README.md', 'a.txt', 'notes/todo.md', 'src/a.ts', 'src/b.ts']);
    expect(listed.body.files[0]).toEqual({ path: 'README.md', size: 9, updatedAt: expect.any(String) });
    expect(await rowCount(agentId)).toBe(5);
  });

  const rowCount = async (agentId: string) =>
    Number(
      (
        await web.database.db.kysely
          .selectFrom('agent_files')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('agent_id', '=', agentId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('each agent has its own workspace', async () => {
    const { cookie, userId, agentId } = await userWithAgent();
    const second = newId('agent');
    await web.database.db.kysely.insertInto('agents').values({ id: second, user_id: userId, name: 'Second' }).execute();
    await save(cookie, { agentId, path: 'same.txt', content: 'one' });
    await save(cookie, { agentId: second, path: 'same.txt', content: 'two' });
    expect((await get(cookie, { agentId, path: 'same.txt' })).body.file.content).toBe('one');
    expect((await get(cookie, { agentId: second, path: 'same.txt' })).body.file.content).toBe('two');
    expect((await get(cookie, { agentId: 'agt_none' })).body).toEqual({ files: [] });
  });

  it('400 Invalid path for absolute, parent, empty-segment, backslash, control-character or over-long paths', async () => {
    const { cookie, agentId } = await userWithAgent();
    const bad: unknown[] = [
      '',
      '/etc/passwd',
      '..',
      '../x',
      'a/../../b',
      'a/..',
      './a',
      'a/./b',
      'a//b',
      'a/',
      'a\\b',
      'a\nb',
      'x'.repeat(513),
      5,
      null,
    ];
    for (const path of bad) {
      expectError(await save(cookie, { agentId, path, content: 'x' }), 400, 'Invalid path');
      if (typeof path === 'string' && path !== '') {
        expectError(await get(cookie, { agentId, path }), 400, 'Invalid path');
        expectError(await remove(cookie, { agentId, path }), 400, 'Invalid path');
      }
    }
    expectError(await save(cookie, { agentId, content: 'x' }), 400, 'Invalid path');
    // A NUL is refused before any route sees it, in the body as in the query: the shared rule's message.
    expectError(await save(cookie, { agentId, path: 'a\u0000b', content: 'x' }), 400, 'Invalid characters in request');
    expectError(await get(cookie, { agentId, path: 'a\u0000b' }), 400, 'Invalid characters in request');
    expectError(await remove(cookie, { agentId, path: 'a\u0000b' }), 400, 'Invalid characters in request');
    expect(await rowCount(agentId)).toBe(0);
    // Dots inside a name are fine, and so are 512 characters.
    for (const path of ['..hidden/.env', 'a..b', `d/${'x'.repeat(510)}`])
      expect((await save(cookie, { agentId, path, content: 'ok' })).status).toBe(201);
  });

  it('the body schema answers each field’s own message, in the order agentId, path, content, missing or not', async () => {
    const { cookie, agentId } = await userWithAgent();
    expectError(await save(cookie, { agentId: 5 }), 400, 'agentId is required');
    expectError(await save(cookie, { agentId: null, path: '../x', content: 5 }), 400, 'agentId is required');
    expectError(await save(cookie, { agentId, path: '../x' }), 400, 'Invalid path');
    expectError(await save(cookie, { agentId, content: 5 }), 400, 'Invalid path');
    expectError(await save(cookie, { agentId, path: ['a.txt'], content: 'x' }), 400, 'Invalid path');
    expectError(await save(cookie, { agentId, path: 'a.txt' }), 400, 'content is required');
    // Blank is "required" however long it is; lengths are UTF-16 units, as String.length counts them.
    expectError(await save(cookie, { agentId: ' '.repeat(201), path: 'a.txt', content: 'x' }), 400, 'agentId is required');
    expectError(await save(cookie, { agentId: 'a'.repeat(201), path: '../x', content: 'x' }), 400, 'Invalid agentId');
    expectError(await save(cookie, { agentId: '😀'.repeat(101), path: 'a.txt', content: 'x' }), 400, 'Invalid agentId');
    expectError(await save(cookie, { agentId, path: '😀'.repeat(257), content: 'x' }), 400, 'Invalid path');
    expect((await save(cookie, { agentId, path: '😀'.repeat(256), content: 'x' })).status).toBe(201);
  });

  it('the body’s path pattern and isValidFilePath (the query’s check) agree', () => {
    const pattern = new RegExp(FILE_PATH_PATTERN, 'u');
    const viaSchema = (path: string) => path.length > 0 && [...path].length <= FILE_PATH_MAX && pattern.test(path);
    const pieces = ['a', '.', '..', '/', '\\', '\n', '\u007f', '\u001f', ' ', 'é', '😀', '\u2028'];
    const samples = ['', 'a', '.a', 'a.', '...', 'a/...', '.a/..b', '/a', 'a/', 'a//b', './a', 'a/.', 'a/../b', 'x'.repeat(512)];
    // Every string of up to four pieces.
    let layer = [''];
    for (let n = 0; n < 4; n++) {
      layer = layer.flatMap((head) => pieces.map((piece) => head + piece));
      samples.push(...layer);
    }
    expect(samples.filter((path) => viaSchema(path) !== isValidFilePath(path))).toEqual([]);
    expect(samples.filter((path) => isValidFilePath(path)).length).toBeGreaterThan(1000);
  });

  it('400 for missing content or more than 1,000,000 bytes; 413 for a body over 1 MiB', async () => {
    const { cookie, agentId } = await userWithAgent();
    for (const content of [undefined, 5, null, ['a']]) {
      expectError(await save(cookie, { agentId, path: 'a.txt', content }), 400, 'content is required');
    }
    // 500,001 two-byte characters: under the body limit, over the content limit.
    expectError(
      await save(cookie, { agentId, path: 'big.txt', content: 'é'.repeat(500_001) }),
      400,
      'content must be at most 1000000 bytes',
    );
    const max = await save(cookie, { agentId, path: 'max.txt', content: 'x'.repeat(1_000_000) });
    expect(max.status).toBe(201);
    expect(max.body.file.size).toBe(1_000_000);
    expectError(await save(cookie, { agentId, path: 'huge.txt', content: 'x'.repeat(1_100_000) }), 413, 'Request body too large');
  });

  it('404 Agent not found when saving to an agent the caller does not have', async () => {
    const { cookie } = await web.signIn();
    expectError(await save(cookie, { agentId: 'agt_missing', path: 'a.txt', content: 'x' }), 404, 'Agent not found');
  });

  it('GET one unknown file: 404 File not found; DELETE: { success: true } then 404; 400 path is required', async () => {
    const { cookie, agentId } = await userWithAgent();
    expectError(await get(cookie, { agentId, path: 'nope.txt' }), 404, 'File not found');
    await save(cookie, { agentId, path: 'gone.txt', content: 'bye' });
    await save(cookie, { agentId, path: 'kept.txt', content: 'stay' });
    expectError(await remove(cookie, { agentId }), 400, 'path is required');
    const res = await remove(cookie, { agentId, path: 'gone.txt' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expectError(await get(cookie, { agentId, path: 'gone.txt' }), 404, 'File not found');
    expectError(await remove(cookie, { agentId, path: 'gone.txt' }), 404, 'File not found');
    expect((await get(cookie, { agentId })).body.files.map((f: { path: string }) => f.path)).toEqual(['kept.txt']);
  });

  it('isolation: another user never lists, reads, writes or deletes A’s files', async () => {
    const a = await userWithAgent();
    const b = await userWithAgent();
    await save(a.cookie, { agentId: a.agentId, path: 'secret.txt', content: 'A only' });
    await save(b.cookie, { agentId: b.agentId, path: 'mine.txt', content: 'B' });

    expect((await get(b.cookie, { agentId: a.agentId })).body).toEqual({ files: [] });
    expectError(await get(b.cookie, { agentId: a.agentId, path: 'secret.txt' }), 404, 'File not found');
    expectError(await save(b.cookie, { agentId: a.agentId, path: 'secret.txt', content: 'overwritten' }), 404, 'Agent not found');
    expectError(await remove(b.cookie, { agentId: a.agentId, path: 'secret.txt' }), 404, 'File not found');
    expect((await get(b.cookie, { agentId: b.agentId })).body.files.map((f: { path: string }) => f.path)).toEqual(['mine.txt']);

    expect((await get(a.cookie, { agentId: a.agentId, path: 'secret.txt' })).body.file.content).toBe('A only');
    expect((await get(a.cookie, { agentId: a.agentId })).body.files.map((f: { path: string }) => f.path)).toEqual(['secret.txt']);
  });
});
