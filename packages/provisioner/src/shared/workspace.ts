import { spawn } from 'node:child_process';
import { HttpError } from '@aop/core';

/**
 * An agent's OpenClaw workspace (its files and git repository), wherever the agent runs. Every operation is one run of
 * a small Node program (`WORKSPACE_PROGRAM`) next to the files: a child process for the local provider, `docker
 * exec` in the agent's container, `pods/exec` in its pod. The program is the one place that resolves paths, so the
 * confinement rules are the same on every provider:
 *
 * - the caller checks every path as text first (`checkRelativePath`: no NUL, not absolute, no `..`, nothing under
 *   `.git`) and hands the program path segments, never a string a shell or git could read as an option;
 * - the program resolves symlinks where the files are (the real path must stay inside the workspace and outside its
 *   `.git`), opens files with `O_NOFOLLOW` and checks the file it actually opened (`/proc/self/fd`), writes through
 *   a temporary file and `rename`, and runs git with an environment built from nothing and every config key that
 *   runs a program overridden, with timeouts that kill git's whole process group and output caps.
 *
 * Nothing goes through a shell: the program and git get argv arrays; the program itself, its request and file
 * content go in on standard input.
 */

/** Largest file `read` returns and `write` accepts. */
export const MAX_FILE_BYTES = 1_048_576;
export const DEFAULT_TREE_DEPTH = 2;
export const MAX_TREE_DEPTH = 6;
/** Entries one tree answer lists at most (`truncated: true` beyond). */
export const MAX_TREE_ENTRIES = 5_000;
const MAX_PATH_LENGTH = 4_096;

export const PATH_MESSAGES = {
  required: 'path is required',
  invalid: 'Invalid path',
  absolute: 'Absolute paths are not allowed',
  traversal: 'Path traversal is not allowed',
  outside: 'Path resolves outside the workspace',
  git: 'Paths inside .git are not accessible',
} as const;

export const FILE_TOO_LARGE = 'File too large (max 1 MB)';
/** Container providers reach the files through the running container (409 otherwise). */

const isGitSegment = (segment: string) => segment.toLowerCase() === '.git';

/**
 * The segments of a workspace-relative path, or 400. `''`, `.` and `/`-only paths are the workspace itself when
 * `allowRoot`. Backslashes are refused rather than guessed at (they are separators on other systems).
 */
export function checkRelativePath(value: unknown, { allowRoot }: { allowRoot: boolean }): string[] {
  if (value === undefined || value === null || value === '') {
    if (allowRoot) return [];
    throw new HttpError(400, PATH_MESSAGES.required);
  }
  if (typeof value !== 'string' || value.length > MAX_PATH_LENGTH || value.includes('\0') || value.includes('\\')) {
    throw new HttpError(400, PATH_MESSAGES.invalid);
  }
  if (value.startsWith('/') || value.startsWith('~')) throw new HttpError(400, PATH_MESSAGES.absolute);
  const segments = value.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw new HttpError(400, PATH_MESSAGES.traversal);
  if (segments.some(isGitSegment)) throw new HttpError(400, PATH_MESSAGES.git);
  if (segments.length === 0 && !allowRoot) throw new HttpError(400, PATH_MESSAGES.required);
  return segments;
}

export interface TreeEntry {
  name: string;
  /** Relative to the workspace, `/`-separated. */
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  /** Bytes, for files; null otherwise. */
  size: number | null;
  modifiedAt: string;
  /** For directories within the requested depth. */
  children?: TreeEntry[];
}

export interface WorkspaceTree {
  /** The listed directory, relative to the workspace (`''` for the workspace itself). */
  path: string;
  entries: TreeEntry[];
  truncated: boolean;
}

export interface FileContent {
  path: string;
  size: number;
  modifiedAt: string;
  encoding: 'utf8' | 'base64';
  content: string;
}

export interface WrittenFile {
  path: string;
  size: number;
  created: boolean;
  modifiedAt: string;
}

export interface GitRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout went past `maxBytes` and was cut (git was stopped). */
  truncated: boolean;
}

