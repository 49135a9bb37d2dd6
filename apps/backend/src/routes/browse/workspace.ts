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

/** Content posted to `write`: text, or base64 for binary files. */
export function decodeContent(content: unknown, encoding: unknown): Buffer {
  if (content === undefined || content === null) throw new DomainError('FIELD_REQUIRED', { field: 'content' });
  if (typeof content !== 'string') throw new DomainError('FIELD_NOT_STRING', { field: 'content' });
  const kind = encoding ?? 'utf8';
  if (kind === 'utf8') return Buffer.from(content, 'utf8');
  if (kind === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content) || content.length % 4 !== 0) throw new DomainError('CONTENT_NOT_VALID_BASE64');
    return Buffer.from(content, 'base64');
  }
  throw new DomainError('ENCODING_UTF8_BASE64');
}
