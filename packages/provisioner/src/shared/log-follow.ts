import { type FSWatcher, watch } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/**
 * Follows a log file the way `tail -F` does: new complete lines as they are appended, across rotation (the file is
 * renamed away and a new one created) and truncation. The directory is watched rather than the file (a watch on a
 * renamed file goes quiet), and a poll backs the watch up on filesystems where events are unreliable.
 */

export interface FollowOptions {
  /** Lines already in the file to deliver first (default 0). */
  tail?: number;
  /** Safety-net poll (default 1 s). */
  pollMs?: number;
  /** Longer lines are cut (default 16 KiB). */
  maxLineLength?: number;
}

export interface Follower {
  close(): void;
}

/** Bytes read from the end of the file to find the last `tail` lines. */
const TAIL_WINDOW = 256 * 1024;
/** Most bytes read per wake-up; the rest on the next one. */
const CHUNK = 1024 * 1024;

export async function followFile(
  file: string,
  onLines: (lines: string[]) => void,
  { tail = 0, pollMs = 1_000, maxLineLength = 16 * 1024 }: FollowOptions = {},
): Promise<Follower> {
  let closed = false;
  let position = 0;
  let inode: number | null = null;
  let pending: Buffer = Buffer.alloc(0);
  let reading = false;
  let again = false;

  const cut = (line: string) => (line.length > maxLineLength ? `${line.slice(0, maxLineLength)}…` : line);
  const deliver = (lines: string[]) => {
    const complete = lines.map(cut);
    if (complete.length > 0 && !closed) onLines(complete);
  };

  const initial = await stat(file).catch(() => null);
  if (initial) {
    inode = initial.ino;
    position = initial.size;
    if (tail > 0 && initial.size > 0) {
      const start = Math.max(0, initial.size - TAIL_WINDOW);
      const text = (await readRange(file, start, initial.size)).toString('utf8');
      const lines = text.split('\n');
      lines.pop(); // the part after the last newline is a line still being written
      if (start > 0) lines.shift(); // cut in the middle
      deliver(lines.filter((line) => line !== '').slice(-tail));
    }
  }

  const readNew = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        const info = await stat(file).catch(() => null);
        if (!info || closed) continue;
        if (inode !== null && (info.ino !== inode || info.size < position)) {
          // Rotated or truncated: the new file is read from its start.
          position = 0;
          pending = Buffer.alloc(0);
        }
        inode = info.ino;
        if (info.size <= position) continue;
        const end = Math.min(info.size, position + CHUNK);
        // Split on newline bytes, so a character cut by a chunk boundary waits for its other bytes.
        const data = Buffer.concat([pending, await readRange(file, position, end)]);
        position = end;
        const last = data.lastIndexOf(0x0a);
        pending = last < 0 ? data : data.subarray(last + 1);
        const lines = last < 0 ? [] : data.subarray(0, last).toString('utf8').split('\n');
        if (pending.length > maxLineLength * 4) {
          // A line with no end in sight: deliver what there is.
          lines.push(pending.toString('utf8'));
          pending = Buffer.alloc(0);
        }
        deliver(lines);
        if (end < info.size) again = true;
      } while (again && !closed);
    } finally {
      reading = false;
    }
  };

  const name = basename(file);
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      if (!changed || changed.toString() === name) void readNew().catch(() => undefined);
    });
    watcher.on('error', () => undefined);
  } catch {
    // no directory yet, or no inotify: the poll alone follows the file
  }
  const timer = setInterval(() => void readNew().catch(() => undefined), pollMs);
  timer.unref();

  return {
    close() {
      closed = true;
      clearInterval(timer);
      watcher?.close();
    },
  };
}

async function readRange(file: string, start: number, end: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(end - start);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * The lines of a live log as an async iterable, fed by whoever follows the source (`push`), ended by the consumer's
 * signal, the source (`end`) or a failure (`fail`, thrown to the consumer). Lines wait in memory while the consumer
 * is busy, up to `maxBuffered` (older ones are dropped beyond: a stuck consumer must not grow the backend).
 */
export class LineQueue implements AsyncIterable<string> {
  private readonly lines: string[] = [];
  private wake: (() => void) | null = null;
  private done = false;
  private failure: unknown = null;

  constructor(
    private readonly signal: AbortSignal,
    private readonly maxBuffered = 10_000,
  ) {
    signal.addEventListener('abort', () => this.end(), { once: true });
  }

  get closed(): boolean {
    return this.done || this.signal.aborted;
  }

  push(...lines: string[]): void {
    if (this.closed) return;
    this.lines.push(...lines);
    if (this.lines.length > this.maxBuffered) this.lines.splice(0, this.lines.length - this.maxBuffered);
    this.notify();
  }

  end(): void {
    this.done = true;
    this.notify();
  }

  fail(error: unknown): void {
    this.failure ??= error;
    this.end();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      if (this.signal.aborted) return;
      const line = this.lines.shift();
      if (line !== undefined) {
        yield line;
        continue;
      }
      if (this.done) {
        if (this.failure !== null) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}

/** Splits a byte stream into complete lines (UTF-8 intact across chunks; `\r\n` endings trimmed; long lines cut). */
export class LineSplitter {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxLineLength = 16 * 1024) {}

  push(chunk: Buffer): string[] {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const last = data.lastIndexOf(0x0a);
    this.pending = last < 0 ? data : data.subarray(last + 1);
    const lines = last < 0 ? [] : data.subarray(0, last).toString('utf8').split('\n');
    if (this.pending.length > this.maxLineLength * 4) {
      // A line with no end in sight: deliver what there is.
      lines.push(this.pending.toString('utf8'));
      this.pending = Buffer.alloc(0);
    }
    return lines.map((line) => this.cut(line.endsWith('\r') ? line.slice(0, -1) : line));
  }

  /** What is left after the source ended (a last line without a newline). */
  flush(): string[] {
    const rest = this.pending.toString('utf8');
    this.pending = Buffer.alloc(0);
    return rest === '' ? [] : [this.cut(rest)];
  }

  private cut(line: string): string {
    return line.length > this.maxLineLength ? `${line.slice(0, this.maxLineLength)}…` : line;
  }
}

/**
 * An RFC 3339 time with up to nanoseconds (`2026-01-01T10:00:00.123456789Z`, as Docker and the kubelet write log
 * timestamps) in nanoseconds since the epoch; null when it is not one. Milliseconds would let two lines of the same
 * millisecond look like one when a follow resumes.
 */
export function parseTimeNs(text: string): bigint | null {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (!match) return null;
  const seconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(seconds)) return null;
  return BigInt(seconds) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/** A log line read with timestamps (`<RFC 3339 time> <text>`) → its time in nanoseconds and its text. */
export function splitTimestampNs(line: string): { ns: bigint | null; text: string } {
  const space = line.indexOf(' ');
  const ns = space > 0 ? parseTimeNs(line.slice(0, space)) : null;
  return ns === null ? { ns: null, text: line } : { ns, text: line.slice(space + 1) };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
