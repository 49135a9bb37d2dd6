/**
 * The fuzzer's requests, derived from a service's OpenAPI document: for every POST/PUT/PATCH/DELETE route, a
 * deterministic list of malformed requests (per route, from the seed and the route, so one route's list does not
 * depend on the others). No value generated here names a host other than 127.0.0.1.
 */

/** The subset of JSON Schema (as TypeBox and @fastify/swagger write it) the generator reads. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
}

export interface Route {
  method: string;
  /** The OpenAPI path, `{param}` placeholders included. */
  path: string;
  pathParams: string[];
  queryParams: string[];
  body: Schema | undefined;
}

/** Who a case is sent as; what each means is the caller's business (cookie, API key, internal key, nobody). */
export type Identity = string;

export interface FuzzCase {
  route: Route;
  /** What is malformed, for the report: `NUL in the query`, `3,000 levels deep`, `field name=null`, … */
  kind: string;
  identity: Identity;
  /** Path and query, already percent-encoded where needed. */
  url: string;
  contentType: string | undefined;
  body: Buffer | undefined;
}

const MUTATING = new Set(['post', 'put', 'patch', 'delete']);

export function mutatingRoutes(doc: OpenApiDocument): Route[] {
  const routes: Route[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!MUTATING.has(method)) continue;
      const params = op.parameters ?? [];
      routes.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return routes;
}

/** mulberry32: small, fast and the same on every machine. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** An upstream URL that refuses: the only URL the fuzzer ever puts in a body. */
const CLOSED_URL = 'http://127.0.0.1:9/fuzz';

/** Strings tried, in order, against a field's `pattern`, so a valid-looking body gets past the first check. */
const PATTERN_CANDIDATES = [
  'fuzz',
  'fuzz-1',
  `0x${'1'.repeat(40)}`,
  `0x${'ab'.repeat(32)}`,
  `0x${'ab'.repeat(65)}`,
  '1',
  '1.5',
  'fuzz@example.com',
  CLOSED_URL,
  '2030-01-01T00:00:00.000Z',
  '2030-01-01',
  '00000000-0000-4000-8000-000000000000',
  '* * * * *',
  'FUZZ',
  'a',
];

function sampleString(schema: Schema): string {
  if (schema.format === 'email') return 'fuzz@example.com';
  if (schema.format === 'uri' || schema.format === 'url') return CLOSED_URL;
  if (schema.format === 'date-time') return '2030-01-01T00:00:00.000Z';
  let value = 'fuzz';
  if (schema.pattern) {
    try {
      const pattern = new RegExp(schema.pattern, 'u');
      value = PATTERN_CANDIDATES.find((c) => pattern.test(c)) ?? value;
    } catch {
      // A pattern JavaScript cannot compile keeps the default.
    }
  }
  if (schema.minLength !== undefined && value.length < schema.minLength) value = value.padEnd(schema.minLength, 'z');
  if (schema.maxLength !== undefined && value.length > schema.maxLength) value = value.slice(0, Math.max(schema.maxLength, 0));
  return value;
}

/** A plausible value for `schema`: the body the mutations start from, so they reach past the first check. */
function sample(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 6) return 'fuzz';
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const choice = schema.anyOf ?? schema.oneOf;
  if (choice?.length) return sample(choice.find((s) => s.type !== 'null') ?? choice[0], depth + 1);
  if (schema.allOf?.length) return Object.assign({}, ...schema.allOf.map((s) => sample(s, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type ?? (schema.properties ? 'object' : undefined)) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, value]) => [key, sample(value, depth + 1)]));
    case 'array':
      return [sample(schema.items, depth + 1)];
    case 'string':
      return sampleString(schema);
    case 'integer':
    case 'number':
      return Math.min(Math.max(1, schema.minimum ?? 1), schema.maximum ?? Number.MAX_SAFE_INTEGER);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return 'fuzz';
  }
}

const NUL = '\u0000';

