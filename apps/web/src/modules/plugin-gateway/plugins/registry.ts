import { DomainError } from '@aop/core';
import type { IncomingHttpHeaders } from 'node:http';
import type { WebConfig } from '../../../config.js';
import type { GatewayDeps } from '../../../platform/clients/user-gateway.js';
import { agentPlugin } from './agent.js';
import { generateTextPlugin } from './generate-text.js';
import { sttPlugin, ttsPlugin } from './speech.js';
import type { GatewayPlugin } from './types.js';

/** Spec §4.4: the plugin a request names neither in `X-Plugin-Id` nor in the body's `plugin`. */
export const DEFAULT_PLUGIN = 'agent';

export type PluginRegistry = ReadonlyMap<string, GatewayPlugin>;

/** The built-in plugins of spec §2.5, priced from configuration (the reference prices by default). */
export function createPluginRegistry(deps: GatewayDeps & { config: Pick<WebConfig, 'gateway' | 'demo' | 'plugins'> }): PluginRegistry {
  const { prices } = deps.config.plugins;
  const plugins = [
    agentPlugin(deps, prices.agent),
    generateTextPlugin(deps.config, prices['generate-text']),
    ttsPlugin(deps.config, prices.tts),
    sttPlugin(deps.config, prices.stt),
  ];
  return new Map(plugins.map((p) => [p.id, p]));
}

/**
 * The plugin a request is for (spec §4.4): the `X-Plugin-Id` header over the body's `plugin`, `agent` when neither
 * names one. Whether it exists is the caller's question (502 `no_plugin`).
 */
export function routePlugin(headers: IncomingHttpHeaders, body: Record<string, unknown>): string {
  const header = headers['x-plugin-id'];
  const named = Array.isArray(header) ? header[0] : header;
  if (typeof named === 'string' && named.trim() !== '') return named.trim();
  const { plugin } = body;
  if (plugin === undefined || plugin === null || plugin === '') return DEFAULT_PLUGIN;
  if (typeof plugin !== 'string') throw new DomainError('FIELD_NOT_STRING', { field: 'plugin' });
  return plugin;
}
