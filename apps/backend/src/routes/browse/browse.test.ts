import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAgents, startLocalAgents, userHeaders } from '../../services/agent-access.test-support.js';
import {
  type ContainerAgents,
  startDockerAgents,
  startHostedAgents,
  startKubeAgents,
} from '../../services/container-agents.test-support.js';
import { parseLog, parseNumstat, parsePorcelainV1, redactCredentials } from './git.js';

/** git for the test's own setup, isolated from the machine's config. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Seed',
      GIT_AUTHOR_EMAIL: 'seed@example.com',
      GIT_COMMITTER_NAME: 'Seed',
      GIT_COMMITTER_EMAIL: 'seed@example.com',
    },
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} never opened`);
}

// Spec §4.18 "Workspace browse (backend, auth)"; shapes and rules are ours (docs/decisions.md).
// The agent is a real local-provider gateway (stand-in OpenClaw, which seeds the workspace like OpenClaw does).
describe('workspace browse', () => {
  let env: LocalAgents;
  let ws: string;
  const q = (params: Record<string, string>) => new URLSearchParams(params).toString();
  const get = (userId: string, path: string) => env.call(userId, 'GET', path);

  beforeAll(async () => {
    env = await startLocalAgents('aop-browse-');
    await env.deploy('usr_owner', 'agt_ws');
    await env.deploy('usr_owner', 'agt_nogit');
    ws = env.host.paths('agt_ws').workspace;
    // OpenClaw runs `git init` in a new workspace when git is installed; the stand-in does not, so the test does.
    git(ws, 'init', '-q', '-b', 'main');
    git(ws, 'add', '-A');
    git(ws, 'commit', '-q', '-m', 'Seed workspace');
    await mkdir(join(ws, 'memory'), { recursive: true });
    await writeFile(join(ws, 'memory', '2026-01-01.md'), 'daily note\n');
    // The data dir sits in a repository of its own: a workspace without one must not fall through to it.
    git(env.work, 'init', '-q', '-b', 'main');
  });
  afterAll(() => env.close());

  it('needs the internal key, a signed user, and the caller owning the agent', async () => {
    const noKey = await request(`${env.backend.url}/api/browse/tree?agentId=agt_ws`, {
      headers: { ...userHeaders('usr_owner'), authorization: '' },
    });
    expect(noKey.status).toBe(401);
    const forged = await request(`${env.backend.url}/api/browse/tree?agentId=agt_ws`, {
      headers: { ...userHeaders('usr_owner'), 'x-user-id': 'usr_other' },
    });
    expect(forged.body).toEqual({ error: 'INVALID_SIGNATURE' });
    for (const path of [
      '/browse/tree?agentId=agt_ws',
      '/browse/read?agentId=agt_ws&path=AGENTS.md',
      '/browse/git-status?agentId=agt_ws',
      '/browse/git-diff?agentId=agt_ws',
      '/browse/git-log?agentId=agt_ws',
    ]) {
      const res = await get('usr_other', path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Agent not found' });
    }
    for (const [path, json] of [
      ['/browse/write', { agentId: 'agt_ws', path: 'x.md', content: 'x' }],
      ['/browse/git-sync', { agentId: 'agt_ws' }],
    ] as const) {
      expect((await env.call('usr_other', 'POST', path, json)).status).toBe(404);
    }
    expect(existsSync(join(ws, 'x.md'))).toBe(false);
    expect((await get('usr_owner', '/browse/tree')).body).toEqual({ error: 'agentId is required' });
    expect((await get('usr_owner', '/browse/tree?agentId=bad%20id')).body).toEqual({ error: 'Invalid agentId' });
  });

  it('tree lists the workspace with types and sizes, depth-limited, without .git', async () => {
    const res = await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws' })}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ agentId: 'agt_ws', path: '', depth: 2, truncated: false });
    const names = res.body.entries.map((e: { name: string }) => e.name);
    expect(names).toEqual(expect.arrayContaining(['memory', 'AGENTS.md', 'SOUL.md']));
    expect(names).not.toContain('.git');
    // Directories first: the platform's skills (`.agents`, see bus-skill.ts), then OpenClaw's memory.
    expect(names.slice(0, 2)).toEqual(['.agents', 'memory']);
    const agents = res.body.entries.find((e: { name: string }) => e.name === 'AGENTS.md');
    expect(agents).toEqual({ name: 'AGENTS.md', path: 'AGENTS.md', type: 'file', size: 12, modifiedAt: expect.any(String) });
    const memory = res.body.entries.find((e: { name: string }) => e.name === 'memory');
    expect(memory).toMatchObject({ type: 'directory', size: null });
    expect(memory.children).toEqual([expect.objectContaining({ name: '2026-01-01.md', path: 'memory/2026-01-01.md', size: 11 })]);

    const shallow = await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', depth: '1' })}`);
    expect(shallow.body.entries.find((e: { name: string }) => e.name === 'memory').children).toBeUndefined();
    const sub = await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', path: 'memory' })}`);
    expect(sub.body).toMatchObject({ path: 'memory', entries: [expect.objectContaining({ name: '2026-01-01.md' })] });
    expect((await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', depth: '9' })}`)).body).toEqual({
      error: 'Invalid depth: use 1 to 6',
    });
    expect((await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', path: 'AGENTS.md' })}`)).body).toEqual({
      error: 'Not a directory',
    });
    expect((await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', path: 'nope' })}`)).status).toBe(404);
  });

  it('refuses traversal, absolute paths, NUL bytes, .git and symlinks leading out', async () => {
    const outside = join(env.work, 'secret.txt');
    await writeFile(outside, 'top secret');
    await symlink(outside, join(ws, 'leak.txt'));
    await symlink(env.work, join(ws, 'escape'));
    await symlink(join(env.work, 'missing-target'), join(ws, 'dangling'));
    await symlink(join(ws, '.git', 'config'), join(ws, 'gitconfig-link'));
    await symlink('AGENTS.md', join(ws, 'agents-link.md')); // inside: fine

    const cases: Array<[string, string]> = [
      ['../secret.txt', 'Path traversal is not allowed'],
      ['memory/../../secret.txt', 'Path traversal is not allowed'],
      ['/etc/passwd', 'Absolute paths are not allowed'],
      ['~/x', 'Absolute paths are not allowed'],
      ['.git/config', 'Paths inside .git are not accessible'],
      ['memory/.GIT/x', 'Paths inside .git are not accessible'],
      ['leak.txt', 'Path resolves outside the workspace'],
      ['escape/secret.txt', 'Path resolves outside the workspace'],
      ['dangling', 'Path resolves outside the workspace'],
      ['gitconfig-link', 'Paths inside .git are not accessible'],
      ['a\\..\\b', 'Invalid path'],
    ];
    for (const [path, error] of cases) {
      const read = await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path })}`);
      expect([path, read.status, read.body]).toEqual([path, 400, { error }]);
      const write = await env.call('usr_owner', 'POST', '/browse/write', { agentId: 'agt_ws', path, content: 'pwned' });
      expect([path, write.status, write.body]).toEqual([path, 400, { error }]);
    }
    // Percent-encoded dots and a NUL byte, as a client would send them raw (a NUL is refused before any route sees it).
    for (const [raw, error] of [
      ['%2e%2e/secret.txt', 'Path traversal is not allowed'],
      ['%2E%2E%2Fsecret.txt', 'Path traversal is not allowed'],
      ['AGENTS.md%00.txt', 'Invalid characters in request'],
    ]) {
      const res = await get('usr_owner', `/browse/read?agentId=agt_ws&path=${raw}`);
      expect([raw, res.status, res.body]).toEqual([raw, 400, { error }]);
    }
    expect((await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', path: 'escape' })}`)).status).toBe(400);
    expect((await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', path: '..' })}`)).status).toBe(400);
    expect(
      (await env.call('usr_owner', 'POST', '/browse/write', { agentId: 'agt_ws', path: '.git/hooks/pre-commit', content: 'x' })).status,
    ).toBe(400);

    // Nothing outside changed, the .git config is as git wrote it, and a symlink inside the workspace reads through.
    expect(await readFile(outside, 'utf8')).toBe('top secret');
    expect(await readFile(join(ws, '.git', 'config'), 'utf8')).not.toContain('pwned');
    expect(existsSync(join(env.work, 'missing-target'))).toBe(false);
    const inside = await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path: 'agents-link.md' })}`);
    expect(inside.body).toMatchObject({ path: 'AGENTS.md', encoding: 'utf8', content: '# AGENTS.md\n' });
    // The tree shows symlinks as such and never follows them.
    const tree = await get('usr_owner', `/browse/tree?${q({ agentId: 'agt_ws', depth: '3' })}`);
    expect(tree.body.entries.find((e: { name: string }) => e.name === 'escape')).toMatchObject({ type: 'symlink', size: null });
    expect(tree.body.entries.find((e: { name: string }) => e.name === 'escape').children).toBeUndefined();
    for (const name of ['leak.txt', 'escape', 'dangling', 'gitconfig-link', 'agents-link.md']) {
      execFileSync('rm', [join(ws, name)]);
    }
  });

  it('read returns text as utf8 and binary as base64, within 1 MB', async () => {
    const text = await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path: 'memory/2026-01-01.md' })}`);
    expect(text.body).toEqual({
      agentId: 'agt_ws',
      path: 'memory/2026-01-01.md',
      size: 11,
      modifiedAt: expect.any(String),
      encoding: 'utf8',
      content: 'daily note\n',
    });
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe]);
    await writeFile(join(ws, 'image.png'), bytes);
    const binary = await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path: 'image.png' })}`);
    expect(binary.body).toMatchObject({ encoding: 'base64', size: 7, content: bytes.toString('base64') });
    await writeFile(join(ws, 'big.log'), Buffer.alloc(1_048_577, 0x61));
    const big = await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path: 'big.log' })}`);
    expect([big.status, big.body]).toEqual([413, { error: 'File too large (max 1 MB)' }]);
    expect((await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path: 'memory' })}`)).body).toEqual({ error: 'Not a file' });
    expect((await get('usr_owner', `/browse/read?${q({ agentId: 'agt_ws', path: 'none.md' })}`)).body).toEqual({ error: 'File not found' });
    expect((await get('usr_owner', '/browse/read?agentId=agt_ws')).body).toEqual({ error: 'path is required' });
    execFileSync('rm', [join(ws, 'image.png'), join(ws, 'big.log')]);
  });

  it('write creates parents, replaces atomically, takes base64, and validates its body', async () => {
    const created = await env.call('usr_owner', 'POST', '/browse/write', {
      agentId: 'agt_ws',
      path: 'notes/2026/plan.md',
      content: '# Plan\n',
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      success: true,
      agentId: 'agt_ws',
      path: 'notes/2026/plan.md',
      size: 7,
      created: true,
      modifiedAt: expect.any(String),
    });
    expect(await readFile(join(ws, 'notes', '2026', 'plan.md'), 'utf8')).toBe('# Plan\n');
    const replaced = await env.call('usr_owner', 'POST', '/browse/write', {
      agentId: 'agt_ws',
      path: 'AGENTS.md',
      content: '# Agents\nBe brief.\n',
    });
    expect(replaced.body).toMatchObject({ created: false, size: 19 });
    expect(await readFile(join(ws, 'AGENTS.md'), 'utf8')).toBe('# Agents\nBe brief.\n');
    const b64 = await env.call('usr_owner', 'POST', '/browse/write', {
      agentId: 'agt_ws',
      path: 'notes/blob.bin',
      content: Buffer.from([0, 1, 2, 255]).toString('base64'),
      encoding: 'base64',
    });
    expect(b64.body).toMatchObject({ size: 4, created: true });
    expect([...(await readFile(join(ws, 'notes', 'blob.bin')))]).toEqual([0, 1, 2, 255]);
    // No temporary files are left next to the written ones.
    expect((await readdir(join(ws, 'notes'))).sort()).toEqual(['2026', 'blob.bin']);

    const bad: Array<[unknown, number, string]> = [
      [{ agentId: 'agt_ws', path: 'a.md' }, 400, 'content is required'],
      [{ agentId: 'agt_ws', path: 'a.md', content: 42 }, 400, 'content must be a string'],
      [{ agentId: 'agt_ws', path: 'a.md', content: 'x', encoding: 'latin1' }, 400, 'encoding must be utf8 or base64'],
      [{ agentId: 'agt_ws', path: 'a.md', content: 'not base64!', encoding: 'base64' }, 400, 'content is not valid base64'],
      [{ agentId: 'agt_ws', content: 'x' }, 400, 'path is required'],
      [{ agentId: 'agt_ws', path: 'memory', content: 'x' }, 400, 'Not a file'],
      [{ agentId: 'agt_ws', path: 'AGENTS.md/x', content: 'x' }, 400, 'Not a directory'],
      [{ path: 'a.md', content: 'x' }, 400, 'agentId is required'],
    ];
    for (const [json, status, error] of bad) {
      const res = await env.call('usr_owner', 'POST', '/browse/write', json);
      expect([json, res.status, res.body]).toEqual([json, status, { error }]);
    }
    const tooBig = await env.call('usr_owner', 'POST', '/browse/write', {
      agentId: 'agt_ws',
      path: 'big.txt',
      content: 'a'.repeat(1_100_000),
    });
    expect(tooBig.status).toBe(413);
    expect(existsSync(join(ws, 'a.md'))).toBe(false);
    expect(existsSync(join(ws, 'big.txt'))).toBe(false);
  });

  it('git-status, git-diff and git-log read the workspace repository', async () => {
    const status = await get('usr_owner', '/browse/git-status?agentId=agt_ws');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      agentId: 'agt_ws',
      branch: 'main',
      upstream: null,
      hasCommits: true,
      clean: false,
      detached: false,
    });
    const byPath = Object.fromEntries(status.body.files.map((f: { path: string }) => [f.path, f]));
    expect(byPath['AGENTS.md']).toEqual({
      path: 'AGENTS.md',
      index: ' ',
      workingTree: 'M',
      status: 'modified',
      staged: false,
      unstaged: true,
    });
    expect(byPath['notes/2026/plan.md']).toMatchObject({ status: 'untracked', index: '?', workingTree: '?' });
    expect(byPath['memory/2026-01-01.md']).toMatchObject({ status: 'untracked' });

    const diff = await get('usr_owner', '/browse/git-diff?agentId=agt_ws');
    expect(diff.body).toMatchObject({ agentId: 'agt_ws', staged: false, path: null, truncated: false });
    expect(diff.body.diff).toContain('-# AGENTS.md\n+# Agents\n+Be brief.');
    expect(diff.body.files).toEqual([{ path: 'AGENTS.md', additions: 2, deletions: 1, binary: false }]);
    const scoped = await get('usr_owner', '/browse/git-diff?agentId=agt_ws&path=SOUL.md');
    expect(scoped.body).toMatchObject({ path: 'SOUL.md', diff: '', files: [] });
    const staged = await get('usr_owner', '/browse/git-diff?agentId=agt_ws&staged=true');
    expect(staged.body).toMatchObject({ staged: true, diff: '', files: [] });
    expect((await get('usr_owner', '/browse/git-diff?agentId=agt_ws&staged=maybe')).body).toEqual({ error: 'Invalid staged' });
    expect((await get('usr_owner', '/browse/git-diff?agentId=agt_ws&path=../x')).status).toBe(400);

    const log = await get('usr_owner', '/browse/git-log?agentId=agt_ws');
    expect(log.body).toEqual({
      agentId: 'agt_ws',
      path: null,
      limit: 20,
      skip: 0,
      commits: [
        {
          hash: expect.stringMatching(/^[0-9a-f]{40}$/),
          shortHash: expect.stringMatching(/^[0-9a-f]{7,}$/),
          author: { name: 'Seed', email: 'seed@example.com' },
          date: expect.any(String),
          message: 'Seed workspace',
        },
      ],
    });
    expect((await get('usr_owner', '/browse/git-log?agentId=agt_ws&limit=0')).body).toEqual({ error: 'Invalid limit: use 1 to 100' });
  });

  it('git-sync commits every change as the owner and pushes only to a configured upstream', async () => {
    const sync = await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_ws', message: '#1 Plan for 2026' });
    expect(sync.status).toBe(200);
    expect(sync.body).toEqual({
      success: true,
      agentId: 'agt_ws',
      committed: true,
      commit: { hash: expect.stringMatching(/^[0-9a-f]{40}$/), shortHash: expect.any(String), message: '#1 Plan for 2026' },
      filesChanged: 4,
      push: null,
    });
    expect(git(ws, 'log', '-1', '--format=%an <%ae>|%s').trim()).toBe('usr_owner@example.com <usr_owner@example.com>|#1 Plan for 2026');
    expect((await get('usr_owner', '/browse/git-status?agentId=agt_ws')).body).toMatchObject({ clean: true, files: [] });
    const nothing = await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_ws' });
    expect(nothing.body).toMatchObject({ committed: false, commit: null, filesChanged: 0, push: null });
    expect((await get('usr_owner', '/browse/git-log?agentId=agt_ws&limit=1')).body.commits).toHaveLength(1);
    expect((await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_ws', message: 42 })).body).toEqual({
      error: 'Invalid message',
    });

    // A real remote over the git protocol: `git daemon` serving a bare repository.
    const bare = join(env.work, 'remotes', 'workspace.git');
    await mkdir(bare, { recursive: true });
    git(bare, 'init', '-q', '--bare', '-b', 'main');
    const port = await freePort();
    const daemon: ChildProcess = spawn(
      'git',
      [
        'daemon',
        '--reuseaddr',
        `--port=${port}`,
        '--listen=127.0.0.1',
        `--base-path=${join(env.work, 'remotes')}`,
        '--export-all',
        '--enable=receive-pack',
        join(env.work, 'remotes'),
      ],
      {
        stdio: 'ignore',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: env.work, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      },
    );
    try {
      await waitForPort(port);
      git(ws, 'remote', 'add', 'origin', `git://127.0.0.1:${port}/workspace.git`);
      git(ws, 'config', 'branch.main.remote', 'origin');
      git(ws, 'config', 'branch.main.merge', 'refs/heads/main');
      await writeFile(join(ws, 'USER.md'), '# USER.md\nPrefers mornings.\n');
      const pushed = await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_ws', message: 'Morning person' });
      expect(pushed.body).toMatchObject({ committed: true, filesChanged: 1, push: { remote: 'origin', branch: 'main', pushed: true } });
      expect(git(bare, 'log', '-1', '--format=%s', 'main').trim()).toBe('Morning person');
      expect((await get('usr_owner', '/browse/git-status?agentId=agt_ws')).body).toMatchObject({ upstream: 'origin/main', ahead: 0 });
    } finally {
      daemon.kill();
    }

    // A push that fails keeps the commit and reports why, without the credentials in the remote URL.
    const closed = await freePort();
    git(ws, 'remote', 'set-url', 'origin', `http://deploy:s3cret-token@127.0.0.1:${closed}/workspace.git`);
    await writeFile(join(ws, 'HEARTBEAT.md'), 'ok\n');
    const failed = await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_ws', message: 'Offline change' });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({
      committed: true,
      push: { remote: 'origin', branch: 'main', pushed: false, error: expect.any(String) },
    });
    expect(failed.text).not.toContain('s3cret-token');
    expect(git(ws, 'log', '-1', '--format=%s').trim()).toBe('Offline change');
  });

  it('answers 409 for a workspace that is not a repository, even inside another repository', async () => {
    for (const path of [
      '/browse/git-status?agentId=agt_nogit',
      '/browse/git-log?agentId=agt_nogit',
      '/browse/git-diff?agentId=agt_nogit',
    ]) {
      const res = await get('usr_owner', path);
      expect([path, res.status, res.body]).toEqual([path, 409, { error: 'Workspace is not a git repository' }]);
    }
    expect((await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_nogit' })).status).toBe(409);
    // Files still browse.
    expect((await get('usr_owner', '/browse/tree?agentId=agt_nogit')).status).toBe(200);
  });

  it('a repository config cannot make the backend run programs', async () => {
    const marker = join(env.work, 'hook-ran');
    git(ws, 'config', 'core.fsmonitor', `touch ${marker}`);
    git(ws, 'config', 'core.pager', `touch ${marker}`);
    git(ws, 'config', 'diff.external', `touch ${marker}`);
    await mkdir(join(ws, '.git', 'hooks'), { recursive: true });
    await writeFile(join(ws, '.git', 'hooks', 'pre-commit'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    await writeFile(join(ws, '.git', 'hooks', 'post-commit'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    git(ws, 'remote', 'remove', 'origin');
    await writeFile(join(ws, 'TOOLS.md'), 'tools\n');
    expect((await get('usr_owner', '/browse/git-status?agentId=agt_ws')).status).toBe(200);
    expect((await get('usr_owner', '/browse/git-diff?agentId=agt_ws')).status).toBe(200);
    expect((await env.call('usr_owner', 'POST', '/browse/git-sync', { agentId: 'agt_ws' })).body).toMatchObject({ committed: true });
    expect(existsSync(marker)).toBe(false);
    for (const key of ['core.fsmonitor', 'core.pager', 'diff.external']) git(ws, 'config', '--unset', key);
  });
});

// The same routes on the container providers: the backend reaches the files only through the host's `workspace()`,
// which runs the workspace program with `docker exec` in the agent's container / `pods/exec` in its pod. The local
// stand-ins speak the real protocols (hijacked exec with stdin and multiplexed frames; the channel WebSocket) and run
// the exec'd program on this machine against the volume's directory, so symlinks here are symlinks "in the container".
describe.each([
  ['docker', startDockerAgents],
  ['kubernetes', startKubeAgents],
] as const)('workspace browse on the %s provider', (provider, start) => {
  let env: ContainerAgents;
  let ws: string;
  const agentId = `agt_${provider}_ws`;
  const q = (params: Record<string, string>) => new URLSearchParams({ agentId, ...params }).toString();
  const get = (path: string, userId = 'usr_boxed') => env.call(userId, 'GET', path);

  beforeAll(async () => {
    env = await start(`aop-browse-${provider}-`);
    await env.deploy('usr_boxed', agentId);
    ws = env.workspaceDir(agentId);
    git(ws, 'init', '-q', '-b', 'main');
    git(ws, 'add', '-A');
    git(ws, 'commit', '-q', '-m', 'Seed workspace');
  });
  afterAll(() => env.close());

  it('tree, read and write go through the container; only the owner gets in', async () => {
    const tree = await get(`/browse/tree?${q({})}`);
    expect(tree.status).toBe(200);
    expect(tree.body).toMatchObject({ agentId, path: '', depth: 2, truncated: false });
    const names = tree.body.entries.map((e: { name: string }) => e.name);
    expect(names).toEqual(expect.arrayContaining(['memory', 'AGENTS.md', 'SOUL.md']));
    expect(names).not.toContain('.git');
    expect(tree.body.entries.find((e: { name: string }) => e.name === 'AGENTS.md')).toEqual({
      name: 'AGENTS.md',
      path: 'AGENTS.md',
      type: 'file',
      size: 12,
      modifiedAt: expect.any(String),
    });
    expect((await get(`/browse/tree?${q({})}`, 'usr_other')).body).toEqual({ error: 'Agent not found' });

    const written = await env.call('usr_boxed', 'POST', '/browse/write', { agentId, path: 'notes/plan.md', content: '# Plan ✓\n' });
    expect(written.body).toEqual({
      success: true,
      agentId,
      path: 'notes/plan.md',
      size: 11,
      created: true,
      modifiedAt: expect.any(String),
    });
    expect(await readFile(join(ws, 'notes', 'plan.md'), 'utf8')).toBe('# Plan ✓\n');
    const read = await get(`/browse/read?${q({ path: 'notes/plan.md' })}`);
    expect(read.body).toEqual({
      agentId,
      path: 'notes/plan.md',
      size: 11,
      modifiedAt: expect.any(String),
      encoding: 'utf8',
      content: '# Plan ✓\n',
    });

    // Binary content goes in on the exec's standard input and comes back as base64, byte for byte.
    const bytes = Buffer.from([0, 1, 2, 255, 0x89, 0x50, 0x4e, 0x47]);
    const big = Buffer.concat([bytes, randomBytes(300_000)]);
    const b64 = await env.call('usr_boxed', 'POST', '/browse/write', {
      agentId,
      path: 'notes/blob.bin',
      content: big.toString('base64'),
      encoding: 'base64',
    });
    expect(b64.body).toMatchObject({ size: big.length, created: true });
    expect((await readFile(join(ws, 'notes', 'blob.bin'))).equals(big)).toBe(true);
    const back = await get(`/browse/read?${q({ path: 'notes/blob.bin' })}`);
    expect(back.body).toMatchObject({ encoding: 'base64', size: big.length });
    expect(Buffer.from(back.body.content, 'base64').equals(big)).toBe(true);
    expect((await readdir(join(ws, 'notes'))).sort()).toEqual(['blob.bin', 'plan.md']);

    expect((await get(`/browse/read?${q({ path: 'none.md' })}`)).body).toEqual({ error: 'File not found' });
    expect((await get(`/browse/read?${q({ path: 'memory' })}`)).body).toEqual({ error: 'Not a file' });
    expect((await get(`/browse/tree?${q({ path: 'AGENTS.md' })}`)).body).toEqual({ error: 'Not a directory' });
    const tooBig = await env.call('usr_boxed', 'POST', '/browse/write', { agentId, path: 'big.txt', content: 'a'.repeat(1_100_000) });
    expect(tooBig.status).toBe(413);
    expect(existsSync(join(ws, 'big.txt'))).toBe(false);
  });

  it('refuses traversal and symlinks leading out, before and inside the container', async () => {
    const outside = join(env.work, 'secret.txt');
    await writeFile(outside, 'top secret');
    await symlink(outside, join(ws, 'leak.txt'));
    await symlink(env.work, join(ws, 'escape'));
    await symlink(join(env.work, 'missing-target'), join(ws, 'dangling'));
    await symlink(join(ws, '.git', 'config'), join(ws, 'gitconfig-link'));
    const cases: Array<[string, string]> = [
      ['../secret.txt', 'Path traversal is not allowed'],
      ['/etc/passwd', 'Absolute paths are not allowed'],
      ['.git/config', 'Paths inside .git are not accessible'],
      ['leak.txt', 'Path resolves outside the workspace'],
      ['escape/secret.txt', 'Path resolves outside the workspace'],
      ['dangling', 'Path resolves outside the workspace'],
      ['gitconfig-link', 'Paths inside .git are not accessible'],
    ];
    for (const [path, error] of cases) {
      const read = await get(`/browse/read?${q({ path })}`);
      expect([path, read.status, read.body]).toEqual([path, 400, { error }]);
      const write = await env.call('usr_boxed', 'POST', '/browse/write', { agentId, path, content: 'pwned' });
      expect([path, write.status, write.body]).toEqual([path, 400, { error }]);
    }
    expect(await readFile(outside, 'utf8')).toBe('top secret');
    expect(existsSync(join(env.work, 'missing-target'))).toBe(false);
    for (const name of ['leak.txt', 'escape', 'dangling', 'gitconfig-link']) await rm(join(ws, name));
  });

  it('git status, diff, log and sync run in the container, committing as the owner', async () => {
    await env.call('usr_boxed', 'POST', '/browse/write', { agentId, path: 'AGENTS.md', content: '# Agents\nBe brief.\n' });
    const status = await get(`/browse/git-status?${q({})}`);
    expect(status.body).toMatchObject({ agentId, branch: 'main', hasCommits: true, clean: false });
    expect(status.body.files).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'AGENTS.md', status: 'modified', unstaged: true })]),
    );
    const diff = await get(`/browse/git-diff?${q({})}`);
    expect(diff.body.diff).toContain('-# AGENTS.md\n+# Agents\n+Be brief.');
    expect(diff.body.files).toEqual([{ path: 'AGENTS.md', additions: 2, deletions: 1, binary: false }]);
    const sync = await env.call('usr_boxed', 'POST', '/browse/git-sync', { agentId, message: 'Edited in the browser' });
    expect(sync.body).toMatchObject({ success: true, committed: true, push: null, commit: { message: 'Edited in the browser' } });
    expect(git(ws, 'log', '-1', '--format=%an <%ae>|%s').trim()).toBe(
      'usr_boxed@example.com <usr_boxed@example.com>|Edited in the browser',
    );
    const log = await get(`/browse/git-log?${q({})}`);
    expect(log.body.commits.map((c: { message: string }) => c.message)).toEqual(['Edited in the browser', 'Seed workspace']);
    expect((await get(`/browse/git-status?${q({})}`)).body).toMatchObject({ clean: true, files: [] });
  });

  it('answers 409 while the agent is not running', async () => {
    await env.host.stop(agentId);
    const res = await get(`/browse/tree?${q({})}`);
    expect([res.status, res.body]).toEqual([409, { error: 'Agent is not running: start it to browse its workspace' }]);
  });
});

describe('workspace browse on the hosting provider', () => {
  it('answers 501 after checking ownership: the provider gives no access to files', async () => {
    const env = await startHostedAgents('aop-browse-hosting-');
    try {
      await env.deploy('usr_hosted', 'agt_hosted_ws');
      const res = await env.call('usr_hosted', 'GET', '/browse/tree?agentId=agt_hosted_ws');
      expect([res.status, res.body]).toEqual([
        501,
        { error: "Workspace browsing is not available on the hosting provider: it gives no access to an agent's files" },
      ]);
      expect((await env.call('usr_else', 'GET', '/browse/tree?agentId=agt_hosted_ws')).status).toBe(404);
    } finally {
      await env.close();
    }
  });
});

describe('git output parsing', () => {
  it('parses porcelain v1 with renames, conflicts and branch states', () => {
    const out = [
      '## main...origin/main [ahead 2, behind 1]',
      'R  new.md',
      'old.md',
      'UU both.md',
      'A  added.md',
      ' D gone.md',
      '?? new dir/file.md',
      '',
    ].join('\0');
    const status = parsePorcelainV1(out);
    expect(status).toMatchObject({ branch: 'main', upstream: 'origin/main', ahead: 2, behind: 1, clean: false });
    expect(status.files).toEqual([
      { path: 'new.md', origPath: 'old.md', index: 'R', workingTree: ' ', status: 'renamed', staged: true, unstaged: false },
      { path: 'both.md', index: 'U', workingTree: 'U', status: 'conflicted', staged: true, unstaged: true },
      { path: 'added.md', index: 'A', workingTree: ' ', status: 'added', staged: true, unstaged: false },
      { path: 'gone.md', index: ' ', workingTree: 'D', status: 'deleted', staged: false, unstaged: true },
      { path: 'new dir/file.md', index: '?', workingTree: '?', status: 'untracked', staged: false, unstaged: true },
    ]);
    expect(parsePorcelainV1('## No commits yet on main\0')).toMatchObject({ branch: 'main', hasCommits: false, clean: true });
    expect(parsePorcelainV1('## HEAD (no branch)\0')).toMatchObject({ branch: null, detached: true });
    expect(parsePorcelainV1('## feature\0')).toMatchObject({ branch: 'feature', upstream: null, ahead: 0 });
  });

  it('parses numstat (binary, renames) and log records', () => {
    expect(parseNumstat('3\t1\ta.md\0-\t-\timg.png\0' + '0\t0\t\0old.md\0new.md\0')).toEqual([
      { path: 'a.md', additions: 3, deletions: 1, binary: false },
      { path: 'img.png', additions: null, deletions: null, binary: true },
      { path: 'new.md', origPath: 'old.md', additions: 0, deletions: 0, binary: false },
    ]);
    expect(parseLog('abc\x1fab\x1fAnn\x1fann@x\x1f2026-01-01T00:00:00Z\x1fHello\x1e\n')).toEqual([
      { hash: 'abc', shortHash: 'ab', author: { name: 'Ann', email: 'ann@x' }, date: '2026-01-01T00:00:00Z', message: 'Hello' },
    ]);
  });

  it('redacts credentials in remote URLs', () => {
    expect(redactCredentials("fatal: unable to access 'https://bot:ghp_abc@github.com/x/y.git/'")).toBe(
      "fatal: unable to access 'https://***@github.com/x/y.git/'",
    );
  });
});
