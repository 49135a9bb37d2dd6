import { DomainError } from '@aop/core';
import type { AgentWorkspace, GitOptions, GitRun } from '@aop/provisioner';

/**
 * Git in an agent's workspace (OpenClaw runs `git init` in a new workspace when git is installed).
 *
 * The repository and its config are writable by the agent, so git runs as if it were the agent, where the workspace
 * is (the host's `AgentWorkspace.git`): no shell, an environment built from nothing (none of the backend's secrets),
 * the agent's home, no system or global config, discovery stopped at the workspace (a workspace that is not a
 * repository never falls through to a parent repository), and the config keys that run programs (hooks, fsmonitor,
 * pager, external diff, textconv, signing, credential helpers, the `ext::` transport) overridden on the command line.
 * Every call has a timeout that kills git's whole process group, and output caps. This module builds the calls and
 * reads their output.
 */

export type { GitOptions, GitRun };

/** `https://user:token@host/…` → `https://***@host/…`: git echoes remote URLs in its messages. */
export const redactCredentials = (text: string): string => text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');

export class GitWorkspace {
  constructor(private readonly workspace: AgentWorkspace) {}

  /** `git <args>` in the workspace. Never throws for a non-zero exit; 504 on timeout. */
  run(args: string[], options: GitOptions = {}): Promise<GitRun> {
    return this.workspace.git(args, options);
  }

  /** Runs git and answers 500 with git's (redacted) message when it fails. */
  async ok(args: string[], options: GitOptions = {}): Promise<GitRun> {
    const result = await this.run(args, options);
    if (result.code !== 0) throw gitFailure(args[0] ?? 'git', result);
    return result;
  }

  /**
   * Whether the workspace itself is a repository: `.git` must be a real directory (not a symlink or a `gitdir:` file
   * pointing elsewhere) and git must agree that the workspace is the top level.
   */
  isRepository(): Promise<boolean> {
    return this.workspace.isRepository();
  }

  async requireRepository(): Promise<void> {
    if (!(await this.isRepository())) throw new DomainError('WORKSPACE_NOT_GIT_REPOSITORY');
  }

