import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeRecord } from './registry.js';

describe('agent records written atomically', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aop-registry-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('writes of one record at once all succeed; the file holds one whole record and no temporary file is left', async () => {
    // A lifecycle step and the memory sampler save the same record at once; a shared temporary name made one fail.
    const path = join(dir, 'agt_one.json');
    const records = Array.from({ length: 25 }, (_, n) => ({ agentId: 'agt_one', n, padding: 'x'.repeat(10_000) }));
    await Promise.all(records.map((record) => writeRecord(path, record)));
    const saved = JSON.parse(await readFile(path, 'utf8')) as { n: number };
    expect(records).toContainEqual(saved);
    expect(await readdir(dir)).toEqual(['agt_one.json']);
  });
});
