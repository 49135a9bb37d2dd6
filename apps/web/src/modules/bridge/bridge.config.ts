import { ConfigError, Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

export const BridgeEnvSchema = Type.Object({
  BRIDGE_ENABLED: Env.bool(true),
  BRIDGE_SECRET: Env.optional(Type.String()),
  BRIDGE_OPERATOR_IDENTITY: Env.str('operator'),
});

export interface BridgeConfig {
  /**
   * The bridge bus (spec §4.8), an operator tool. With `secret`, callers present it in `X-Bridge-Secret`; without
   * one, only administrators' sessions may use it, and production refuses to start (see toBridgeConfig). Disabled: the
   * routes are not served.
   */
  bridge: { enabled: boolean; secret: string | undefined; operatorIdentity: string };
}

export function toBridgeConfig(env: Static<typeof BridgeEnvSchema>, production: boolean): BridgeConfig {
  // Without a secret the bus is open to administrators' sessions only; a production deployment names its secret
  // (the bridge's own callers are scripts and bots, which have no session) or turns the bridge off.
  if (production && env.BRIDGE_ENABLED && !env.BRIDGE_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  BRIDGE_SECRET: required in production while the bridge is enabled (or set BRIDGE_ENABLED=false)',
    );
  }
  return {
    bridge: {
      enabled: env.BRIDGE_ENABLED,
      secret: env.BRIDGE_SECRET || undefined,
      operatorIdentity: env.BRIDGE_OPERATOR_IDENTITY,
    },
  };
}
