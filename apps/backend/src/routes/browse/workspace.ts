import { DomainError } from '@aop/core';

/**
 * Paths of an agent's workspace are checked as text here, before the host is asked for anything; the host's
 * `workspace()` resolves them where the files are (`@aop/provisioner` `workspace.ts` has both halves).
 */
export {
  DEFAULT_TREE_DEPTH,
  type FileContent,
  MAX_FILE_BYTES,
  MAX_TREE_DEPTH,
  MAX_TREE_ENTRIES,
  PATH_MESSAGES,
  type TreeEntry,
  checkRelativePath,
} from '@aop/provisioner';

/**
 * Content posted to `write`: text, or base64 for binary files. The request schema has typed both (a string, and
 * `utf8` or `base64`); null stands for absent.
 */
export function decodeContent(content: string | null | undefined, encoding: 'utf8' | 'base64' | null | undefined): Buffer {
  if (content === undefined || content === null) throw new DomainError('FIELD_REQUIRED', { field: 'content' });
  if ((encoding ?? 'utf8') === 'utf8') return Buffer.from(content, 'utf8');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content) || content.length % 4 !== 0) throw new DomainError('CONTENT_NOT_VALID_BASE64');
  return Buffer.from(content, 'base64');
}
