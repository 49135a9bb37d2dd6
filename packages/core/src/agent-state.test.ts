import { describe, expect, it } from 'vitest';
import {
  AGENT_ACTIONS,
  AGENT_STATES,
  type AgentLifecycleState,
  actionBlockedReason,
  deriveAgentState,
  isActionValid,
  isDegradedForGood,
  targetState,
  validActions,
} from './agent-state.js';

// Issue #19, "Status that is true": the state comes from the host's process state and the gateway's /readyz, never from
// what the last action hoped for.
describe('deriveAgentState', () => {
  it('is live only once the gateway answers /readyz', () => {
    expect(deriveAgentState({ host: 'running', ready: true }).state).toBe('live');
    // The host says running only after the warm-up turn; until then a ready gateway is still starting, and says why.
    expect(deriveAgentState({ host: 'starting', ready: true })).toMatchObject({
      state: 'starting',
      reason: 'the gateway answers /readyz and is preparing its first turn',
    });
    expect(deriveAgentState({ host: 'starting', ready: false, failing: ['startup-sidecars'] })).toEqual({
      state: 'starting',
      reason: 'the gateway is not ready yet (startup-sidecars)',
      actions: ['stop'],
    });
  });

  it('is degraded when the process runs but the gateway is not ready or does not answer', () => {
    expect(deriveAgentState({ host: 'running', ready: false }).state).toBe('degraded');
    expect(deriveAgentState({ host: 'running', ready: null })).toMatchObject({
      state: 'degraded',
      reason: 'the process runs but the gateway does not answer',
    });
    expect(deriveAgentState({ host: 'restarting', ready: null, lastError: 'exited with code 1' })).toMatchObject({
      state: 'degraded',
      reason: 'the gateway stopped unexpectedly and is being restarted: exited with code 1',
    });
  });

  it("is degraded when the gateway answers but the host says its scheduler is down (its jobs do not run), with the host's words", () => {
    const schedulerDown = "OpenClaw's scheduler did not start: scheduled jobs and heartbeats do not run until the agent is restarted";
    expect(deriveAgentState({ host: 'running', ready: true, schedulerDown })).toEqual({
      state: 'degraded',
      reason: `the gateway answers, but ${schedulerDown}`,
      actions: ['stop', 'restart', 'update', 'repair', 'reset-memory'],
    });
    expect(deriveAgentState({ host: 'running', ready: true, schedulerDown: null }).state).toBe('live');
    // Degraded for good (a wait for live ends there), unlike a gateway that is not ready or crashed and is restarting.
    expect(isDegradedForGood({ state: 'degraded', host: 'running', ready: true })).toBe(true);
    expect(isDegradedForGood({ state: 'degraded', host: 'running', ready: false })).toBe(false);
    expect(isDegradedForGood({ state: 'degraded', host: 'restarting', ready: null })).toBe(false);
  });

  it('says stopped for a stopped agent, whatever the (unreachable) gateway says', () => {
    expect(deriveAgentState({ host: 'stopped', ready: null })).toEqual({
      state: 'stopped',
      reason: 'the agent was stopped',
      actions: ['start', 'update', 'repair'],
    });
    expect(deriveAgentState({ host: 'stopping', ready: null }).state).toBe('stopping');
  });

  it('is failed when the host gave up, with its reason', () => {
    expect(deriveAgentState({ host: 'error', ready: null, lastError: 'not ready within 60000 ms' })).toMatchObject({
      state: 'failed',
      reason: 'the agent could not be started: not ready within 60000 ms',
    });
  });

  it('is updating while an update runs, even though the process is down', () => {
    expect(deriveAgentState({ host: 'stopped', ready: null, pending: 'update' }).state).toBe('updating');
    expect(deriveAgentState({ host: 'running', ready: true, pending: 'restart' }).state).toBe('live');
  });

  it('without a host, reads the record and the gateway alone (direct deployments)', () => {
    expect(deriveAgentState({ host: null, ready: null, record: 'deploying' }).state).toBe('provisioning');
    expect(deriveAgentState({ host: null, ready: null, record: null }).state).toBe('provisioning');
    expect(deriveAgentState({ host: null, ready: true, record: 'deploying' }).state).toBe('live');
    expect(deriveAgentState({ host: null, ready: null, record: 'error' }).state).toBe('failed');
    expect(deriveAgentState({ host: null, ready: null, record: 'stopped' }).state).toBe('stopped');
    expect(deriveAgentState({ host: null, ready: false, record: 'running' })).toMatchObject({
      state: 'degraded',
      reason: 'the deployment runs but the gateway is not ready yet',
    });
  });
});

describe('actions per state', () => {
  it('enables Start only where nothing runs and Stop only where something does', () => {
    const can = (state: AgentLifecycleState) => validActions(state);
    expect(can('live')).toEqual(['stop', 'restart', 'update', 'repair', 'reset-memory']);
    expect(can('stopped')).toEqual(['start', 'update', 'repair']);
    expect(can('failed')).toEqual(['start', 'restart', 'update', 'repair']);
    expect(can('starting')).toEqual(['stop']);
    for (const busy of ['provisioning', 'stopping', 'updating'] as const) expect(can(busy)).toEqual([]);
  });

  it('gives a reason in words for every action it refuses, and none for one it allows', () => {
    for (const state of AGENT_STATES) {
      for (const action of AGENT_ACTIONS) {
        const reason = actionBlockedReason(state, action);
        if (isActionValid(state, action)) expect(reason, `${state}/${action}`).toBeNull();
        else expect(reason, `${state}/${action}`).toMatch(/^The agent .+\.$/);
      }
    }
    expect(actionBlockedReason('stopped', 'stop')).toBe('The agent is already stopped.');
    expect(actionBlockedReason('live', 'start')).toBe('The agent is already running.');
  });

  it('names the state each action waits for', () => {
    expect(targetState('stop')).toBe('stopped');
    for (const action of ['start', 'restart', 'update', 'repair', 'reset-memory'] as const) expect(targetState(action)).toBe('live');
  });
});
