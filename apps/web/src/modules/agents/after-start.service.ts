import type { Logger } from '@aop/core';
import type { Caller } from '../../platform/sessions.js';
import { gatewayFailureMessage } from '../schedule/cron-jobs.service.js';
import {
  applySavedHeartbeat,
  claimSavedHeartbeat,
  findHeartbeatSettings,
  releaseSavedHeartbeat,
  unclaimedSavedHeartbeats,
} from '../schedule/heartbeat.service.js';
import type { AgentHealthView } from './agents.schemas.js';
import { type LifecycleDeps, readAgentState, whileStarting } from './lifecycle.service.js';

/** How many saved heartbeats one sweep pass looks at; the next pass goes on from where it stopped. */
const SWEEP_BATCH = 200;

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
 * database (read by `GET /api/heartbeat`) for the next start or sweep. Starts the web does not make (a wake the host
 * makes for a due job, a restart after a crash, an operator's) are caught by `sweep`, the web's `saved heartbeats` job.
 * Whoever applies a saved copy claims it first, so a follow-up and a sweep (or two replicas) never add the job twice.
 * Closing ends the waits and waits for the calls under way.
 */
export class AfterStart {
  readonly #running = new Set<Promise<void>>();
  readonly #closing = new AbortController();
  /** The last agent id the previous sweep pass looked at, when it stopped at its batch size (null: from the start). */
  #sweptUpTo: string | null = null;

  constructor(
    private readonly deps: LifecycleDeps,
    private readonly options: AfterStartOptions,
    private readonly log: Logger,
  ) {}

  /**
   * Follows `agentId` in the background: in `state` when its action answered (read when not given); `log` (the app's by
   * default) says what became of it.
   */
  follow(user: Caller, agentId: string, state: AgentHealthView | null = null, log: Logger = this.log): void {
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

  /**
   * One pass of the sweep: each saved heartbeat nobody holds whose agent is live now (read, never woken) is put on its
   * gateway. Up to `SWEEP_BATCH` per pass, in agent id order from where the last pass stopped, so a long list of
   * agents that stay down (stopped by their owners) does not keep the sweep from the others.
   */
  async sweep(): Promise<void> {
    const pending = await unclaimedSavedHeartbeats(this.deps.db.kysely, {
      now: this.deps.clock(),
      after: this.#sweptUpTo,
      limit: SWEEP_BATCH,
    });
    this.#sweptUpTo = pending.length === SWEEP_BATCH ? (pending.at(-1)?.agentId ?? null) : null;
    for (const { agentId, owner } of pending) {
      if (this.#closing.signal.aborted) return;
      try {
        if ((await readAgentState(this.deps, owner, agentId))?.state === 'live') await this.#apply(owner, agentId, this.log);
      } catch (err) {
        // Not a gateway's failure (a bug, the database): the others are still swept, and this one again next pass.
        this.log.error({ err, agentId }, 'heartbeat: the sweep could not put the settings saved for a live agent on its gateway');
      }
    }
  }

  async #run(user: Caller, agentId: string, state: AgentHealthView | null, log: Logger): Promise<void> {
    // Most starts have nothing saved: those are not followed at all.
    if (!(await findHeartbeatSettings(this.deps.db, user.id, agentId))) return;
    const now = state?.state === 'live' ? state : await whileStarting(this.deps, user, agentId, this.options.waitMs, this.#closing.signal);
    if (now?.state !== 'live') {
      // An action that started it and did not end live is worth a warning; a save for an agent that is down is not.
      log[state ? 'warn' : 'info'](
        { agentId, state: now?.state ?? null },
        'heartbeat: the agent is not live, so the settings saved while its gateway could not take them stay in the database until it is next live',
      );
      return;
    }
    await this.#apply(user, agentId, log);
  }

  /** Puts the saved heartbeat on the live agent's gateway, unless another caller holds it (then that one does). */
  async #apply(user: Caller, agentId: string, log: Logger): Promise<void> {
    if (!(await claimSavedHeartbeat(this.deps.db, user.id, agentId, this.deps.clock()))) return;
    try {
      const applied = await applySavedHeartbeat(this.deps, user, agentId, this.options.requestTimeoutMs);
      if (applied)
        log.info({ agentId, ...applied }, 'heartbeat: the settings saved while its gateway could not take them are on its gateway now');
    } catch (err) {
      const reason = gatewayFailureMessage(err);
      if (reason === null) throw err;
      log.warn(
        { agentId, reason },
        'heartbeat: the settings saved while its gateway could not take them could not be put there; they stay in the database until it is next live',
      );
    } finally {
      // A copy the apply dropped is gone; one it left (it failed, or a newer one was saved meanwhile) is free again.
      await releaseSavedHeartbeat(this.deps.db, user.id, agentId);
    }
  }
}
