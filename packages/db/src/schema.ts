import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Timestamps are written as Date or ISO strings and read as Date. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string | T | undefined, string | T>;

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  is_admin: Generated<boolean>;
  email_verified_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
}

export interface AuditLogTable {
  id: string;
  user_id: string | null;
  action: string;
  target: string | null;
  metadata: Json<Record<string, unknown>>;
  ip: string | null;
  created_at: Timestamp;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: Timestamp;
}

export interface DB {
  users: UsersTable;
  sessions: SessionsTable;
  audit_log: AuditLogTable;
  schema_migrations: SchemaMigrationsTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type Session = Selectable<SessionsTable>;
export type AuditEntry = Selectable<AuditLogTable>;
