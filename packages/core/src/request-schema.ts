import { type Static, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import type { ErrorCode, ErrorParams } from './errors.js';

/**
 * Request bodies are described with real TypeBox schemas (so the OpenAPI document tells clients every field), yet the
 * spec fixes a message per field ("Invalid skill name", "enabled must be a boolean"), not Ajv's. A property names its
 * catalogue error with `invalidAs(refuse(code))`; when Ajv refuses a body, the nearest such name on the path to the
 * failing keyword is the answer. A field without one falls back to the route's `invalidBody`.
 */
export const ERROR_KEYWORD = 'x-error';

/** A catalogue error with the values its message names. */
export interface Refusal {
  code: ErrorCode;
  params?: unknown;
}

export interface ErrorAnnotation extends Refusal {
  /** A different error for a failing keyword of this schema (`maxLength`: "too long" rather than "not a string"). */
  keywords?: Record<string, Refusal>;
}

type RefusalArgs<C extends ErrorCode> = ErrorParams<C> extends undefined ? [] : [params: ErrorParams<C>];

/** A catalogue error as a schema names it. */
export function refuse<C extends ErrorCode>(code: C, ...[params]: RefusalArgs<C>): Refusal {
  return params === undefined ? { code } : { code, params };
}

/**
 * Schema options naming the error a value answers with when it does not match, spread into `Type.*({…})`:
 * `Type.String({ maxLength: 100, ...invalidAs(refuse('INVALID_NAME')) })`; `byKeyword` gives a keyword its own.
 */
export function invalidAs(otherwise: Refusal, byKeyword?: Record<string, Refusal>): { [ERROR_KEYWORD]: ErrorAnnotation } {
  return { [ERROR_KEYWORD]: byKeyword ? { ...otherwise, keywords: byKeyword } : otherwise };
}

/**
 * `schema` or JSON `null` as one schema (`type: ["string", "null"]`), not a union: Ajv then reports the failing
 * keyword itself (`maxLength`) instead of one error per branch. Only for schemas with a single `type`.
 */
export function orNull<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  if (typeof schema.type !== 'string') throw new Error('orNull needs a schema with one type');
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });
}

/** A string that is not empty or only whitespace (`\s` is the set `String.prototype.trim` removes). */
export const NOT_BLANK = { not: { type: 'string', pattern: '^\\s*$' } } as const;
