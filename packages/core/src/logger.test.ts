import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions, redactUrl } from './logger.js';

describe('logging', () => {
  it('redacts credentials in query strings', () => {
    expect(redactUrl('/api/auth/idp/callback?code=abc&state=xyz&foo=1')).toBe(
      '/api/auth/idp/callback?code=%5Bredacted%5D&state=%5Bredacted%5D&foo=1',
    );
    expect(redactUrl('/plain')).toBe('/plain');
  });

  it('never writes authorization headers, cookies or passwords', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = pino(loggerOptions('info'), sink);
    log.info(
      {
        req: { headers: { authorization: 'Bearer s3cret', cookie: 'service-session=abc' } },
        body: { password: 'hunter2', apiKey: 'sk_x' },
      },
      'hello',
    );
    const out = lines.join('');
    expect(out).toContain('hello');
    for (const secret of ['s3cret', 'service-session=abc', 'hunter2', 'sk_x']) expect(out).not.toContain(secret);
  });
});
