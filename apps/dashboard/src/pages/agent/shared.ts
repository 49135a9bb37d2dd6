import type { AgentAction, AgentLifecycleState } from '@aop/core/agent-state';
import { useCallback, useEffect, useState } from 'react';
import { errorMessage } from '../../api.js';
import type { AgentStatusEvent } from '../../api-types.js';
import { eventData, readEventStream } from '../../event-stream.js';

/** Small formatting helpers the agent page's tabs share, and the agent's state. */

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

const UNITS: readonly [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
];

/** `1800000` → "every 30 minutes"; a value that is no whole unit falls back to milliseconds. */
export function formatEvery(ms: number): string {
  for (const [size, unit] of UNITS) {
    if (ms >= size && ms % size === 0) {
      const n = ms / size;
      return n === 1 ? `every ${unit}` : `every ${n} ${unit}s`;
    }
  }
  return `every ${ms} ms`;
}

/**
 * The agent's state as its event stream pushes it (`GET /api/agents/:id/events?follow=1`, the one state machine of
 * `@aop/core/agent-state`): the badge, the health card and which lifecycle buttons are enabled all read this. The
 * stream ends after ten minutes (or breaks); it is opened again, after a pause when it failed.
 */
export function useAgentState(agentId: string): {
  state: AgentStateNow | undefined;
  error: string | undefined;
  /** Takes the state a lifecycle call answered with, ahead of the stream's next event. */
  adopt: (next: Pick<AgentStateNow, 'state' | 'reason' | 'actions'> & { live: boolean; ready: boolean | null }) => void;
} {
  const [state, setState] = useState<AgentStateNow>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const stop = new AbortController();
    setState(undefined);
    const follow = async () => {
      while (!stop.signal.aborted) {
        try {
          await readEventStream(
            `/api/agents/${encodeURIComponent(agentId)}/events?follow=1`,
            (event) => {
              if (event.event !== 'status') return;
              const data = eventData(event) as AgentStatusEvent;
              setState({
                state: data.state,
                reason: data.reason,
                actions: data.actions,
                live: data.live,
                ready: data.ready,
                sharesGatewayWith: data.sharesGatewayWith ?? [],
                wakesAt: data.wakesAt ?? null,
                at: data.at,
              });
              setError(undefined);
            },
            stop.signal,
          );
        } catch (err) {
          if (stop.signal.aborted) return;
          setError(errorMessage(err));
          await new Promise((resolve) => setTimeout(resolve, 5_000));
        }
      }
    };
    void follow();
    return () => stop.abort();
  }, [agentId]);
  const adopt = useCallback((next: Pick<AgentStateNow, 'state' | 'reason' | 'actions'> & { live: boolean; ready: boolean | null }) => {
    // An action's answer says nothing of the agent's gateway companions: the last event's stand until the next one.
    setState((prev) => ({
      state: next.state,
      reason: next.reason,
      actions: next.actions,
      live: next.live,
      ready: next.ready === true,
      sharesGatewayWith: prev?.sharesGatewayWith ?? [],
      // A start, stop or restart ends a nap: only an answer that it still sleeps keeps the wake time known.
      wakesAt: next.state === 'hibernated' ? (prev?.wakesAt ?? null) : null,
      at: new Date().toISOString(),
    }));
  }, []);
  return { state, error, adopt };
}

export interface AgentStateNow {
  state: AgentLifecycleState;
  reason: string;
  actions: AgentAction[];
  /** The gateway answered `/healthz`. */
  live: boolean;
  /** The gateway answered `/readyz` ready. */
  ready: boolean;
  /** The user's other agents in the same gateway (issue #20): a restart of this one restarts them too. */
  sharesGatewayWith: string[];
  /** While it sleeps: when its next due job wakes it (null: none due). */
  wakesAt: string | null;
  at: string;
}