export interface GitOptions {
  timeoutMs?: number;
  maxBytes?: number;
  /** Only `GIT_AUTHOR_*` and `GIT_COMMITTER_*` name and email pass: the rest of git's environment is fixed. */
  env?: Record<string, string>;
}

/**
 * What `AgentHost.workspace(agentId)` hands out. Errors the caller should see are the workspace program's own answers,
 * relayed as `HttpError`s (status and message as the program sent them, not catalogue codes): the messages of
 * `PATH_MESSAGES` (400), `File not found`/`Workspace not found` (404), `Not a file`/`Not a directory` (400),
 * `File too large (max 1 MB)` (413), `Git command timed out` (504), `git is not available: …` (500).
 */
export interface AgentWorkspace {
  /** Lists a directory `depth` levels deep; `.git` is left out, symlinks are listed as such and never followed. */
  tree(segments: string[], depth: number): Promise<WorkspaceTree>;
  /** A file's content: UTF-8 text as is, anything else as base64. */
  read(segments: string[]): Promise<FileContent>;
  /** Creates or replaces a file atomically, creating missing parent directories; replacing keeps the file's mode. */
  write(segments: string[], data: Buffer): Promise<WrittenFile>;
  /** `.git` is a real directory at the workspace root and git agrees that the workspace is the top level. */
  isRepository(): Promise<boolean>;
  /** `git <args>` in the workspace (safe config and environment added). Never throws for a non-zero exit. */
  git(args: string[], options?: GitOptions): Promise<GitRun>;
}

// ---------------------------------------------------------------- the program

/** `-c` overrides for every config key that would make git run a program chosen by the repository. */
export const SAFE_GIT_CONFIG = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.pager=cat',
  'core.editor=true',
  'core.askPass=',
  'core.sshCommand=ssh -o BatchMode=yes',
  'credential.helper=',
  'diff.external=',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'protocol.ext.allow=never',
  'protocol.file.allow=never',
  'color.ui=false',
  'core.quotePath=false',
  'gc.auto=0',
  'maintenance.auto=false',
].flatMap((entry) => ['-c', entry]);

/**
 * The workspace program, plain CommonJS for any Node from 18 on (the OpenClaw image's, or the backend's own). It
 * answers one JSON line on standard output: `{ ok: true, value }` or `{ ok: false, status, error }`. It is not
 * passed on the command line (`pods/exec` puts the command in the request URL, where 10 KB of script would not
 * pass every proxy), but on standard input: see `WORKSPACE_BOOT`.
 */
