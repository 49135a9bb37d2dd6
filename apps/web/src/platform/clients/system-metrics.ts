import { readFile } from 'node:fs/promises';
import { cpus, freemem, loadavg, totalmem, uptime as systemUptime } from 'node:os';

export interface MetricsReading {
  cpuPercent: number;
  memoryPercent: number;
  cpu: { cores: number; loadAverage: number[] };
  memory: { totalBytes: number; usedBytes: number; process: NodeJS.MemoryUsage };
  uptime: { processSeconds: number; systemSeconds: number };
}

/** Reads CPU and memory use; throws when the figures cannot be read. */
export interface SystemMetrics {
  read(): Promise<MetricsReading>;
}

export type Health = 'healthy' | 'degraded' | 'unhealthy';

/** Spec §4.10: both ≤ 70 % healthy; the higher one above 70 % up to 85 % degraded; above 85 % unhealthy. */
export function classifyHealth(cpuPercent: number, memoryPercent: number): Health {
  const worst = Math.max(cpuPercent, memoryPercent);
  if (!Number.isFinite(worst)) throw new Error('Metric is not a number');
  if (worst <= 70) return 'healthy';
  if (worst <= 85) return 'degraded';
  return 'unhealthy';
}

interface CpuSnapshot {
  idle: number;
  total: number;
  at: number;
}

function cpuSnapshot(): CpuSnapshot {
  let idle = 0;
  let total = 0;
  for (const cpu of cpus()) {
    const t = cpu.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  // `at` only measures the time between two samples: monotonic.
  return { idle, total, at: performance.now() };
}

const MIN_SAMPLE_MS = 250;

/** Within a container with a memory limit, use and limit come from cgroup v2. */
async function cgroupMemory(): Promise<{ used: number; limit: number } | null> {
  try {
    const [max, current] = await Promise.all([
      readFile('/sys/fs/cgroup/memory.max', 'utf8'),
      readFile('/sys/fs/cgroup/memory.current', 'utf8'),
    ]);
    const limit = Number(max.trim());
    const used = Number(current.trim());
    return Number.isFinite(limit) && limit > 0 && limit < totalmem() && Number.isFinite(used) ? { used, limit } : null;
  } catch {
    return null;
  }
}

/**
 * CPU use is the share of non-idle time across all cores between two readings of
 * the kernel's counters (at least 250 ms apart, so one request never measures a
 * meaningless instant); memory use is the machine's (or the cgroup's) share in use.
 */
export function createSystemMetrics(): SystemMetrics {
  let previous = cpuSnapshot();
  let lastPercent: number | undefined;

  async function cpuPercent(): Promise<number> {
    const elapsed = performance.now() - previous.at;
    if (elapsed < MIN_SAMPLE_MS) {
      if (lastPercent !== undefined) return lastPercent;
      await new Promise((r) => setTimeout(r, MIN_SAMPLE_MS - elapsed));
    }
    const current = cpuSnapshot();
    const total = current.total - previous.total;
    const idle = current.idle - previous.idle;
    if (total <= 0) throw new Error('CPU counters did not advance');
    lastPercent = Math.min(100, Math.max(0, ((total - idle) / total) * 100));
    previous = current;
    return lastPercent;
  }

  return {
    async read() {
      const cpu = await cpuPercent();
      const cgroup = await cgroupMemory();
      const totalBytes = cgroup?.limit ?? totalmem();
      const usedBytes = cgroup?.used ?? totalmem() - freemem();
      return {
        cpuPercent: cpu,
        memoryPercent: (usedBytes / totalBytes) * 100,
        cpu: { cores: cpus().length, loadAverage: loadavg() },
        memory: { totalBytes, usedBytes, process: process.memoryUsage() },
        uptime: { processSeconds: Math.round(process.uptime()), systemSeconds: Math.round(systemUptime()) },
      };
    },
  };
}
