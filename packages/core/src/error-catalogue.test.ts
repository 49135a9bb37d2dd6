import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from './error-catalogue.js';
import { messagePattern, renderErrorDocs } from './error-docs.js';
import { DomainError, errorResponse, HttpError, isDomainError, isPublicError } from './errors.js';

// Issue #17: one closed list of errors, each with its status and the message the spec fixes.

describe('the error catalogue', () => {
  const entries = Object.entries(ERROR_CATALOGUE);

  it('names every error with an UPPER_SNAKE code and a 4xx/5xx status', () => {
    expect(entries.length).toBeGreaterThan(300);
    for (const [code, { status }] of entries) {
      expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
      expect(status >= 400 && status <= 599, code).toBe(true);
    }
  });

  it('holds each message once per status: one message, one place', () => {
    const seen = new Map<string, string>();
    for (const [code, { status, message }] of entries) {
      const key = `${status} ${messagePattern(message)}`;
      expect(seen.get(key), `${code} repeats ${seen.get(key)}`).toBeUndefined();
      seen.set(key, code);
    }
  });

  it('docs/errors.md is the catalogue as generated (npm run docs:errors)', () => {
    const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    expect(docs).toBe(renderErrorDocs());
    expect(docs).toContain('| `FIELD_TOO_LONG` | 400 | {field} must be at most {max} characters |');
  });
});

describe('DomainError and the edge mapping', () => {
  it('renders the catalogue message with its values, and the edge gives the status', () => {
    const err = new DomainError('FIELD_TOO_LONG', { field: 'name', max: 100 });
    expect(err.message).toBe('name must be at most 100 characters');
    expect(errorResponse(err)).toEqual({ status: 400, body: { error: 'name must be at most 100 characters' } });
    expect(errorResponse(new DomainError('AGENT_NOT_FOUND'))).toEqual({ status: 404, body: { error: 'Agent not found' } });
  });

  it('carries the extra fields the spec names beside the message, and the message wins over a field named error', () => {
    const err = new DomainError('INSUFFICIENT_GATE_TOKENS', { required: 5, balance: 2 }, { required: 5, balance: 2, error: 'x' });
    expect(errorResponse(err)).toEqual({
      status: 403,
      body: { required: 5, balance: 2, error: 'Insufficient gate tokens: 5 required, wallet holds 2' },
    });
  });

  it('tells codes apart, and public errors from bugs', () => {
    const err = new DomainError('NO_WALLET_LINKED');
    expect(isDomainError(err, 'NO_WALLET_LINKED')).toBe(true);
    expect(isDomainError(err, 'AGENT_NOT_FOUND')).toBe(false);
    expect(isPublicError(err)).toBe(true);
    expect(isPublicError(new HttpError(429, 'Too many requests'))).toBe(true);
    expect(isPublicError(new Error('bug'))).toBe(false);
    expect(errorResponse(new HttpError(429, 'Too many requests', { retry: 1 }))).toEqual({
      status: 429,
      body: { retry: 1, error: 'Too many requests' },
    });
  });
});
