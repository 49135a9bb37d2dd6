/**
 * Extractions of pages we fetched, keyed by the final URL, with the validators
 * (ETag / Last-Modified) the server sent. The next fetch of that URL sends them
 * back; a 304 lets us reuse the extraction instead of downloading and parsing
 * the page again. Entries are always revalidated, never served blind, so a
 * cached extraction is never staler than the server says it is.
 *
 * Bounded three ways, so a crawler feeding us distinct URLs can't grow it
 * without limit: entry count, approximate bytes (LRU eviction for both), and
 * age (an old entry is dropped rather than revalidated, so a server that keeps
 * answering 304 can't pin an extraction from an older parser forever).
 */
import type { Validators } from './fetch-page.js';
import type { PageExtract } from './summarize.js';

export interface PageCacheOptions {
  /** 0 turns the cache off. */
  maxEntries: number;
  maxBytes: number;
  maxAgeMs: number;
  /** For tests. */
  now?: () => number;
}

interface Entry {
  validators: Validators;
  extract: PageExtract;
  bytes: number;
  storedAt: number;
}

export class PageCache {
  // A Map iterates in insertion order: re-inserting on every hit keeps the least recently used first.
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;
  private readonly now: () => number;

  constructor(private readonly opts: PageCacheOptions) {
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /** The validators to send for `url`, if a fresh-enough entry exists. */
  validatorsFor(url: string): Validators | undefined {
    return this.fresh(url)?.validators;
  }

  /** The extraction stored for `url` (after a 304 for it), marking it recently used. */
  get(url: string): PageExtract | undefined {
    const entry = this.fresh(url);
    if (!entry) return undefined;
    this.entries.delete(url);
    this.entries.set(url, entry);
    return entry.extract;
  }

  /** Stores an extraction if the response had a validator to revalidate it with; evicts to stay in bounds. */
  set(url: string, validators: Validators, extract: PageExtract): void {
    this.delete(url);
    if (!validators.etag && !validators.lastModified) return;
    const bytes = estimateBytes(url, validators, extract);
    if (this.opts.maxEntries <= 0 || bytes > this.opts.maxBytes) return;
    this.entries.set(url, { validators, extract, bytes, storedAt: this.now() });
    this.totalBytes += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.opts.maxEntries && this.totalBytes <= this.opts.maxBytes) break;
      this.delete(oldest);
    }
  }

  delete(url: string): void {
    const entry = this.entries.get(url);
    if (!entry) return;
    this.entries.delete(url);
    this.totalBytes -= entry.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.totalBytes = 0;
  }

  private fresh(url: string): Entry | undefined {
    const entry = this.entries.get(url);
    if (entry && this.now() - entry.storedAt > this.opts.maxAgeMs) {
      this.delete(url);
      return undefined;
    }
    return entry;
  }
}

/**
 * Roughly what an entry holds in memory: its strings at 2 bytes per UTF-16 unit
 * (JSON is a close, cheap stand-in for walking the object) plus a fixed overhead
 * for the objects around them. Close enough to bound memory; not exact.
 */
function estimateBytes(url: string, validators: Validators, extract: PageExtract): number {
  const chars = url.length + (validators.etag?.length ?? 0) + (validators.lastModified?.length ?? 0) + JSON.stringify(extract).length;
  return 2 * chars + 512;
}
