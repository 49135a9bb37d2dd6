import { newId } from '@aop/core';
import type { Kysely } from 'kysely';
import type { DB } from './schema.js';

export interface AuditEvent {
  userId: string | null;
  /** `{entity}.{verb}`, e.g. `session.create`. */
  action: string;
  target?: string | null;
  metadata?: Record<string, unknown>;
  ip?: string | null;
}

/** Appends one audit row; pass a transaction to record it with the change it describes. */
export async function writeAudit(db: Kysely<DB>, event: AuditEvent): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: newId('audit'),
      user_id: event.userId,
      action: event.action,
      target: event.target ?? null,
      metadata: JSON.stringify(event.metadata ?? {}),
      ip: event.ip ?? null,
    })
    .execute();
}
