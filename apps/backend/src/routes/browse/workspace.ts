import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { HttpError } from '@aop/core';

/**
 * Files of an agent's workspace, addressed by paths relative to it. Every path is checked twice: as text (no NUL,
 * not absolute, no `..`, nothing under `.git`) and after resolving symlinks (the real path must stay inside the
 * workspace and outside its `.git`). Reads check the file they actually opened (`/proc/self/fd`), so a symlink
 * swapped in between the check and the open is caught too.
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

const isEnoent = (err: unknown) => (err as NodeJS.ErrnoException)?.code === 'ENOENT';

/** An agent's workspace directory, resolved once per request. */
export class Workspace {
  private constructor(
    /** The real path of the workspace (symlinks resolved). */
    readonly root: string,
  ) {}

  /** 404 `Workspace not found` until the agent's first start created it. */
  static async open(dir: string): Promise<Workspace> {
    try {
      const root = await realpath(dir);
      if (!(await stat(root)).isDirectory()) throw new HttpError(404, 'Workspace not found');
      return new Workspace(root);
    } catch (err) {
      if (isEnoent(err)) throw new HttpError(404, 'Workspace not found');
      throw err;
    }
  }

  /** The workspace-relative form of an absolute path inside it (`''` for the root). */
  relativeOf(absolute: string): string {
    return relative(this.root, absolute).split(sep).join('/');
  }

  /** Whether a real (symlink-free) path is the workspace or below it, and not inside its `.git`. */
  private checkReal(real: string): void {
    if (real !== this.root && !real.startsWith(this.root + sep)) throw new HttpError(400, PATH_MESSAGES.outside);
    if (this.relativeOf(real).split('/').some(isGitSegment)) throw new HttpError(400, PATH_MESSAGES.git);
  }

  /** The real path of an existing entry, checked; null when it does not exist (or is a dangling symlink). */
  async resolveExisting(segments: string[]): Promise<string | null> {
    let real: string;
    try {
      real = await realpath(join(this.root, ...segments));
    } catch (err) {
      if (isEnoent(err)) {
        await this.checkDanglingLink(segments);
        return null;
      }
      if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw err;
    }
    this.checkReal(real);
    return real;
  }

  /**
   * A symlink whose target does not exist is refused when it points outside the workspace (so nobody learns what
   * exists out there); one pointing inside reads as missing, and a write replaces the link itself.
   */
  private async checkDanglingLink(segments: string[]): Promise<void> {
    if (segments.length === 0) return;
    const link = join(this.root, ...segments);
    const info = await lstat(link).catch(() => null);
    if (!info?.isSymbolicLink()) return;
    const parent = await realpath(dirname(link)).catch(() => null);
    const target = await readlink(link).catch(() => null);
    if (parent === null || target === null) throw new HttpError(400, PATH_MESSAGES.outside);
    this.checkReal(resolve(parent, target));
  }

  /** The entry or 404 `File not found`. */
  async resolveRequired(segments: string[]): Promise<string> {
    const real = await this.resolveExisting(segments);
    if (real === null) throw new HttpError(404, 'File not found');
    return real;
  }

  /**
   * Lists a directory `depth` levels deep. `.git` is left out (its internals are git's, not the user's); symlinks
   * are listed as such and never followed.
   */
  async tree(segments: string[], depth: number): Promise<{ path: string; entries: TreeEntry[]; truncated: boolean }> {
    const real = await this.resolveRequired(segments);
    if (!(await stat(real)).isDirectory()) throw new HttpError(400, 'Not a directory');
    const budget = { left: MAX_TREE_ENTRIES, truncated: false };
    const entries = await this.list(real, depth, budget);
    return { path: this.relativeOf(real), entries, truncated: budget.truncated };
  }

