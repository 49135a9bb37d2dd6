import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifyRequest, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { DomainError, type ErrorCode } from '../errors.js';
import { ERROR_KEYWORD, type ErrorAnnotation, type Refusal } from '../request-schema.js';

// How a refused body is answered: the annotations `request-schema.ts` puts on a schema, read back on the failing path.

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

// `unicode: false`: string lengths count UTF-16 units, as `String.length` (and every limit the spec and the services
// state) does, not code points. `allowUnionTypes`: `orNull` writes `type: [T, "null"]`.
// Ajv marks `unicode` deprecated (code points became its default) and warns at every start; that choice is deliberate
// here, so that one warning is dropped and every other passes on.
const ajvLogger = {
  log: console.log.bind(console),
  warn: (...args: unknown[]) => {
    if (!String(args[0]).includes('option unicode')) console.warn(...args);
  },
  error: console.error.bind(console),
};
const SHARED_OPTIONS = {
  useDefaults: true,
  removeAdditional: true,
  allErrors: false,
  unicode: false,
  allowUnionTypes: true,
  logger: ajvLogger,
} as const;
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

/**
 * A `preValidation` hook running `guard` (authentication) ahead of the body schema when the body is a JSON object.
 * Routes whose handler checked the caller before the fields keep that order now that the schema checks the fields
 * first: an anonymous caller gets 401 whatever fields it sent. A body that is not an object was refused (400) before
 * anyone looked at the caller, and still is.
 */
export function beforeObjectBody(guard: (request: FastifyRequest) => unknown): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const { body } = request;
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) await guard(request);
  };
}
