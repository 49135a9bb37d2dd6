import { newId } from '@aop/core';
import { type Database, sql } from '@aop/db';
import { requireOwnAgent } from '../../platform/owned-agent.js';

/** The small workspace per agent of a user (spec §4.18 agent interaction files), read and written as the user. */

export const FILE_PATH_MAX = 512;
/** UTF-8 bytes of one file; the whole request body is at most 1 MiB anyway (spec §8). */
export const FILE_CONTENT_MAX_BYTES = 1_000_000;
export const FILE_AGENT_ID_MAX = 200;

/**
 * A workspace path: relative, `/`-separated, at most 512 characters, without
 * empty, `.` or `..` segments, backslashes or control characters.
 */
export function isValidFilePath(path: unknown): path is string {
  if (typeof path !== 'string' || path.length === 0 || path.length > FILE_PATH_MAX) return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (path.startsWith('/') || path.includes('\\') || /[\u0000-\u001f\u007f]/.test(path)) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

/**
 * `isValidFilePath` as a JSON Schema `pattern` (with `maxLength: FILE_PATH_MAX`), for the request body: segments of
 * anything but `/`, backslashes and control characters, none of them `.` or `..`, joined by single slashes.
 * files.test.ts holds the two to the same answers.
 */
const PATH_SEGMENT = String.raw`(?!\.{1,2}(?:/|$))[^/\\\u0000-\u001f\u007f]+`;
export const FILE_PATH_PATTERN = `^${PATH_SEGMENT}(?:/${PATH_SEGMENT})*$`;

export interface FileInfo {
  path: string;
  size: number;
  updatedAt: string;
}

/** The agent's files, ordered by path byte by byte (not by the database's collation). */
export async function listFiles(db: Database, userId: string, agentId: string): Promise<FileInfo[]> {
  const rows = await db.withUser(userId, (trx) =>
    trx
      .selectFrom('agent_files')
      .select(['path', 'size', 'updated_at'])
      .where('user_id', '=', userId)
      .where('agent_id', '=', agentId)
      .orderBy(sql`path collate "C"`)
      .execute(),
  );
  return rows.map((r) => ({ path: r.path, size: r.size, updatedAt: r.updated_at.toISOString() }));
}

/** One file with its content, or null when the agent has none at `path`. */
export async function getFile(
  db: Database,
  userId: string,
  agentId: string,
  path: string,
): Promise<(FileInfo & { content: string }) | null> {
  const row = await db.withUser(userId, (trx) =>
    trx
      .selectFrom('agent_files')
      .select(['path', 'content', 'size', 'updated_at'])
      .where('user_id', '=', userId)
      .where('agent_id', '=', agentId)
      .where('path', '=', path)
      .executeTakeFirst(),
  );
  return row ? { path: row.path, content: row.content, size: row.size, updatedAt: row.updated_at.toISOString() } : null;
}

/**
 * Creates or replaces a file of one of the user's agents (404 `Agent not found` otherwise) and tells which it did.
 * `size` is the content's UTF-8 bytes.
 */
export async function saveFile(
  db: Database,
  userId: string,
  file: { agentId: string; path: string; content: string; size: number },
): Promise<{ file: FileInfo; created: boolean }> {
  const { agentId, path, content, size } = file;
  const saved = await db.withUser(userId, async (trx) => {
    await requireOwnAgent(trx, agentId);
    return (
      trx
        .insertInto('agent_files')
        .values({ id: newId('file'), user_id: userId, agent_id: agentId, path, content, size })
        .onConflict((oc) => oc.columns(['user_id', 'agent_id', 'path']).doUpdateSet({ content, size, updated_at: sql<Date>`now()` }))
        // `xmax = 0` only for a row this statement inserted.
        .returning(['path', 'size', 'updated_at', sql<boolean>`(xmax = 0)`.as('created')])
        .executeTakeFirstOrThrow()
    );
  });
  return { file: { path: saved.path, size: saved.size, updatedAt: saved.updated_at.toISOString() }, created: saved.created };
}

/** Deletes one file; false when the agent has none at `path`. */
export async function deleteFile(db: Database, userId: string, agentId: string, path: string): Promise<boolean> {
  const result = await db.withUser(userId, (trx) =>
    trx.deleteFrom('agent_files').where('user_id', '=', userId).where('agent_id', '=', agentId).where('path', '=', path).executeTakeFirst(),
  );
  return Number(result.numDeletedRows) !== 0;
}
