import { invalidAs, refuse } from '@aop/core/request-schema';
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
