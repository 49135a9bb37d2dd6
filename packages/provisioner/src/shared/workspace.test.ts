import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProgramRunner, ProgramWorkspace, WORKSPACE_BOOT, checkRelativePath, runProgramLocally } from './workspace.js';

// The workspace program on its own, run as a child process the way the local provider runs it (the container
// providers run the same program through exec; the backend's browse tests cover those end to end).
describe('workspace program', () => {
  let dir: string;
  let ws: ProgramWorkspace;
  const seen: string[][] = [];
  const recording: ProgramRunner = (argv, options) => {
    seen.push(argv);
    return runProgramLocally(argv, options);
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aop-workspace-program-'));
    await mkdir(join(dir, 'workspace', 'memory'), { recursive: true });
    await writeFile(join(dir, 'workspace', 'AGENTS.md'), '# AGENTS.md\n');
    ws = new ProgramWorkspace({ root: join(dir, 'workspace'), home: join(dir, 'home'), node: [process.execPath] }, recording);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('keeps the program and the request off the command line', async () => {
    await ws.write(['notes', 'a path with spaces; $(touch x) & more.md'], Buffer.from('content'));
    const argv = seen.at(-1) ?? [];
    expect(argv.slice(1, 3)).toEqual(['-e', WORKSPACE_BOOT]);
    expect(argv.slice(3)).toEqual([
      '--',
      join(dir, 'workspace'),
      join(dir, 'home'),
      expect.stringMatching(/^\d+$/),
      expect.stringMatching(/^\d+$/),
    ]);
    expect(JSON.stringify(argv)).not.toContain('spaces');
    expect((await ws.read(['notes', 'a path with spaces; $(touch x) & more.md'])).content).toBe('content');
  });

  it('checks the segments it is given itself, whatever the caller did', async () => {
    await expect(ws.read(['..', 'etc'])).rejects.toMatchObject({ statusCode: 400, message: 'Path traversal is not allowed' });
    await expect(ws.read(['a/b'])).rejects.toMatchObject({ statusCode: 400, message: 'Invalid path' });
    await expect(ws.write(['.GIT', 'config'], Buffer.from('x'))).rejects.toMatchObject({
      statusCode: 400,
      message: 'Paths inside .git are not accessible',
    });
  });

  it('does not hang on a FIFO, and answers 404 for a missing workspace', async () => {
    execFileSync('mkfifo', [join(dir, 'workspace', 'pipe')]);
    await expect(ws.read(['pipe'])).rejects.toMatchObject({ statusCode: 400, message: 'Not a file' });
    const tree = await ws.tree([], 1);
    expect(tree.entries.find((e) => e.name === 'pipe')).toMatchObject({ type: 'other', size: null });
    const gone = new ProgramWorkspace({ root: join(dir, 'nope'), home: dir, node: [process.execPath] }, runProgramLocally);
    await expect(gone.tree([], 1)).rejects.toMatchObject({ statusCode: 404, message: 'Workspace not found' });
  });

  it('a symlinked workspace is resolved once; links inside read through', async () => {
    await symlink(join(dir, 'workspace'), join(dir, 'linked'));
    await symlink('AGENTS.md', join(dir, 'workspace', 'agents-link.md'));
    const linked = new ProgramWorkspace({ root: join(dir, 'linked'), home: dir, node: [process.execPath] }, runProgramLocally);
    expect(await linked.read(['agents-link.md'])).toMatchObject({ path: 'AGENTS.md', encoding: 'utf8', content: '# AGENTS.md\n' });
    expect(await linked.isRepository()).toBe(false);
  });

  it('text paths are checked before anything runs', () => {
    expect(checkRelativePath('memory/./2026.md', { allowRoot: false })).toEqual(['memory', '2026.md']);
    expect(() => checkRelativePath('memory/../..', { allowRoot: true })).toThrow('Path traversal is not allowed');
    expect(() => checkRelativePath('', { allowRoot: false })).toThrow('path is required');
  });
});