export const WORKSPACE_PROGRAM = `'use strict';
const fs = require('fs'), path = require('path'), cp = require('child_process'), crypto = require('crypto');
const [rootArg, homeArg] = process.argv.slice(1);
const C = fs.constants, MAX_FILE = ${MAX_FILE_BYTES}, MAX_ENTRIES = ${MAX_TREE_ENTRIES}, STDERR_MAX = 65536;
const M = ${JSON.stringify({ ...PATH_MESSAGES, tooLarge: FILE_TOO_LARGE })};
const SAFE = ${JSON.stringify(SAFE_GIT_CONFIG)};
const IDENTITY = /^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL)$/;
class Refusal extends Error { constructor(status, message) { super(message); this.status = status; } }
const isGit = (s) => s.toLowerCase() === '.git';
const codeOf = (e) => (e && e.code) || '';
let root = '';
const rel = (p) => path.relative(root, p).split(path.sep).join('/');
function checkReal(real) {
  if (real !== root && !real.startsWith(root + path.sep)) throw new Refusal(400, M.outside);
  if (rel(real).split('/').some(isGit)) throw new Refusal(400, M.git);
}
function resolveExisting(segs) {
  let real;
  try { real = fs.realpathSync(path.join(root, ...segs)); } catch (e) {
    if (codeOf(e) === 'ENOENT') { checkDangling(segs); return null; }
    if (codeOf(e) === 'ENOTDIR') return null;
    throw e;
  }
  checkReal(real);
  return real;
}
// A link whose target is missing is refused when it points outside (nobody learns what exists out there).
function checkDangling(segs) {
  if (segs.length === 0) return;
  const link = path.join(root, ...segs);
  let info = null, parent = null, target = null;
  try { info = fs.lstatSync(link); } catch {}
  if (!info || !info.isSymbolicLink()) return;
  try { parent = fs.realpathSync(path.dirname(link)); } catch {}
  try { target = fs.readlinkSync(link); } catch {}
  if (parent === null || target === null) throw new Refusal(400, M.outside);
  checkReal(path.resolve(parent, target));
}
function resolveRequired(segs) {
  const real = resolveExisting(segs);
  if (real === null) throw new Refusal(404, 'File not found');
  return real;
}
// The file behind an open descriptor must still be inside (Linux; elsewhere the realpath check stands).
function checkOpened(fd) {
  let opened = null;
  try { opened = fs.readlinkSync('/proc/self/fd/' + fd); } catch {}
  if (opened !== null) checkReal(opened);
}
const typeOf = (i) => i.isSymbolicLink() ? 'symlink' : i.isDirectory() ? 'directory' : i.isFile() ? 'file' : 'other';
function list(dir, depth, budget) {
  let names = [];
  try { names = fs.readdirSync(dir); } catch {}
  names = names.filter((n) => !isGit(n)).sort((a, b) => a.localeCompare(b));
  const entries = [];
  for (const name of names) {
    if (budget.left <= 0) { budget.truncated = true; break; }
    const abs = path.join(dir, name);
    let info;
    try { info = fs.lstatSync(abs); } catch { continue; }
    budget.left -= 1;
    const entry = { name, path: rel(abs), type: typeOf(info), size: info.isFile() ? info.size : null, modifiedAt: info.mtime.toISOString() };
    if (entry.type === 'directory' && depth > 1) entry.children = list(abs, depth - 1, budget);
    entries.push(entry);
  }
  return entries.sort((a, b) => Number(b.type === 'directory') - Number(a.type === 'directory') || a.name.localeCompare(b.name));
}
function tree(segs, depth) {
  const real = resolveRequired(segs);
  if (!fs.statSync(real).isDirectory()) throw new Refusal(400, 'Not a directory');
  const budget = { left: MAX_ENTRIES, truncated: false };
  const entries = list(real, depth, budget);
  return { path: rel(real), entries, truncated: budget.truncated };
}
function decodeText(data) {
  if (data.includes(0)) return null;
  try { return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data); } catch { return null; }
}
function read(segs) {
  const real = resolveRequired(segs);
  let fd;
  // O_NOFOLLOW: real has no symlinks left, one appearing now is a swap; O_NONBLOCK: a FIFO cannot hang the read.
  try { fd = fs.openSync(real, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK); } catch (e) {
    if (codeOf(e) === 'ELOOP') throw new Refusal(400, M.outside);
    if (codeOf(e) === 'ENOENT') throw new Refusal(404, 'File not found');
    if (codeOf(e) === 'EISDIR') throw new Refusal(400, 'Not a file');
    throw e;
  }
  try {
    checkOpened(fd);
    const info = fs.fstatSync(fd);
    if (!info.isFile()) throw new Refusal(400, 'Not a file');
    if (info.size > MAX_FILE) throw new Refusal(413, M.tooLarge);
    const buffer = Buffer.alloc(info.size);
    const data = buffer.subarray(0, fs.readSync(fd, buffer, 0, info.size, 0));
    const text = decodeText(data);
    return { path: rel(real), size: data.length, modifiedAt: info.mtime.toISOString(), encoding: text === null ? 'base64' : 'utf8', content: text === null ? data.toString('base64') : text };
  } finally { fs.closeSync(fd); }
}
// mkdir -p for a file's parent: the deepest existing ancestor is checked first, the result after creating.
function ensureParent(segs) {
  let existing = segs.length, real = null;
  while (existing >= 0) { real = resolveExisting(segs.slice(0, existing)); if (real !== null) break; existing -= 1; }
  if (real === null) throw new Refusal(404, 'Workspace not found');
  if (!fs.statSync(real).isDirectory()) throw new Refusal(400, 'Not a directory');
  if (existing === segs.length) return real;
  const created = path.join(real, ...segs.slice(existing));
  fs.mkdirSync(created, { recursive: true });
  const check = fs.realpathSync(created);
  checkReal(check);
  return check;
}
function write(segs, data) {
  if (data.length > MAX_FILE) throw new Refusal(413, M.tooLarge);
  const existing = resolveExisting(segs);
  let target, mode = 0o644;
  if (existing !== null) {
    const info = fs.statSync(existing);
    if (!info.isFile()) throw new Refusal(400, 'Not a file');
    target = existing;
    mode = info.mode & 0o777;
  } else target = path.join(ensureParent(segs.slice(0, -1)), segs[segs.length - 1]);
  const tmp = path.join(path.dirname(target), '.' + path.basename(target) + '.' + crypto.randomBytes(6).toString('hex') + '.tmp');
  const fd = fs.openSync(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, mode);
  try {
    checkOpened(fd);
    let off = 0;
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  } catch (e) {
    try { fs.closeSync(fd); } catch {}
    try { fs.unlinkSync(tmp); } catch {}
    throw e;
  }
  try { fs.renameSync(tmp, target); } catch (e) { try { fs.unlinkSync(tmp); } catch {} throw e; }
  return { path: rel(target), size: data.length, created: existing === null, modifiedAt: fs.statSync(target).mtime.toISOString() };
}
// git as if it were the agent: no shell, an environment built from nothing, discovery stopped at the workspace.
function git(args, opts) {
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string' || a.includes('\\0'))) throw new Refusal(400, 'Invalid git arguments');
  const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: homeArg, LANG: 'C.UTF-8', GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CEILING_DIRECTORIES: path.dirname(root) };
  for (const [k, v] of Object.entries(opts.env || {})) if (IDENTITY.test(k) && typeof v === 'string' && !v.includes('\\0')) env[k] = v;
  const timeoutMs = opts.timeoutMs || 15000, maxBytes = opts.maxBytes || 2097152;
  return new Promise((resolve, reject) => {
    const child = cp.spawn('git', ['--no-pager', ...SAFE, '-C', root, ...args], { env, cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    let outBytes = 0, err = '', truncated = false, timedOut = false;
    const killGroup = () => { try { if (child.pid) process.kill(-child.pid, 'SIGKILL'); } catch {} };
    const timer = setTimeout(() => { timedOut = true; killGroup(); }, timeoutMs);
    child.stdout.on('data', (chunk) => {
      if (truncated) return;
      const room = maxBytes - outBytes;
      if (chunk.length > room) { out.push(chunk.subarray(0, room)); outBytes = maxBytes; truncated = true; killGroup(); return; }
      out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr.on('data', (chunk) => { if (err.length < STDERR_MAX) err += chunk.toString('utf8'); });
    child.once('error', (e) => { clearTimeout(timer); reject(new Refusal(500, 'git is not available: ' + e.message)); });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code: truncated ? 0 : code, stdout: Buffer.concat(out).toString('utf8'), stderr: err, truncated, timedOut });
    });
  });
}
async function isRepository() {
  let info = null;
  try { info = fs.lstatSync(path.join(root, '.git')); } catch {}
  if (!info || !info.isDirectory()) return false;
  const top = await git(['rev-parse', '--show-toplevel'], {});
  return top.code === 0 && top.stdout.trim() === root;
}
// Exactly size bytes: what the boot read past the request first, then the rest of standard input.
function readInput(size) {
  if (!(size > 0)) return Promise.resolve(Buffer.alloc(0));
  const chunks = [input];
  let got = input.length;
  if (got >= size) return Promise.resolve(input.subarray(0, size));
  return new Promise((resolve, reject) => {
    process.stdin.on('data', (chunk) => {
      chunks.push(chunk);
      got += chunk.length;
      if (got >= size) { process.stdin.pause(); resolve(Buffer.concat(chunks).subarray(0, size)); }
    });
    process.stdin.once('end', () => reject(new Refusal(400, 'content ended early')));
    process.stdin.once('error', reject);
    process.stdin.resume();
  });
}
async function main() {
  const req = JSON.parse(requestText);
  // Content first: an answer sent before the input was taken would leave the caller writing into a closed pipe.
  const data = req.op === 'write' ? await readInput(req.size) : null;
  const segs = Array.isArray(req.path) ? req.path : [];
  for (const s of segs) {
    if (typeof s !== 'string' || s === '' || s === '.' || s.includes('/') || s.includes('\\\\') || s.includes('\\0')) throw new Refusal(400, M.invalid);
    if (s === '..') throw new Refusal(400, M.traversal);
    if (isGit(s)) throw new Refusal(400, M.git);
  }
  try { root = fs.realpathSync(rootArg); if (!fs.statSync(root).isDirectory()) throw new Refusal(404, 'Workspace not found'); } catch (e) {
    if (codeOf(e) === 'ENOENT' || codeOf(e) === 'ENOTDIR') throw new Refusal(404, 'Workspace not found');
    throw e;
  }
  switch (req.op) {
    case 'tree': return tree(segs, req.depth);
    case 'read': return read(segs);
    case 'write': if (segs.length === 0) throw new Refusal(400, M.required); return write(segs, data);
    case 'repo': return isRepository();
    case 'git': return git(req.args, req);
    default: throw new Refusal(400, 'Unknown operation');
  }
}
setTimeout(() => process.exit(124), Number(JSON.parse(requestText).deadlineMs) || 60000).unref();
const reply = (answer) => process.stdout.write(JSON.stringify(answer) + '\\n', () => process.exit(0));
main().then((value) => reply({ ok: true, value }), (e) => reply(e instanceof Refusal ? { ok: false, status: e.status, error: e.message } : { ok: false, error: String((e && e.message) || e) }));
`;

