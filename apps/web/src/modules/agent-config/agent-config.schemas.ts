import { type Static, Type } from '@sinclair/typebox';

export const Backup = Type.Object({ id: Type.String(), timestamp: Type.String() });
export type Backup = Static<typeof Backup>;

export const Config = Type.Record(Type.String(), Type.Unknown());
export type Config = Static<typeof Config>;

export const ConfigView = Type.Object({ config: Config, backups: Type.Array(Backup) });
export type ConfigView = Static<typeof ConfigView>;
