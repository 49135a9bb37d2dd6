import { describe, expect, it } from 'vitest';
import { PageCache } from './page-cache.js';
import { extractPage } from './summarize.js';

const extractOf = (title: string) => extractPage(`<title>${title}</title>`, 'https://example.com/');

describe('PageCache', () => {
  it('keeps extractions apart by URL and returns the validators of each', () => {
    const cache = new PageCache({ maxEntries: 10, maxBytes: 1e6, maxAgeMs: 60_000 });
    cache.set('https://a.example/', { etag: '"a"' }, extractOf('A'));
    cache.set('https://b.example/', { lastModified: 'Wed, 01 Jan 2025 00:00:00 GMT' }, extractOf('B'));
    expect(cache.get('https://a.example/')?.summary.title).toBe('A');
    expect(cache.get('https://b.example/')?.summary.title).toBe('B');
    expect(cache.validatorsFor('https://a.example/')).toEqual({ etag: '"a"' });
    expect(cache.validatorsFor('https://b.example/')).toEqual({ lastModified: 'Wed, 01 Jan 2025 00:00:00 GMT' });
    expect(cache.get('https://c.example/')).toBeUndefined();
  });

  it('does not keep a page without validators: it could never be revalidated', () => {
    const cache = new PageCache({ maxEntries: 10, maxBytes: 1e6, maxAgeMs: 60_000 });
    cache.set('https://a.example/', {}, extractOf('A'));
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used entry past maxEntries', () => {
    const cache = new PageCache({ maxEntries: 2, maxBytes: 1e6, maxAgeMs: 60_000 });
    cache.set('u1', { etag: '1' }, extractOf('1'));
    cache.set('u2', { etag: '2' }, extractOf('2'));
    cache.get('u1'); // u2 is now the least recently used
    cache.set('u3', { etag: '3' }, extractOf('3'));
    expect(cache.size).toBe(2);
    expect(cache.get('u2')).toBeUndefined();
    expect(cache.get('u1')?.summary.title).toBe('1');
    expect(cache.get('u3')?.summary.title).toBe('3');
  });

  it('evicts by bytes, and refuses an entry bigger than the whole budget', () => {
    const big = extractPage(`<title>${'x'.repeat(5000)}</title>`, 'https://example.com/');
    const cache = new PageCache({ maxEntries: 100, maxBytes: 25_000, maxAgeMs: 60_000 });
    cache.set('b1', { etag: '1' }, big);
    cache.set('b2', { etag: '2' }, big);
    expect(cache.size).toBe(2);
    cache.set('b3', { etag: '3' }, big);
    expect(cache.size).toBe(2);
    expect(cache.get('b1')).toBeUndefined();
    expect(cache.bytes).toBeLessThanOrEqual(25_000);

    const huge = extractPage(`<title>${'x'.repeat(20_000)}</title>`, 'https://example.com/');
    cache.set('h', { etag: 'h' }, huge);
    expect(cache.get('h')).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it('drops entries older than maxAgeMs instead of revalidating them', () => {
    let now = 1_000;
    const cache = new PageCache({ maxEntries: 10, maxBytes: 1e6, maxAgeMs: 500, now: () => now });
    cache.set('u', { etag: 'e' }, extractOf('U'));
    now += 500;
    expect(cache.validatorsFor('u')).toEqual({ etag: 'e' });
    now += 1;
    expect(cache.validatorsFor('u')).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
  });

  it('stores nothing with maxEntries 0', () => {
    const cache = new PageCache({ maxEntries: 0, maxBytes: 1e6, maxAgeMs: 60_000 });
    cache.set('u', { etag: 'e' }, extractOf('U'));
    expect(cache.size).toBe(0);
  });
});
