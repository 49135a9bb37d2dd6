import { type AgentState, UpdateFailedError } from '../host.js';

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface UpdateAttempt {
  previousVersion: string;
  targetVersion: string;
  /** What `UpdateFailedError.backupPath` reports: where the pre-update state (or deployment) can be recovered from. */
  backup: string;
  /** Runs the new version and resolves once it is ready; a rejection rolls back. */
  apply(): Promise<AgentState>;
  /**
   * Puts the previous version back and answers the sentence the error ends with. Throwing replaces the
   * `UpdateFailedError` (the host's own report of a failed roll-back).
   */
  rollBack(reason: string, cause: unknown): Promise<string>;
}

/**
 * Every host updates the same way: the new version must come up ready, or the previous one is put back and the
 * caller learns both why the update failed and how the roll-back went, in one message shape the API passes on.
 */
export async function updateWithRollback(attempt: UpdateAttempt): Promise<AgentState> {
  try {
    return await attempt.apply();
  } catch (cause) {
    const reason = messageOf(cause);
    const outcome = await attempt.rollBack(reason, cause);
    throw new UpdateFailedError(
      `Update to OpenClaw ${attempt.targetVersion} failed: ${reason}. ${outcome}`,
      attempt.backup,
      attempt.previousVersion,
      attempt.targetVersion,
      { cause },
    );
  }
}

/**
 * Removes all but the newest `keep` backups, one at a time. Backup names start with a sortable timestamp on every
 * host, so name order is age order.
 */
export async function pruneOldest(names: string[], keep: number, remove: (name: string) => Promise<unknown>): Promise<void> {
  const sorted = [...names].sort();
  for (const name of sorted.slice(0, Math.max(0, sorted.length - keep))) await remove(name);
}
