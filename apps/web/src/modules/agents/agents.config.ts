import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const AgentsEnvSchema = Type.Object({
  PROVISIONING_DISABLED: Env.bool(false),
  HOSTING_API_URL: Env.url(),
  HOSTING_API_KEY: Env.optional(Type.String()),
  HOSTING_PROJECT_ID: Env.optional(Type.String()),
  HOSTING_ENVIRONMENT_ID: Env.optional(Type.String()),
  HOSTING_AGENT_IMAGE: Env.str('ghcr.io/openclaw/openclaw:2026.9.6'),
  HOSTING_STATUS_POLL_MS: Env.int(5_000, 10),
  HOSTING_DEPLOY_TIMEOUT_MS: Env.int(600_000, 100),
  AGENT_LIFECYCLE_WAIT_MS: Env.int(60_000, 0),
  SAVED_HEARTBEAT_SWEEP_MS: Env.int(60_000, 0),
});

export interface AgentsConfig {
  /** Direct deployment through the hosting provider's GraphQL API; used when no backend answers. */
  hosting:
    | {
        apiUrl: string;
        apiKey: string;
        projectId: string;
        environmentId: string;
        image: string;
        /** How often a direct deployment's status is polled until it settles, and when it counts as failed. */
        statusPollMs: number;
        deployTimeoutMs: number;
      }
    | undefined;
  /** The provisioning kill switch (spec §4.15: 503 while on). */
  provisioningDisabled: boolean;
  /** How long a lifecycle call waits for the state it asked for before it answers 202 (issue #19, docs/decisions.md). */
  lifecycleWaitMs: number;
  /**
   * How often the web puts heartbeats saved while an agent's gateway could not take them on agents live again without a
   * start it made (a wake for a due job, a restart after a crash): `AfterStart.sweep`. 0: only starts it makes do.
   */
  savedHeartbeatSweepMs: number;
}

export function toAgentsConfig(env: Static<typeof AgentsEnvSchema>): AgentsConfig {
  return {
    provisioningDisabled: env.PROVISIONING_DISABLED,
    lifecycleWaitMs: env.AGENT_LIFECYCLE_WAIT_MS,
    savedHeartbeatSweepMs: env.SAVED_HEARTBEAT_SWEEP_MS,
    hosting:
      env.HOSTING_API_URL && env.HOSTING_API_KEY && env.HOSTING_PROJECT_ID && env.HOSTING_ENVIRONMENT_ID
        ? {
            apiUrl: env.HOSTING_API_URL,
            apiKey: env.HOSTING_API_KEY,
            projectId: env.HOSTING_PROJECT_ID,
            environmentId: env.HOSTING_ENVIRONMENT_ID,
            image: env.HOSTING_AGENT_IMAGE,
            statusPollMs: env.HOSTING_STATUS_POLL_MS,
            deployTimeoutMs: env.HOSTING_DEPLOY_TIMEOUT_MS,
          }
        : undefined,
  };
}