/**
 * What the command line carries: `node -e WORKSPACE_BOOT -- <workspace> <home> <program bytes> <request bytes>`.
 * Standard input is the program, the request (JSON), then the content to write. The boot reads the first two and runs
 * the program with the request and whatever it read past it. The content is exactly the request's `size` bytes: the
 * program never waits for an end of input, which `pods/exec` cannot always send.
 */
export const WORKSPACE_BOOT = `'use strict';
const P = Number(process.argv[3]), R = Number(process.argv[4]);
let got = Buffer.alloc(0);
const take = (chunk) => {
  got = Buffer.concat([got, chunk]);
  if (got.length < P + R) return;
  process.stdin.off('data', take);
  process.stdin.pause();
  const run = require('vm').runInThisContext('(function (require, requestText, input) {' + got.subarray(0, P).toString('utf8') + '\\n})', { filename: 'aop-workspace.js' });
  run(require, got.subarray(P, P + R).toString('utf8'), got.subarray(P + R));
};
process.stdin.on('data', take);
`;

// ---------------------------------------------------------------- running it

export interface ProgramRunOptions {
  /** Written to the program's standard input. */
  stdin: Buffer;
  /** The whole run, after which the runner gives up on it. */
  timeoutMs: number;
  /** Standard output beyond this is an error. */
  maxOutputBytes: number;
}

