import { ERROR_CATALOGUE } from './error-catalogue.js';

/** A message with its parameters shown as `{name}`, as the docs list it. */
export function messagePattern(message: string | ((params: never) => string)): string {
  if (typeof message === 'string') return message;
  const named = new Proxy({}, { get: (_target, key) => `{${String(key)}}` });
  return (message as (params: unknown) => string)(named);
}

/** docs/errors.md: the catalogue as one table, generated so it cannot drift (`npm run docs:errors`). */
export function renderErrorDocs(): string {
  const rows = Object.entries(ERROR_CATALOGUE)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, { status, message }]) => `| \`${code}\` | ${status} | ${messagePattern(message).replaceAll('|', '\\|')} |`);
  return [
    '# Error catalogue',
    '',
    'Every error a client can receive from the platform, generated from `packages/core/src/error-catalogue.ts`',
    '(`npm run docs:errors`; a test fails when this file is stale). The body is `{ "error": <message> }`, plus the',
    'fields the spec names for a few answers (e.g. `required` and `balance` beside an insufficient gate balance, or',
    '`success: false` on every x402 answer). `{name}` stands for a value filled in at the time of the error.',
    '',
    'Services throw `new DomainError(code, params)` and know nothing of HTTP; the shared error handler',
    '(`packages/core/src/http/shared-http.ts`) answers with the status and message below. A body that is not JSON',
    "(or not the object a route's schema needs) answers 400 with the message of the code the route names as",
    "`invalidBody` in its config, whatever that code's own status. One answer is not a code: a rate limit's 429 with",
    "the rule's message (spec §8).",
    '',
    '| code | status | message |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
