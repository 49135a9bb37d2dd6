import { DomainError } from '@aop/core';
import type { AuthUser } from '../../../platform/sessions.js';

/**
 * A gateway plugin (spec §2.5): what `POST /api/v1/gateway` routes to. The gateway checks the call first
 * (`prepare`: the body's fields and the plugin's configuration, no I/O, nothing charged yet), then takes payment,
 * then runs the prepared call against the plugin's upstream; when that fails the charge is released.
 */
export interface GatewayPlugin {
  readonly id: string;
  /** Spec §2.5: a protected plugin needs a session, a verified MPP credential or a payment session; no built-in one is. */
  readonly auth: boolean;
  /** Answers `Accept: text/event-stream` with server-sent events. */
  readonly streaming: boolean;
  /** USD as a decimal string; null when the plugin has no pricing. */
  readonly priceUsd: string | null;
  /** Validates `fields` (the body without `plugin`) for `caller`; throws a `DomainError` (400, 503) before any payment. */
  prepare(fields: Record<string, unknown>, caller: PluginCaller): PluginCall;
}

/** Who calls: the session or API-key user when there is one (the gateway never requires it). */
export interface PluginCaller {
  user: AuthUser | null;
  ip: string;
}

export interface PluginLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface PluginRun {
  log: PluginLog;
  /** Aborted when the client goes away; plugins pass it to their upstream call where they can. */
  signal: AbortSignal;
  /** Set when the caller streams (and the plugin can): each piece of text as the upstream produces it. */
  onDelta?: ((text: string) => void) | undefined;
}

/** What a plugin answers: `message` of the success body, plus fields the plugin adds next to it (e.g. `contentType`). */
export interface PluginAnswer {
  message: string;
  extra?: Record<string, unknown>;
}

export type PluginCall = (run: PluginRun) => Promise<PluginAnswer>;

/** The plugin's upstream failed: 502 `{ error: 'plugin_failed', plugin, message }`; the words are fixed, the cause is logged. */
export const pluginFailed = (plugin: string, message: string) => new DomainError('PLUGIN_FAILED', undefined, { plugin, message });

/** The plugin cannot run on this server (its upstream is not configured): 503 before anything is charged. */
export const pluginUnavailable = (plugin: string, message: string) => new DomainError('PLUGIN_UNAVAILABLE', undefined, { plugin, message });

/** An optional field: absent when undefined, null or the empty string. */
export const isAbsent = (value: unknown) => value === undefined || value === null || value === '';

/** A model id a caller may name: provider-style ids (`openai/gpt-4o-mini`, `whisper-1`), nothing else. */
export const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$/;