  private async list(dir: string, depth: number, budget: { left: number; truncated: boolean }): Promise<TreeEntry[]> {
    const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => !isGitSegment(name));
    names.sort((a, b) => a.localeCompare(b));
    const entries: TreeEntry[] = [];
    for (const name of names) {
      if (budget.left <= 0) {
        budget.truncated = true;
        break;
      }
      const absolute = join(dir, name);
      const info = await lstat(absolute).catch(() => null);
      if (!info) continue; // removed while listing
      budget.left -= 1;
      const entry: TreeEntry = {
        name,
        path: this.relativeOf(absolute),
        type: entryType(info),
        size: info.isFile() ? info.size : null,
        modifiedAt: info.mtime.toISOString(),
      };
      if (entry.type === 'directory' && depth > 1) entry.children = await this.list(absolute, depth - 1, budget);
      entries.push(entry);
    }
    // Directories first, then files, each by name.
    return entries.sort((a, b) => Number(b.type === 'directory') - Number(a.type === 'directory') || a.name.localeCompare(b.name));
  }

  /** A file's content: UTF-8 text as is, anything else as base64. */
  async read(segments: string[]): Promise<FileContent> {
    const real = await this.resolveRequired(segments);
    // O_NOFOLLOW: `real` has no symlinks left; one appearing now is a swap and fails the open.
    const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ELOOP') throw new HttpError(400, PATH_MESSAGES.outside);
      if (err.code === 'ENOENT') throw new HttpError(404, 'File not found');
      if (err.code === 'EISDIR') throw new HttpError(400, 'Not a file');
      throw err;
    });
    try {
      await this.checkOpened(handle.fd);
      const info = await handle.stat();
      if (!info.isFile()) throw new HttpError(400, 'Not a file');
      if (info.size > MAX_FILE_BYTES) throw new HttpError(413, 'File too large (max 1 MB)');
      const buffer = Buffer.alloc(info.size);
      const { bytesRead } = await handle.read(buffer, 0, info.size, 0);
      const data = buffer.subarray(0, bytesRead);
      const text = decodeText(data);
      return {
        path: this.relativeOf(real),
        size: data.length,
        modifiedAt: info.mtime.toISOString(),
        encoding: text === null ? 'base64' : 'utf8',
        content: text ?? data.toString('base64'),
      };
    } finally {
      await handle.close();
    }
  }

  /** The file behind an open descriptor must still be inside the workspace (Linux; elsewhere the realpath check stands). */
  private async checkOpened(fd: number): Promise<void> {
    const opened = await readlink(`/proc/self/fd/${fd}`).catch(() => null);
    if (opened !== null) this.checkReal(opened);
  }

  /**
   * Creates or replaces a file atomically (a temporary file in the same directory, then `rename`), creating missing
   * parent directories. Replacing keeps the file's mode; a symlink inside the workspace is written through.
   */
  async write(segments: string[], data: Buffer): Promise<{ path: string; size: number; created: boolean; modifiedAt: string }> {
    if (data.length > MAX_FILE_BYTES) throw new HttpError(413, 'File too large (max 1 MB)');
    const existing = await this.resolveExisting(segments);
    let target: string;
    let mode = 0o644;
    if (existing !== null) {
      const info = await stat(existing);
      if (!info.isFile()) throw new HttpError(400, 'Not a file');
      target = existing;
      mode = info.mode & 0o777;
    } else {
      const parent = await this.ensureParent(segments.slice(0, -1));
      target = join(parent, segments[segments.length - 1] as string);
    }
    const tmp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
    const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    try {
      await this.checkOpened(handle.fd);
      await handle.writeFile(data);
      await handle.sync();
    } catch (err) {
      await handle.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await handle.close();
    try {
      await rename(tmp, target);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    const info = await stat(target);
    return { path: this.relativeOf(target), size: data.length, created: existing === null, modifiedAt: info.mtime.toISOString() };
  }

  /** `mkdir -p` for a file's parent: the deepest existing ancestor is checked first, the result after creating. */
  private async ensureParent(segments: string[]): Promise<string> {
    let existing = segments.length;
    let real: string | null = null;
    while (existing >= 0) {
      real = await this.resolveExisting(segments.slice(0, existing));
      if (real !== null) break;
      existing -= 1;
    }
    if (real === null) throw new HttpError(404, 'Workspace not found');
    if (!(await stat(real)).isDirectory()) throw new HttpError(400, 'Not a directory');
    if (existing === segments.length) return real;
    const created = join(real, ...segments.slice(existing));
    await mkdir(created, { recursive: true });
    const check = await realpath(created);
    this.checkReal(check);
    return check;
  }
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

export interface FileContent {
  path: string;
  size: number;
  modifiedAt: string;
  encoding: 'utf8' | 'base64';
  content: string;
}

function entryType(info: Stats): TreeEntry['type'] {
  if (info.isSymbolicLink()) return 'symlink';
  if (info.isDirectory()) return 'directory';
  if (info.isFile()) return 'file';
  return 'other';
}

/** The text of valid UTF-8 without NUL bytes; null for anything binary. */
function decodeText(data: Buffer): string | null {
  if (data.includes(0)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data);
  } catch {
    return null;
  }
}

/** Content posted to `write`: text, or base64 for binary files. */
export function decodeContent(content: unknown, encoding: unknown): Buffer {
  if (content === undefined || content === null) throw new HttpError(400, 'content is required');
  if (typeof content !== 'string') throw new HttpError(400, 'content must be a string');
  const kind = encoding ?? 'utf8';
  if (kind === 'utf8') return Buffer.from(content, 'utf8');
  if (kind === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content) || content.length % 4 !== 0) throw new HttpError(400, 'content is not valid base64');
    return Buffer.from(content, 'base64');
  }
  throw new HttpError(400, 'encoding must be utf8 or base64');
}
