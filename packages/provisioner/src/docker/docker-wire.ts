import type { AgentStats } from '../host.js';

/**
 * Wire formats of the Docker Engine API that the docker host reads and writes: tar archives
 * (`PUT /containers/{id}/archive`), multiplexed log streams (`GET /containers/{id}/logs`), one-shot stats and image
 * references. Pure functions, no I/O.
 */

export interface TarEntry {
  /** Path relative to the extraction directory; directories may end with `/`. */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  uid: number;
  gid: number;
  content?: string | Buffer;
  mtime?: Date;
}

const BLOCK = 512;

function writeOctal(header: Buffer, offset: number, length: number, value: number): void {
  const digits = value.toString(8);
  if (digits.length > length - 1) throw new Error(`tar: value ${value} does not fit in ${length - 1} octal digits`);
  header.write(`${digits.padStart(length - 1, '0')}\0`, offset, length, 'ascii');
}

/**
 * A POSIX ustar archive of `entries`. The engine applies each header's mode, uid and gid when it extracts, so a
 * directory entry also fixes the ownership and mode of a directory that already exists (e.g. a volume's root).
 */
export function tarArchive(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = entry.type === 'file' ? Buffer.from(entry.content ?? '') : Buffer.alloc(0);
    const name = entry.type === 'directory' && !entry.name.endsWith('/') ? `${entry.name}/` : entry.name;
    if (Buffer.byteLength(name) > 100) throw new Error(`tar: entry name longer than 100 bytes: ${name}`);
    const header = Buffer.alloc(BLOCK);
    header.write(name, 0, 100, 'utf8');
    writeOctal(header, 100, 8, entry.mode & 0o7777);
    writeOctal(header, 108, 8, entry.uid);
    writeOctal(header, 116, 8, entry.gid);
    writeOctal(header, 124, 12, body.length);
    writeOctal(header, 136, 12, Math.floor((entry.mtime ?? new Date()).getTime() / 1000));
    header.write(entry.type === 'directory' ? '5' : '0', 156, 1, 'ascii');
    header.write('ustar\u000000', 257, 8, 'ascii'); // magic "ustar\0", version "00"
    // The checksum is computed with its own field set to spaces.
    header.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
    blocks.push(header, body, Buffer.alloc((BLOCK - (body.length % BLOCK)) % BLOCK));
  }
  blocks.push(Buffer.alloc(2 * BLOCK)); // end of archive
  return Buffer.concat(blocks);
}

/** The content of the first regular file in a ustar archive (the engine's `GET …/archive` of one file), else null. */
export function readTarFile(data: Buffer): Buffer | null {
  for (let offset = 0; offset + BLOCK <= data.length; ) {
    const header = data.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) return null;
    const size = Number.parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    if (!Number.isInteger(size) || size < 0) return null;
    const type = String.fromCharCode(header[156] ?? 0);
    if (type === '0' || type === '\0') return data.subarray(offset + BLOCK, offset + BLOCK + size);
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return null;
}

export interface LogLine {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** A multiplexed stream starts with a frame header: stream type 0, 1 or 2, then three zero bytes. */
function isMultiplexed(data: Buffer): boolean {
  return data.length >= 8 && (data[0] ?? 9) <= 2 && data[1] === 0 && data[2] === 0 && data[3] === 0;
}

/**
 * Splits the output of `GET /containers/{id}/logs` (no TTY) into lines. Each frame is an 8-byte header
 * (stream type, three zero bytes, payload size as uint32 big-endian) and its payload; a line can span frames
 * (the engine splits long lines), so bytes are collected per stream until a newline. Output of a TTY container
 * is not multiplexed and is read as plain stdout.
 */
export function demuxLogs(data: Buffer): LogLine[] {
  const lines: LogLine[] = [];
  const pending: Record<LogLine['stream'], Buffer[]> = { stdout: [], stderr: [] };
  const emit = (stream: LogLine['stream'], chunk: Buffer) => {
    let rest = chunk;
    for (let newline = rest.indexOf(0x0a); newline >= 0; newline = rest.indexOf(0x0a)) {
      const line = Buffer.concat([...pending[stream], rest.subarray(0, newline)]).toString('utf8');
      pending[stream] = [];
      lines.push({ stream, text: line.endsWith('\r') ? line.slice(0, -1) : line });
      rest = rest.subarray(newline + 1);
    }
    if (rest.length > 0) pending[stream].push(rest);
  };
  if (!isMultiplexed(data)) emit('stdout', data);
  else {
    let offset = 0;
    while (offset + 8 <= data.length) {
      const type = data[offset];
      const size = data.readUInt32BE(offset + 4);
      emit(type === 2 ? 'stderr' : 'stdout', data.subarray(offset + 8, Math.min(data.length, offset + 8 + size)));
      offset += 8 + size;
    }
  }
  for (const stream of ['stdout', 'stderr'] as const) {
    if (pending[stream].length > 0) lines.push({ stream, text: Buffer.concat(pending[stream]).toString('utf8') });
  }
  return lines;
}

/** The standard output and error of a multiplexed stream (an exec's), each as the bytes the process wrote. */
export function demuxFrames(data: Buffer): { stdout: Buffer; stderr: Buffer } {
  const demuxer = new FrameDemuxer();
  const frames = demuxer.push(data);
  const part = (type: 1 | 2) => Buffer.concat(frames.filter((frame) => frame.stream === type).map((frame) => frame.payload));
  return { stdout: part(1), stderr: part(2) };
}

/**
 * Reads a multiplexed stream as it arrives (`GET /containers/{id}/logs?follow=1`, an attached exec): chunks need not
 * line up with frames, so a header or payload cut by a chunk boundary waits for the rest. Stream type 0 (stdin, only
 * echoed on a TTY) counts as stdout.
 */
export class FrameDemuxer {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Array<{ stream: 1 | 2; payload: Buffer }> {
    this.pending = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const frames: Array<{ stream: 1 | 2; payload: Buffer }> = [];
    while (this.pending.length >= 8) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) break;
      frames.push({ stream: this.pending[0] === 2 ? 2 : 1, payload: this.pending.subarray(8, 8 + size) });
      this.pending = this.pending.subarray(8 + size);
    }
    return frames;
  }
}

const TIMESTAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d) /;

/** A log line read with `timestamps=1` (`<RFC 3339 with nanoseconds> <text>`) → epoch milliseconds and text. */
export function splitLogTimestamp(line: string): { at: number | null; text: string } {
  const match = TIMESTAMP.exec(line);
  if (!match) return { at: null, text: line };
  const fraction = (match[2] ?? '').slice(0, 4); // Date.parse takes milliseconds, not nanoseconds
  const at = Date.parse(`${match[1]}${fraction}${match[3]}`);
  return { at: Number.isNaN(at) ? null : at, text: line.slice(match[0].length) };
}

/** The fields of `GET /containers/{id}/stats?stream=false` that `dockerStats` reads (cgroup v1 and v2). */
export interface EngineStats {
  cpu_stats?: { cpu_usage?: { total_usage?: number; percpu_usage?: number[] }; system_cpu_usage?: number; online_cpus?: number };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; stats?: Record<string, number | undefined> };
  pids_stats?: { current?: number };
}

/**
 * Agent stats from one engine stats sample, with the docker CLI's arithmetic: CPU is the container's share of the
 * host's CPU time between the two samples the engine takes, times the online CPUs (so 100 = one full core);
 * memory is usage less the inactive page cache (`inactive_file` on cgroup v2, `total_inactive_file` on v1).
 */
// `now` is the wall clock by default: uptime is measured from the engine's `startedAt`, a date.
export function dockerStats(stats: EngineStats, startedAt: string | null, now = Date.now()): AgentStats {
  const cpu = stats.cpu_stats;
  const pre = stats.precpu_stats;
  const cpuDelta = (cpu?.cpu_usage?.total_usage ?? 0) - (pre?.cpu_usage?.total_usage ?? 0);
  const systemDelta = (cpu?.system_cpu_usage ?? 0) - (pre?.system_cpu_usage ?? 0);
  const online = cpu?.online_cpus || cpu?.cpu_usage?.percpu_usage?.length || 1;
  const cpuPercent = cpuDelta > 0 && systemDelta > 0 ? (cpuDelta / systemDelta) * online * 100 : 0;

  const usage = stats.memory_stats?.usage ?? 0;
  const detail = stats.memory_stats?.stats ?? {};
  const inactive = detail.inactive_file ?? detail.total_inactive_file ?? 0;
  const memoryBytes = inactive < usage ? usage - inactive : usage;

  const started = startedAt ? Date.parse(startedAt) : Number.NaN;
  return {
    cpuPercent: Math.round(cpuPercent * 10) / 10,
    memoryBytes,
    pids: stats.pids_stats?.current ?? 0,
    uptimeMs: Number.isNaN(started) ? 0 : Math.max(0, now - started),
  };
}

export interface ImageRef {
  /** Registry and path, e.g. `ghcr.io/openclaw/openclaw` (a registry port stays: `localhost:5000/openclaw`). */
  repository: string;
  tag: string | null;
  /** `sha256:…` when the reference pins a digest. */
  digest: string | null;
}

export function parseImageRef(ref: string): ImageRef {
  const at = ref.indexOf('@');
  const name = at >= 0 ? ref.slice(0, at) : ref;
  const digest = at >= 0 ? ref.slice(at + 1) : null;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) return { repository: name.slice(0, colon), tag: name.slice(colon + 1), digest };
  return { repository: name, tag: null, digest };
}
