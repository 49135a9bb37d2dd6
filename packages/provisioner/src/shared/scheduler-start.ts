/**
 * OpenClaw starts its cron scheduler (jobs and heartbeats) a moment after `/readyz`, detached from the start itself. When
 * that start fails, the pinned OpenClaw logs `[cron] failed to start: …` and never tries again: the gateway answers
 * chat, `cron.status` still lists the jobs with their next wake, and none of them runs (seen in CI: a wake for a due
 * job logged `StateDatabaseCoordinatorContentionError: another OpenClaw process owns state-lifecycle`, 400 ms after its
 * own SQLite maintenance worker gave up, and the job never ran). On a configuration reload OpenClaw's own answer to the
 * same failure is a restart of the gateway (`scheduleRecoveryRestart("cron reload", …)` in its
 * `server-reload-managed`); the hosts do the same for a start: they read the line in the gateway's own output and start
 * the gateway again, at most `SCHEDULER_RESTARTS` times in a row.
 */

/** The line OpenClaw's console log prints when its scheduler's start failed (`logCron.error`, `startGatewayCronWithLogging`). */
const SCHEDULER_FAILED = /\[cron\] failed to (?:start|enter start root)\b/;

const NOT_RUNNING = 'scheduled jobs and heartbeats do not run until the agent is restarted';

/** Restarts of a gateway whose scheduler did not start, in a row, before the host leaves it as it is (and says so). */
export const SCHEDULER_RESTARTS = 2;

/** The first line of a gateway's output that says its scheduler did not start, or null. */
export function schedulerFailure(lines: Iterable<string>): string | null {
  for (const line of lines) if (SCHEDULER_FAILED.test(line)) return line;
  return null;
}

/**
 * What a host does about a gateway whose scheduler did not start, `restarts` restarts in a row after the first such
 * start: start it again, or give up, with the line to log and, on giving up, what the agent reports while it runs
 * (`AgentState.schedulerDown`).
 */
export function onSchedulerFailure(
  line: string,
  restarts: number,
): { restart: true; log: string } | { restart: false; log: string; lastError: string } {
  const detail = line.slice(line.search(SCHEDULER_FAILED)).replace(/^\[cron\] /, '');
  if (restarts < SCHEDULER_RESTARTS) {
    return {
      restart: true,
      log: `[host] OpenClaw's scheduler did not start (${detail}); starting the gateway again so its jobs run (${restarts + 1} of ${SCHEDULER_RESTARTS})`,
    };
  }
  // What the owner reads is short; the log keeps OpenClaw's own words.
  return {
    restart: false,
    log: `[host] OpenClaw's scheduler did not start (${detail}) ${SCHEDULER_RESTARTS + 1} times in a row; the gateway runs on without it: ${NOT_RUNNING}`,
    lastError: `OpenClaw's scheduler did not start: ${NOT_RUNNING}`,
  };
}

/**
 * How many times in a row a local or docker host has started one gateway again for its scheduler (the kubernetes host
 * keeps the count on the Deployment, `aop/scheduler-restarts`): a start for any other reason begins the count again.
 */
export class SchedulerRestarts {
  private count = 0;
  private again = false;

  /** A start of the gateway begins (every start). */
  started(): void {
    if (!this.again) this.count = 0;
    this.again = false;
  }

  /** What to do about the failure `line` in the output of the start under way (`onSchedulerFailure`). */
  decide(line: string): ReturnType<typeof onSchedulerFailure> {
    return onSchedulerFailure(line, this.count);
  }

  /** The next start is one again for the scheduler. */
  startingAgain(): void {
    this.count += 1;
    this.again = true;
  }
}