export interface ProgramOutput {
  exitCode: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Runs an argv (no shell) where the agent's files are: a child process, `docker exec`, `pods/exec`. */
export type ProgramRunner = (argv: string[], options: ProgramRunOptions) => Promise<ProgramOutput>;

/** Where the program finds things, as seen by the runner's processes. */
export interface WorkspaceLocation {
  /** The workspace directory. */
  root: string;
  /** The agent's home (its ssh keys and known hosts are the ones a push uses). */
  home: string;
  /** The Node command, e.g. `['node']` in a container. */
  node: string[];
}

const DEFAULT_FILE_TIMEOUT_MS = 30_000;
const DEFAULT_GIT_TIMEOUT_MS = 15_000;
/** JSON of a 2 MB git output or a 1 MB base64 file fits several times over. */
const MAX_PROGRAM_OUTPUT = 16 * 1024 * 1024;
/** The program stops itself at its deadline; the runner waits this much longer before giving up on it. */
const RUNNER_GRACE_MS = 5_000;
const PROGRAM_BYTES = Buffer.from(WORKSPACE_PROGRAM);

type Answer<T> = { ok: true; value: T } | { ok: false; status?: number; error: string };

/** `AgentWorkspace` through the workspace program and a runner. */
export class ProgramWorkspace implements AgentWorkspace {
  constructor(
    private readonly location: WorkspaceLocation,
    private readonly run: ProgramRunner,
  ) {}

