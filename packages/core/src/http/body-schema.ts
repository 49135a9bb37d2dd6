import AjvCompiler from '@fastify/ajv-compiler';
import { type Static, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { DomainError, type ErrorCode, type ErrorParams } from '../errors.js';

/**
 * Request bodies are described with real TypeBox schemas (so the OpenAPI document tells clients every field), yet the
 * spec fixes a message per field ("Invalid skill name", "enabled must be a boolean"), not Ajv's. A property names its
 * catalogue error with `invalidAs(refuse(code))`; when Ajv refuses a body, the nearest such name on the path to the
 * failing keyword is the answer. A field without one falls back to the route's `invalidBodyMessage`.
 */
export const ERROR_KEYWORD = 'x-error';

/** A catalogue error with the values its message names. */
export interface Refusal {
  code: ErrorCode;
  params?: unknown;
}

interface ErrorAnnotation extends Refusal {
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

type SchemaNode = Record<string, unknown>;

const annotationOf = (node: unknown): ErrorAnnotation | undefined =>
  node && typeof node === 'object' ? ((node as SchemaNode)[ERROR_KEYWORD] as ErrorAnnotation | undefined) : undefined;

const refusalFor = (annotation: ErrorAnnotation | undefined, keyword: string): Refusal | undefined =>
  annotation && (annotation.keywords?.[keyword] ?? annotation);

/**
 * The catalogue error of a refused body, if its schema names one. Ajv stops at the first failing value
 * (`allErrors: false`); a failing `anyOf` lists its branches' errors first and its own last, so the last error is the
 * one to answer. Its `schemaPath` (`#/properties/name/pattern`) is walked from the root and the deepest annotation on
 * the way wins; a missing required property answers with that property's own error.
 */
export function bodyErrorOf(schema: unknown, errors: readonly FastifySchemaValidationError[]): DomainError | undefined {
  const refused = errors.at(-1) as (FastifySchemaValidationError & { schemaPath?: string }) | undefined;
  if (!refused?.schemaPath?.startsWith('#')) return undefined;
  let node: unknown = schema;
  let owner: unknown = schema; // the schema object holding the failing keyword
  let found = annotationOf(node);
  for (const segment of refused.schemaPath.slice(2).split('/')) {
    if (!node || typeof node !== 'object') break;
    owner = node;
    node = (node as SchemaNode)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    found = annotationOf(node) ?? found;
  }
  // A keyword's own error only counts on the schema that holds the keyword.
  const own = annotationOf(owner);
  let refusal = own ? refusalFor(own, refused.keyword) : found;
  if (refused.keyword === 'required') {
    const missing = (refused.params as { missingProperty?: string }).missingProperty;
    const properties = (owner as SchemaNode | undefined)?.properties as SchemaNode | undefined;
    refusal = (missing && properties ? refusalFor(annotationOf(properties[missing]), 'required') : undefined) ?? refusal;
  }
  if (!refusal) return undefined;
  return new (DomainError as new (code: ErrorCode, params?: unknown) => DomainError)(refusal.code, refusal.params);
}

const SHARED_OPTIONS = { useDefaults: true, removeAdditional: true, allErrors: false } as const;
const errorKeyword = (ajv: { addKeyword(definition: { keyword: string }): unknown }) => ajv.addKeyword({ keyword: ERROR_KEYWORD });

/**
 * Ajv as every service runs it. Query strings, path parameters and headers are text, so their values are coerced to
 * the schema's types (`?limit=5` is a number); a JSON body already carries its types, so it is taken as sent: a
 * `"true"` where a boolean belongs is refused with the field's error rather than quietly turned into `true`.
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const factory = AjvCompiler();
  const plugins = [errorKeyword];
  const text = factory({}, { customOptions: { ...SHARED_OPTIONS, coerceTypes: 'array' }, plugins } as never);
  const json = factory({}, { customOptions: { ...SHARED_OPTIONS, coerceTypes: false }, plugins } as never);
  return (route) => (route.httpPart === 'body' ? json : text)(route as never) as ReturnType<FastifySchemaCompiler<unknown>>;
}