/** Values of the wrong type, at the edges of the right type, or hostile as text; one replaces one field per case. */
const JUNK: readonly [string, () => unknown][] = [
  ['null', () => null],
  ['number', () => 12345],
  ['negative', () => -1],
  ['float', () => 1.5],
  ['huge number', () => 1e308],
  ['unsafe integer', () => 2 ** 64],
  ['true', () => true],
  ['empty array', () => []],
  ['array', () => ['fuzz', 1, null]],
  ['empty object', () => ({})],
  ['object', () => ({ fuzz: 1 })],
  ['empty string', () => ''],
  ['blank string', () => '   '],
  ['huge string', () => 'x'.repeat(200_000)],
  ['NUL string', () => `a${NUL}b`],
  ['unicode', () => '\u202eüñí©ødé 💥 \ud83d'],
  ['lone surrogate', () => '\ud800'],
  ['object of edge values', () => ({ text: 'a\ud800b', big: 2 ** 64, tiny: -1e308, list: [null, {}, []] })],
  // Fields that accept JSON inside a string parse it themselves, past the body parser's rules.
  ['JSON text holding NUL', () => '{"a":"\\u0000"}'],
  ['JSON text holding a lone surrogate', () => '{"a":"\\ud800"}'],
  ['JSON text 10,000 levels deep', () => `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
  ['SQL', () => "' OR '1'='1' --"],
  ['path traversal', () => '../../../../etc/passwd'],
  ['operator object', () => ({ $gt: '' })],
  ['numeric string', () => '-0.0e999'],
  ['date string', () => '0000-00-00T99:99:99Z'],
  ['64-deep', () => nest(63)],
  ['__proto__ key', () => JSON.parse('{"__proto__": {"isAdmin": true}}')],
];

/** `levels` levels of arrays around a string: nest(63) inside an object field makes a body exactly 64 deep. */
function nest(levels: number): unknown {
  let value: unknown = 'fuzz';
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/**
 * Paths of the fields of a sample body, one level into objects and arrays, plus a key no schema names at the top and
 * in each object (free-form objects such as a config have no declared fields at all).
 */
function fieldPaths(value: unknown): string[][] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [['fuzz']];
  const paths: string[][] = [['fuzz']];
  for (const [key, inner] of Object.entries(value)) {
    paths.push([key]);
    if (Array.isArray(inner)) paths.push([key, '0']);
    else if (typeof inner === 'object' && inner !== null) for (const sub of [...Object.keys(inner), 'fuzz']) paths.push([key, sub]);
  }
  return paths;
}

function withField(base: unknown, path: string[], replacement: unknown): unknown {
  const copy = structuredClone(base) as Record<string, unknown>;
  let target: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[path.at(-1)!] = replacement;
  return copy;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const text = (value: string) => Buffer.from(value);

interface BodyCase {
  kind: string;
  contentType: string | undefined;
  body: Buffer | undefined;
}

/** Whole-body cases: the same for every route, except that they start from the route's sample body. */
function structuralCases(base: unknown): BodyCase[] {
  const object = typeof base === 'object' && base !== null && !Array.isArray(base) ? base : {};
  // JSON.stringify overflows the stack somewhere past 3,000 levels (where exactly depends on the stack): both sides.
  const deep = `${'['.repeat(3_000)}${']'.repeat(3_000)}`;
  const deeper = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
  const cases: [string, string | undefined, Buffer | undefined][] = [
    ['NUL in a string', 'application/json', json({ ...object, name: `a${NUL}b`, fuzz: NUL })],
    ['NUL in a key', 'application/json', json({ ...object, [`a${NUL}`]: 1 })],
    ['3,000 levels deep', 'application/json', text(deep)],
    ['100,000 levels deep in a field', 'application/json', text(`{"name":${deeper}}`)],
    ['__proto__ key', 'application/json', text(`{"__proto__":{"isAdmin":true},"name":"fuzz"}`)],
    ['constructor.prototype key', 'application/json', text(`{"constructor":{"prototype":{"isAdmin":true}}}`)],
    ['sample body', 'application/json', json(base)],
    ['empty JSON body', 'application/json', Buffer.alloc(0)],
    ['no body', undefined, undefined],
    ['invalid JSON', 'application/json', text('{"name": "fuzz",')],
    ['null', 'application/json', text('null')],
    ['array', 'application/json', json([base])],
    ['number', 'application/json', text('42')],
    ['string', 'application/json', text('"fuzz"')],
    ['text/plain', 'text/plain', json(base)],
    ['form', 'application/x-www-form-urlencoded', text('name=fuzz&id=%00')],
    ['octet-stream', 'application/octet-stream', Buffer.from([0, 255, 254, 1, 2])],
    ['invalid UTF-8', 'application/json', Buffer.concat([text('{"name":"'), Buffer.from([0xc3, 0x28, 0xff]), text('"}')])],
    ['over 1 MB', 'application/json', json({ ...object, name: 'x'.repeat(1_100_000) })],
    ['64 levels deep', 'application/json', json({ ...object, name: nest(63) })],
    ['empty object', 'application/json', text('{}')],
  ];
  return cases.map(([kind, contentType, body]) => ({ kind, contentType, body }));
}

/** Junk for a path parameter, percent-encoded as it goes on the wire. */
const NUL_ID = '%00';
const PATH_JUNK: readonly [string, string][] = [
  ['NUL inside an id', 'fuzz%00id'],
  ['long id', 'x'.repeat(499)],
  ['too long id', 'x'.repeat(2_000)],
  ['encoded slashes', '..%2F..%2Fetc%2Fpasswd'],
  ['unicode id', '%F0%9F%92%A5%E2%80%AE'],
  ['broken percent-encoding', '%E0%A4%A'],
  ['quote id', "fuzz'%22%3B--"],
  ['numeric id', '-1'],
];

function urlFor(route: Route, params: Record<string, string>, query: string): string {
  const path = route.path.replace(/\{([^}]+)\}/g, (_m, name: string) => params[name] ?? 'fuzz-id');
  return query ? `${path}?${query}` : path;
}

export interface CaseOptions {
  seed: number;
  /** Identities in order of importance: the first gets every case, the others the whole-body cases. */
  identities: Identity[];
  /** Values for path parameters worth trying besides junk (another user's id), by parameter name. */
  knownIds?: Record<string, string>;
  limit: number;
}

/** The cases for one route, most telling first (a run cut short by its time limit has sent those everywhere). */
export function casesFor(route: Route, options: CaseOptions): FuzzCase[] {
  const random = prng(options.seed ^ hash(`${route.method} ${route.path}`));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const base = sample(route.body) ?? {};
  const [primary = 'anonymous', ...others] = options.identities;
  const cases: FuzzCase[] = [];
  const add = (identity: Identity, kind: string, url: string, body: Omit<BodyCase, 'kind'> | undefined) =>
    cases.push({ route, kind, identity, url, contentType: body?.contentType, body: body?.body });
  const plainUrl = urlFor(route, {}, '');
  const sampleBody = { contentType: 'application/json', body: json(base) };

  // Junk in the URL goes with a body that would otherwise pass.
  const query = route.queryParams.length ? route.queryParams : ['q'];
  const nulUrls: [string, string][] = [
    ['NUL in the query', urlFor(route, {}, `${query[0]}=%00`)],
    ...route.pathParams.map((param): [string, string] => [`NUL id in {${param}}`, urlFor(route, { [param]: NUL_ID }, '')]),
  ];
  const otherUrls: [string, string][] = [
    ['NUL in a query key', urlFor(route, {}, '%00=1')],
    ['repeated query values', urlFor(route, {}, query.map((q) => `${q}=1&${q}=2`).join('&'))],
    ['long query value', urlFor(route, {}, `${query[0]}=${'9'.repeat(4_000)}`)],
  ];
  for (const param of route.pathParams) {
    for (const [kind, value] of PATH_JUNK) otherUrls.push([`${kind} in {${param}}`, urlFor(route, { [param]: value }, '')]);
    const known = options.knownIds?.[param];
    if (known) otherUrls.push([`another user's {${param}}`, urlFor(route, { [param]: encodeURIComponent(known) }, '')]);
  }
  const structural = structuralCases(base);
  for (const [kind, url] of nulUrls) add(primary, kind, url, sampleBody);
  for (const body of structural.slice(0, 4)) add(primary, body.kind, plainUrl, body);
  for (const [kind, url] of otherUrls) add(primary, kind, url, sampleBody);
  for (const body of structural.slice(4)) add(primary, body.kind, plainUrl, body);
  for (const identity of others) for (const body of structural.slice(0, 8)) add(identity, body.kind, plainUrl, body);

  // Then one field at a time, for as many cases as are left, taking turns between the identities (the first twice).
  const targets = fieldPaths(base);
  const object = typeof base === 'object' && base !== null && !Array.isArray(base) ? base : {};
  const mutators = [primary, ...others, primary];
  for (let i = 0; cases.length < options.limit; i++) {
    const path = pick(targets);
    const [junkName, junk] = pick(JUNK);
    add(mutators[i % mutators.length]!, `field ${path.join('.')}=${junkName}`, plainUrl, {
      contentType: 'application/json',
      body: json(withField(object, path, junk())),
    });
  }
  return cases.slice(0, options.limit);
}
