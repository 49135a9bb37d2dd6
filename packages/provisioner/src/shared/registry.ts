import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

let writes = 0;

/**
 * Write-then-rename, so a crash mid-write leaves the previous record rather than a truncated one. Each write has its
 * own temporary file: two writes of one record at once (a lifecycle step and the memory sampler, which saves a new
 * peak outside the agent's lock) sharing one would have the second rename fail with ENOENT (seen in CI as a 500 on
 * repair).
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${++writes}.tmp`;
  await writeFile(tmp, data, { mode: 0o600 });
  await rename(tmp, path);
}

export const recordFile = (dir: string, agentId: string) => join(dir, `${agentId}.json`);

export const writeRecord = (path: string, record: object) => writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`);

/** What `exclusive` serializes on: the chain of operations, and how many are running or waiting in it. */
export interface Exclusive {
  lock: Promise<unknown>;
  pending?: number;
}

/**
 * Runs one lifecycle operation at a time per agent; a failed operation must not block the next, so the chain
 * continues past rejections.
 */
export function exclusive<T>(holder: Exclusive, fn: () => Promise<T>): Promise<T> {
  holder.pending = (holder.pending ?? 0) + 1;
  const run = holder.lock.then(fn, fn).finally(() => {
    holder.pending = (holder.pending ?? 1) - 1;
  });
  holder.lock = run.catch(() => undefined);
  return run;
}

/**
 * Whether an operation runs or waits on `holder`. A capacity check that hibernates another agent to make room must
 * skip a busy one: that agent's operation may itself be waiting for the capacity check, and neither would go on.
 */
export const isBusy = (holder: Exclusive): boolean => (holder.pending ?? 0) > 0;
