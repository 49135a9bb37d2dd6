import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterAll, describe, expect, it } from 'vitest';
import { BaseEnvSchema, ConfigError, Env, loadDevSecrets, parseEnv, parseTrustProxy, resolveSecrets, toBaseConfig } from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'aop-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config', () => {
  const Schema = Type.Composite([BaseEnvSchema, Type.Object({ PORT: Env.port(3000), FLAG: Env.bool(false) })]);

  it('applies defaults and converts types', () => {
    const env = parseEnv(Schema, { PORT: '8080', FLAG: 'true', UNRELATED: 'x' });
    expect(env.PORT).toBe(8080);
    expect(env.FLAG).toBe(true);
    expect(env.NODE_ENV).toBe('development');
    expect(toBaseConfig(env).trustProxy).toBe(false);
    expect(parseEnv(Schema, { PORT: '' }).PORT).toBe(3000);
  });

  it('reports every invalid variable at once', () => {
    try {
      parseEnv(Schema, { PORT: 'eighty', NODE_ENV: 'staging' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('PORT');
      expect((err as Error).message).toContain('NODE_ENV');
    }
  });

  it('refuses a fraction or a word where a whole number is asked, instead of truncating it', () => {
    const Ints = Type.Object({ POOL: Env.int(10, 1), CAP: Env.optional(Type.Integer()) });
    expect(parseEnv(Ints, { POOL: ' 12 ', CAP: '-3' })).toEqual({ POOL: 12, CAP: -3 });
    for (const bad of ['1.5', '2e3', '0x10']) {
      expect(() => parseEnv(Ints, { POOL: bad }), bad).toThrow(`POOL: Expected a whole number (got "${bad}")`);
    }
    expect(() => parseEnv(Ints, { POOL: 'ten' })).toThrow('POOL: Expected integer (got "ten")');
    expect(() => parseEnv(Ints, { POOL: '0' })).toThrow(/POOL: Expected integer to be greater or equal to 1/);
  });

  it('parses TRUST_PROXY', () => {
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy('true')).toBe(true);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.0/8, 127.0.0.1')).toEqual(['10.0.0.0/8', '127.0.0.1']);
  });

  it('generates development secrets once, private to the owner, and shares them', () => {
    const a = resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET'], {}, { production: false, dataDir: dir });
    const b = resolveSecrets(['INTERNAL_API_KEY'], {}, { production: false, dataDir: dir });
    expect(a.INTERNAL_API_KEY).toMatch(/^[0-9a-f]{64}$/);
    expect(b.INTERNAL_API_KEY).toBe(a.INTERNAL_API_KEY);
    expect(a.HMAC_SECRET).not.toBe(a.INTERNAL_API_KEY);
    const file = join(dir, 'secrets.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8')).SESSION_SECRET).toMatch(/^[0-9a-f]{64}$/);
    expect(loadDevSecrets(dir)).toEqual(JSON.parse(readFileSync(file, 'utf8')));
  });

  it('prefers the environment, and requires secrets in production', () => {
    expect(
      resolveSecrets(['INTERNAL_API_KEY'], { INTERNAL_API_KEY: 'from-env' }, { production: false, dataDir: dir }).INTERNAL_API_KEY,
    ).toBe('from-env');
    const prodDir = join(dir, 'prod');
    expect(() => resolveSecrets(['INTERNAL_API_KEY', 'HMAC_SECRET'], { HMAC_SECRET: 'x' }, { production: true, dataDir: prodDir })).toThrow(
      /INTERNAL_API_KEY/,
    );
    expect(existsSync(join(prodDir, 'secrets.json'))).toBe(false);
  });
});
