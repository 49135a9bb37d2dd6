import type { Logger } from '@aop/core';
import type { AuthUser } from '../../platform/sessions.js';
import { gatewayFailureMessage } from '../schedule/cron-jobs.service.js';
import { applySavedHeartbeat, findHeartbeatSettings } from '../schedule/heartbeat.service.js';
import type { AgentHealthView } from './agents.schemas.js';
import { type LifecycleDeps, whileStarting } from './lifecycle.service.js';

export interface AfterStartOptions {
  /** How long a start still on its way when its action answered (202) is followed to live (`AGENT_START_WAIT_MS`). */
  waitMs: number;
  /** The bound of the gateway call that applies what was saved (`GATEWAY_REQUEST_TIMEOUT_MS`). */
  requestTimeoutMs: number;
}

/**
 * What an agent is owed once it has been started and is live: the platform heartbeat saved in the database while its
 * gateway could not take it (spec §4.10: `PUT /api/heartbeat` on a stopped agent, or one whose gateway was down or
 * still starting, answers `source: 'db'`), put on its gateway (`applySavedHeartbeat`). Followed after every lifecycle
 * action that ends live (start, restart, update, repair), every wake the web makes for a message or a change
 * (`waitUntilLive`: a wake is a start), and a heartbeat saved for an agent still on its way up. One per app
 * (`WebContext.afterStart`).
 *
 * It runs after the action has answered, so a start answers when it did before; an agent still on its way is followed
 * for up to `waitMs` more. Nothing is lost when it fails: the reason is logged and the saved settings stay in the
 * database (read by `GET /api/heartbeat`) for the next start. Closing ends the waits and waits for the calls under way.
 */
export class AfterStart {
  readonly #running = new Set<Promise<void>>();
  readonly #closing = new AbortController();

  constructor(
    private readonly deps: LifecycleDeps,
    private readonly options: AfterStartOptions,
    private readonly log: Logger,
  ) {}

  /**
   * Follows `agentId` in the background: in `state` when its action answered (read when not given); `log` (the app's by
   * default) says what became of it.
   */
  follow(user: AuthUser, agentId: string, state: AgentHealthView | null = null, log: Logger = this.log): void {
    if (this.#closing.signal.aborted) return;
    // Not a gateway's failure (a bug, the database): said as an error, and the saved settings are kept all the same.
    const run = this.#run(user, agentId, state, log).catch((err: unknown) => {
      log.error({ err, agentId }, 'heartbeat: applying the settings saved while its gateway could not take them failed');
    });
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
  }

  /** Ends the waits for agents still starting, and waits for the follow-ups under way (each bounded). */
  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.all([...this.#running]);
  }

  async #run(user: AuthUser, agentId: string, state: AgentHealthView | null, log: Logger): Promise<void> {
    // Most starts have nothing saved: those are not followed at all.
    if (!(await findHeartbeatSettings(this.deps.db, user.id, agentId))) return;
    const now = state?.state === 'live' ? state : await whileStarting(this.deps, user, agentId, this.options.waitMs, this.#closing.signal);
    if (now?.state !== 'live') {
      // An action that started it and did not end live is worth a warning; a save for an agent that is down is not.
      log[state ? 'warn' : 'info'](
        { agentId, state: now?.state ?? null },
        'heartbeat: the agent is not live, so the settings saved while its gateway could not take them stay in the database until its next start',
      );
      return;
    }
    try {
      const applied = await applySavedHeartbeat(this.deps, user, agentId, this.options.requestTimeoutMs);
      if (applied)
        log.info({ agentId, ...applied }, 'heartbeat: the settings saved while its gateway could not take them are on its gateway now');
    } catch (err) {
      const reason = gatewayFailureMessage(err);
      if (reason === null) throw err;
      log.warn(
        { agentId, reason },
        'heartbeat: the settings saved while its gateway could not take them could not be put there; they stay in the database until its next start',
      );
    }
  }
}
