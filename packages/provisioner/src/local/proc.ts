import { readFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';

/** Linux `/proc` readings for a gateway's process tree. */

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on every Linux build we run on). */
export const CLOCK_TICKS = 100;

export interface ProcStat {
  pid: number;
  /** R, S, D, Z (zombie), T… */
  state: string;
  ppid: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
  /** Start time after boot, in clock ticks. */
  startTicks: number;
}

/** Parses `/proc/<pid>/stat` (the command name may hold spaces and parentheses: fields start after the last `)`). */
export function parseStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const pid = Number.parseInt(text.slice(0, text.indexOf(' ')), 10);
  const fields = text
    .slice(close + 2)
    .trim()
    .split(' ');
  // fields[0] is field 3 (state): field n is fields[n - 3].
  const ppid = Number(fields[1]);
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  const startTicks = Number(fields[19]);
  if (!Number.isFinite(pid) || !Number.isFinite(ppid)) return null;
  return { pid, state: fields[0] ?? '', ppid, cpuTicks, startTicks };
}

async function readStat(pid: number): Promise<ProcStat | null> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** The process and all its descendants (by parent pid), root first. Empty when the root is gone. */
export async function processTree(rootPid: number): Promise<number[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const children = new Map<number, number[]>();
  let rootAlive = false;
  await Promise.all(
    entries
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        const stat = await readStat(Number(name));
        if (!stat) return;
        if (stat.pid === rootPid) rootAlive = true;
        const list = children.get(stat.ppid) ?? [];
        list.push(stat.pid);
        children.set(stat.ppid, list);
      }),
  );
  if (!rootAlive) return [];
  const tree: number[] = [];
  const queue = [rootPid];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    tree.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
}

/** `VmRSS` of a process in bytes (0 when it is gone). */
export async function rssBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export async function treeRssBytes(rootPid: number): Promise<number> {
  const pids = await processTree(rootPid);
  const sizes = await Promise.all(pids.map(rssBytes));
  return sizes.reduce((a, b) => a + b, 0);
}

/**
 * The proportional set size of a process in bytes (`Pss` of `/proc/<pid>/smaps_rollup`): its private memory plus its
 * share of pages it shares with others (the Node binary, the compile cache mapped by every gateway), so the PSS of
 * several gateways adds up to what they really hold, where RSS counts shared pages once per process. RSS when the
 * kernel has no smaps_rollup; 0 when the process is gone.
 */
export async function pssBytes(pid: number): Promise<number> {
  try {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    const match = /^Pss:\s+(\d+)\s+kB/m.exec(rollup);
    if (match) return Number(match[1]) * 1024;
  } catch {
    // fall through to RSS
  }
  return rssBytes(pid);
}

export async function treePssBytes(rootPid: number): Promise<number> {
  const pids = await processTree(rootPid);
  const sizes = await Promise.all(pids.map(pssBytes));
  return sizes.reduce((a, b) => a + b, 0);
}

/** `MemAvailable` from `/proc/meminfo`, in bytes. */
export async function memAvailableBytes(): Promise<number> {
  const meminfo = await readFile('/proc/meminfo', 'utf8');
  const match = /^MemAvailable:\s+(\d+)\s+kB/m.exec(meminfo);
  if (!match) throw new Error('MemAvailable missing from /proc/meminfo');
  return Number(match[1]) * 1024;
}

async function systemUptimeSeconds(): Promise<number> {
  return Number.parseFloat((await readFile('/proc/uptime', 'utf8')).split(' ')[0] ?? '0');
}

export interface TreeStats {
  cpuPercent: number;
  memoryBytes: number;
  pids: number;
  uptimeMs: number;
}

/** CPU (sampled over `sampleMs`), resident memory, process count and uptime of a process tree. */
export async function treeStats(rootPid: number, sampleMs = 250): Promise<TreeStats> {
  const cpuOf = async (pids: number[]) => {
    const stats = await Promise.all(pids.map(readStat));
    return stats.reduce((sum, stat) => sum + (stat?.cpuTicks ?? 0), 0);
  };
  const before = await processTree(rootPid);
  if (before.length === 0) return { cpuPercent: 0, memoryBytes: 0, pids: 0, uptimeMs: 0 };
  const startedAt = performance.now();
  const ticksBefore = await cpuOf(before);
  await new Promise((resolve) => setTimeout(resolve, sampleMs));
  const ticksAfter = await cpuOf(before);
  const elapsedSeconds = (performance.now() - startedAt) / 1000;
  const after = await processTree(rootPid);
  const memory = (await Promise.all(after.map(rssBytes))).reduce((a, b) => a + b, 0);
  const root = await readStat(rootPid);
  const uptimeMs = root ? Math.max(0, Math.round(((await systemUptimeSeconds()) - root.startTicks / CLOCK_TICKS) * 1000)) : 0;
  const cpuPercent = elapsedSeconds > 0 ? Math.max(0, ((ticksAfter - ticksBefore) / CLOCK_TICKS / elapsedSeconds) * 100) : 0;
  return { cpuPercent: Math.round(cpuPercent * 10) / 10, memoryBytes: memory, pids: after.length, uptimeMs };
}

/** Whether a pid is alive (a zombie waiting to be reaped is not). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state !== 'Z';
  } catch {
    return false;
  }
}
