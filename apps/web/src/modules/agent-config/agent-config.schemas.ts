import { invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

export const Backup = Type.Object({ id: Type.String(), timestamp: Type.String() });
export type Backup = Static<typeof Backup>;

export const Config = Type.Record(Type.String(), Type.Unknown());
export type Config = Static<typeof Config>;

export const ConfigView = Type.Object({ config: Config, backups: Type.Array(Backup) });
export type ConfigView = Static<typeof ConfigView>;

/**
 * `POST /api/config`: the configuration as an object, or as a string of JSON holding one. The schema takes either
 * (anything else answers "Invalid config object", spec §4.2); parsing the string and checking the known keys
 * (`Invalid config: …`) stay in the route, since their messages depend on what the text holds.
 */
export const SaveConfigBody = Type.Object({
  config: Type.Union([Config, Type.String({ description: 'JSON text of an object' })], invalidAs(refuse('INVALID_CONFIG_OBJECT'))),
});
export type SaveConfigBody = Static<typeof SaveConfigBody>;

/** `PUT /api/config`: restores a backup (a missing or empty id answers "Missing backupId"). */
export const RestoreConfigBody = Type.Object({
  backupId: Type.String({ minLength: 1, ...invalidAs(refuse('MISSING_BACKUPID')) }),
});
export type RestoreConfigBody = Static<typeof RestoreConfigBody>;

/**
 * What an agent's gateway runs with (issue #19), read from the configuration its host writes into openclaw.json:
 * `modelSource` `platform` when the agent's provider key sets the model (the stored `agents.defaults.model.primary`
 * is then replaced), `config` when the stored configuration names it, `default` when neither does (OpenClaw's own).
 */
export const AppliedAgentConfig = Type.Object({
  model: orNull(Type.String()),
  logLevel: orNull(Type.String()),
  modelSource: Type.Union([Type.Literal('platform'), Type.Literal('config'), Type.Literal('default')]),
});
export type AppliedAgentConfig = Static<typeof AppliedAgentConfig>;

/**
 * `GET /api/agents/:id/config`: the agent's own configuration (what its host applies), its newest backups, and what
 * it runs with (`applied`, null when no host of the platform runs it).
 */
export const AgentConfigView = Type.Object({
  agentId: Type.String(),
  config: Config,
  backups: Type.Array(Backup),
  applied: Type.Union([AppliedAgentConfig, Type.Null()]),
});
export type AgentConfigView = Static<typeof AgentConfigView>;

/** `PUT /api/agents/:id/config`: the configuration saved, `backupId` the backup of the one it replaced. */
export const SavedAgentConfig = Type.Object({
  success: Type.Literal(true),
  agentId: Type.String(),
  config: Config,
  backupId: Type.String(),
  backups: Type.Array(Backup),
});
export type SavedAgentConfig = Static<typeof SavedAgentConfig>;

/** `POST /api/agents/:id/config/restore`: the configuration restored from backup `restoredFrom`. */
export const RestoredAgentConfig = Type.Object({
  success: Type.Literal(true),
  agentId: Type.String(),
  config: Config,
  restoredFrom: Type.String(),
  backups: Type.Array(Backup),
});
export type RestoredAgentConfig = Static<typeof RestoredAgentConfig>;

/** `GET /api/agents/:id/config/backups/:backupId`: one backup with its configuration. */
export const AgentConfigBackup = Type.Object({ agentId: Type.String(), backup: Type.Object({ ...Backup.properties, config: Config }) });
export type AgentConfigBackup = Static<typeof AgentConfigBackup>;