  private async call<T>(request: Record<string, unknown>, deadlineMs: number, content?: Buffer): Promise<T> {
    const { node, root, home } = this.location;
    const requestBytes = Buffer.from(JSON.stringify({ ...request, deadlineMs }));
    const argv = [...node, '-e', WORKSPACE_BOOT, '--', root, home, String(PROGRAM_BYTES.length), String(requestBytes.length)];
    const output = await this.run(argv, {
      stdin: Buffer.concat([PROGRAM_BYTES, requestBytes, content ?? Buffer.alloc(0)]),
      timeoutMs: deadlineMs + RUNNER_GRACE_MS,
      maxOutputBytes: MAX_PROGRAM_OUTPUT,
    });
    let answer: Answer<T>;
    try {
      answer = JSON.parse(output.stdout.toString('utf8')) as Answer<T>;
    } catch {
      const why = output.stderr.trim().split('\n').at(-1) || 'no output';
      throw new Error(`The workspace program failed (exit code ${output.exitCode}): ${why}`);
    }
    if (answer.ok) return answer.value;
    if (typeof answer.status === 'number') throw new HttpError(answer.status, answer.error);
    throw new Error(`Workspace access failed: ${answer.error}`);
  }

  tree(segments: string[], depth: number): Promise<WorkspaceTree> {
    return this.call({ op: 'tree', path: segments, depth }, DEFAULT_FILE_TIMEOUT_MS);
  }

  read(segments: string[]): Promise<FileContent> {
    return this.call({ op: 'read', path: segments }, DEFAULT_FILE_TIMEOUT_MS);
  }

  async write(segments: string[], data: Buffer): Promise<WrittenFile> {
    if (data.length > MAX_FILE_BYTES) throw new HttpError(413, FILE_TOO_LARGE);
    return this.call({ op: 'write', path: segments, size: data.length }, DEFAULT_FILE_TIMEOUT_MS, data);
  }

  isRepository(): Promise<boolean> {
    return this.call({ op: 'repo' }, DEFAULT_GIT_TIMEOUT_MS + DEFAULT_FILE_TIMEOUT_MS);
  }

  async git(args: string[], options: GitOptions = {}): Promise<GitRun> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
    const request = { op: 'git', args, timeoutMs, env: options.env ?? {}, ...(options.maxBytes ? { maxBytes: options.maxBytes } : {}) };
    const result = await this.call<GitRun & { timedOut: boolean }>(request, timeoutMs + DEFAULT_FILE_TIMEOUT_MS);
    if (result.timedOut) throw new HttpError(504, 'Git command timed out');
    return { code: result.code, stdout: result.stdout, stderr: result.stderr, truncated: result.truncated };
  }
}

/**
 * Runs the program as a child process of this one (the local provider), in its own process group so a timeout takes
 * whatever it started too, with only `PATH` and `LANG` from this process's environment (none of the backend's
 * secrets).
 */
export const runProgramLocally: ProgramRunner = (argv, { stdin, timeoutMs, maxOutputBytes }) =>
  new Promise((resolve, reject) => {
    const [command, ...args] = argv;
    if (!command) return reject(new Error('empty command'));
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let failure: Error | null = null;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      failure = new Error(`The workspace program did not finish within ${Math.round(timeoutMs / 1000)} s`);
      killGroup();
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxOutputBytes) {
        failure = new Error('The workspace program answered more than expected');
        killGroup();
      } else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < 65_536) err += chunk.toString('utf8');
    });
    // The program may answer (a refusal) before taking all of its input.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else resolve({ exitCode: code, stdout: Buffer.concat(out), stderr: err });
    });
  });
