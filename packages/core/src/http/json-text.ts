/**
 * Checks on JSON text before it is trusted. Both are single linear passes over the raw string, with no recursion, so
 * a hostile body cannot overflow the stack while being checked.
 */
import { DomainError, type PlainErrorCode } from '../errors.js';

/** Containers (`[`, `{`) nested deeper than this are refused: nothing the platform accepts comes close. */
export const MAX_JSON_DEPTH = 64;

/** Index of the `"` that closes the string opened at `open` (text.length when it never closes: not JSON). */
function closingQuote(text: string, open: number): number {
  let quote = open;
  for (;;) {
    quote = text.indexOf('"', quote + 1);
    if (quote === -1) return text.length;
    // A quote preceded by an odd run of backslashes is escaped and belongs to the string.
    let before = quote - 1;
    while (text.charCodeAt(before) === 92) before--;
    if ((quote - 1 - before) % 2 === 0) return quote;
  }
}

/**
 * Whether arrays and objects nest deeper than `max`, counting only brackets outside string literals. Strings are
 * skipped with `indexOf`, so a large string costs next to nothing. Meant to run before `JSON.parse`: a deep body is
 * refused before anything recursive (prototype scans, validation, `JSON.stringify` when relayed) walks it.
 */
export function jsonNestsDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) i = closingQuote(text, i);
    else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

const hexAt = (text: string, at: number): number => {
  const digits = text.slice(at, at + 4);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? Number.parseInt(digits, 16) : -1;
};

/**
 * Whether a string (a key or a value) of this JSON text holds a character Postgres refuses: U+0000 (in text and
 * jsonb) or half of a surrogate pair (jsonb: "invalid input syntax for type json"). JSON can only carry either as a
 * `\uXXXX` escape (raw control characters make the text invalid, and decoding the body as UTF-8 already replaced any
 * invalid byte), and an escape is real only when its backslash is not itself escaped: an even run of backslashes
 * before it. Meaningful for text that parses as JSON; one pass over the escapes, so a body without any costs one
 * `indexOf`.
 */
export function jsonHasInvalidCharacters(text: string): boolean {
  for (let at = text.indexOf('\\u'); at !== -1; at = text.indexOf('\\u', at + 2)) {
    let before = at - 1;
    while (text.charCodeAt(before) === 92) before--;
    if ((at - 1 - before) % 2 !== 0) continue;
    const code = hexAt(text, at + 2);
    if (code === 0) return true;
    if (code >= 0xdc00 && code <= 0xdfff) return true;
    if (code >= 0xd800 && code <= 0xdbff) {
      const low = text.startsWith('\\u', at + 6) ? hexAt(text, at + 8) : -1;
      if (low < 0xdc00 || low > 0xdfff) return true;
      at += 6;
    }
  }
  return false;
}

/**
 * The shared JSON body parser's rules, for JSON text it never saw: a raw body read for its signature, or a field
 * whose value is a string holding JSON. Call before `JSON.parse`; throws the 400 `code` names, or the shared parser's
 * own (`NESTED_TOO_DEEPLY`, `INVALID_CHARACTERS`: U+0000 or half a surrogate pair).
 */
export function checkJsonText(text: string, code?: PlainErrorCode): void {
  if (jsonNestsDeeperThan(text)) throw new DomainError(code ?? 'NESTED_TOO_DEEPLY');
  if (jsonHasInvalidCharacters(text)) throw new DomainError(code ?? 'INVALID_CHARACTERS');
}