  async hasCommits(): Promise<boolean> {
    return (await this.run(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'])).code === 0;
  }

  // ---------------------------------------------------------------- status

  async status(): Promise<GitStatus> {
    const result = await this.ok(['--no-optional-locks', 'status', '--porcelain=v1', '-z', '--branch', '--untracked-files=all']);
    return { ...parsePorcelainV1(result.stdout), truncated: result.truncated };
  }

  // ---------------------------------------------------------------- diff

  async diff(options: { staged: boolean; path: string | null }): Promise<GitDiff> {
    const base = ['--no-optional-locks', 'diff', '--no-color', '--no-ext-diff', '--no-textconv', ...(options.staged ? ['--cached'] : [])];
    const pathspec = options.path === null ? [] : ['--', `:(literal)${options.path}`];
    const [patch, numstat] = await Promise.all([
      this.ok([...base, ...pathspec], { maxBytes: DIFF_MAX_BYTES }),
      this.ok([...base, '--numstat', '-z', ...pathspec]),
    ]);
    return { diff: patch.stdout, truncated: patch.truncated, files: parseNumstat(numstat.stdout) };
  }

  // ---------------------------------------------------------------- log

  async log(options: { limit: number; skip: number; path: string | null }): Promise<GitCommit[]> {
    if (!(await this.hasCommits())) return [];
    const result = await this.ok([
      '--no-optional-locks',
      'log',
      '--no-color',
      `--max-count=${options.limit}`,
      `--skip=${options.skip}`,
      `--format=${LOG_FORMAT}`,
      ...(options.path === null ? [] : ['--', `:(literal)${options.path}`]),
    ]);
    return parseLog(result.stdout);
  }

  // ---------------------------------------------------------------- sync

  /**
   * Commits every change (`git add -A`) with `message` as `author`, then pushes when the current branch has an
   * upstream. A failed push does not undo the commit: it is reported in `push.error`.
   */
  async sync(message: string, author: { name: string; email: string }): Promise<GitSync> {
    await this.ok(['add', '-A'], { timeoutMs: 60_000 });
    const staged = await this.ok(['diff', '--cached', '--name-only', '-z', '--no-renames']);
    const filesChanged = staged.stdout.split('\0').filter(Boolean).length;
    let commit: GitSync['commit'] = null;
    if (filesChanged > 0) {
      const identity = {
        GIT_AUTHOR_NAME: author.name,
        GIT_AUTHOR_EMAIL: author.email,
        GIT_COMMITTER_NAME: author.name,
        GIT_COMMITTER_EMAIL: author.email,
      };
      // No shell: the message is one argument, whatever it contains.
      await this.ok(['commit', '--quiet', '--no-verify', '--no-gpg-sign', '--cleanup=whitespace', '-m', message], {
        env: identity,
        timeoutMs: 60_000,
      });
      const head = await this.ok(['log', '-1', `--format=${LOG_FORMAT}`]);
      const [latest] = parseLog(head.stdout);
      if (latest) commit = { hash: latest.hash, shortHash: latest.shortHash, message: latest.message };
    }
    return { committed: commit !== null, commit, filesChanged, push: await this.pushUpstream() };
  }

  /** `git push <remote> HEAD:<upstream branch>` when the current branch tracks one; null otherwise. */
  private async pushUpstream(): Promise<GitSync['push']> {
    const branch = (await this.run(['symbolic-ref', '--quiet', '--short', 'HEAD'])).stdout.trim();
    if (!branch) return null;
    const remote = (await this.run(['config', '--get', `branch.${branch}.remote`])).stdout.trim();
    const merge = (await this.run(['config', '--get', `branch.${branch}.merge`])).stdout.trim();
    // `.` is a local "remote"; a name starting with `-` would read as an option.
    if (!remote || remote === '.' || remote.startsWith('-') || !merge.startsWith('refs/heads/')) return null;
    const target = merge.slice('refs/heads/'.length);
    const result = await this.run(['push', '--porcelain', remote, `HEAD:refs/heads/${target}`], { timeoutMs: 60_000 }).catch(
      (err: unknown) => ({ code: -1, stdout: '', stderr: err instanceof Error ? err.message : String(err), truncated: false }),
    );
    if (result.code === 0) return { remote, branch: target, pushed: true };
    return { remote, branch: target, pushed: false, error: firstLines(redactCredentials(result.stderr || result.stdout)) };
  }
}

const DIFF_MAX_BYTES = 1_048_576;
/** Fields split by US (0x1f), records by RS (0x1e): neither can appear in names or a subject. */
const LOG_FORMAT = '%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e';

function firstLines(text: string, max = 500): string {
  const trimmed = text.trim();
  return trimmed.length > max ? `${trimmed.slice(0, max)}…` : trimmed;
}

function gitFailure(command: string, result: GitRun): DomainError {
  const detail = firstLines(redactCredentials(result.stderr || result.stdout)).split('\n')[0] ?? '';
  return new DomainError('GIT_FAILED', { command, detail: detail ? `: ${detail}` : '' });
}

// ---------------------------------------------------------------- parsing

export type FileStatus = 'modified' | 'added' | 'deleted' | 'renamed' | 'copied' | 'type-changed' | 'untracked' | 'ignored' | 'conflicted';

export interface StatusEntry {
  path: string;
  /** The source of a rename or copy. */
  origPath?: string;
  /** Porcelain v1 `X` (index) and `Y` (working tree) codes, e.g. `M`, `A`, `?`, ` `. */
  index: string;
  workingTree: string;
  status: FileStatus;
  staged: boolean;
  unstaged: boolean;
}

export interface GitStatus {
  branch: string | null;
  detached: boolean;
  upstream: string | null;
  ahead: number;
  behind: number;
  hasCommits: boolean;
  clean: boolean;
  files: StatusEntry[];
  truncated?: boolean;
}

export interface GitDiff {
  diff: string;
  truncated: boolean;
  files: Array<{ path: string; origPath?: string; additions: number | null; deletions: number | null; binary: boolean }>;
}

export interface GitCommit {
  hash: string;
  shortHash: string;
  author: { name: string; email: string };
  date: string;
  message: string;
}

export interface GitSync {
  committed: boolean;
  commit: { hash: string; shortHash: string; message: string } | null;
  filesChanged: number;
  /** null: the branch has no upstream, nothing was pushed. */
  push: { remote: string; branch: string; pushed: boolean; error?: string } | null;
}

const CONFLICTS = new Set(['DD', 'AU', 'UD', 'UA', 'DU', 'AA', 'UU']);
const CODES: Record<string, FileStatus> = { M: 'modified', A: 'added', D: 'deleted', R: 'renamed', C: 'copied', T: 'type-changed' };

/** `git status --porcelain=v1 -z --branch`. */
export function parsePorcelainV1(output: string): Omit<GitStatus, 'truncated'> {
  const tokens = output.split('\0');
  const status: Omit<GitStatus, 'truncated'> = {
    branch: null,
    detached: false,
    upstream: null,
    ahead: 0,
    behind: 0,
    hasCommits: true,
    clean: true,
    files: [],
  };
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i] as string;
    if (token === '') continue;
    if (token.startsWith('## ')) {
      Object.assign(status, parseBranchLine(token.slice(3)));
      continue;
    }
    const index = token[0] ?? ' ';
    const workingTree = token[1] ?? ' ';
    const code = `${index}${workingTree}`;
    const entry: StatusEntry = { path: token.slice(3), index, workingTree, status: 'modified', staged: false, unstaged: false };
    if (index === 'R' || index === 'C') {
      entry.origPath = tokens[i + 1] ?? '';
      i += 1;
    }
    if (code === '??') entry.status = 'untracked';
    else if (code === '!!') entry.status = 'ignored';
    else if (CONFLICTS.has(code)) entry.status = 'conflicted';
    else entry.status = CODES[index !== ' ' ? index : workingTree] ?? 'modified';
    entry.staged = !' ?!'.includes(index);
    entry.unstaged = workingTree !== ' ';
    status.files.push(entry);
  }
  status.clean = status.files.length === 0;
  return status;
}

function parseBranchLine(line: string): Partial<GitStatus> {
  const noCommits = /^(?:No commits yet|Initial commit) on (.+)$/.exec(line);
  if (noCommits) return { branch: noCommits[1] ?? null, hasCommits: false };
  if (line.startsWith('HEAD (no branch)')) return { branch: null, detached: true };
  const match = /^(.+?)(?:\.\.\.(\S+))?(?: \[(.+)\])?$/.exec(line);
  if (!match) return {};
  const counts = match[3] ?? '';
  return {
    branch: match[1] ?? null,
    upstream: match[2] ?? null,
    ahead: Number(/ahead (\d+)/.exec(counts)?.[1] ?? 0),
    behind: Number(/behind (\d+)/.exec(counts)?.[1] ?? 0),
  };
}

/** `git diff --numstat -z`: `added\tdeleted\tpath\0`, or `added\tdeleted\t\0old\0new\0` for renames; `-` for binary. */
export function parseNumstat(output: string): GitDiff['files'] {
  const tokens = output.split('\0');
  const files: GitDiff['files'] = [];
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i] as string;
    if (token === '') continue;
    const [added = '', deleted = '', path = ''] = token.split('\t');
    const binary = added === '-' && deleted === '-';
    const counts = { additions: binary ? null : Number(added), deletions: binary ? null : Number(deleted), binary };
    if (path === '') {
      files.push({ path: tokens[i + 2] ?? '', origPath: tokens[i + 1] ?? '', ...counts });
      i += 2;
    } else files.push({ path, ...counts });
  }
  return files;
}

export function parseLog(output: string): GitCommit[] {
  return output
    .split('\x1e')
    .map((record) => record.replace(/^\n/, ''))
    .filter((record) => record !== '')
    .map((record) => {
      const [hash = '', shortHash = '', name = '', email = '', date = '', message = ''] = record.split('\x1f');
      return { hash, shortHash, author: { name, email }, date, message };
    });
}
