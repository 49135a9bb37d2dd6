/**
 * Fetch → extract for the routes: revalidates cached extractions with
 * conditional requests, and sends big pages to the worker pool when there is
 * one. Every call goes through fetchPage, so the SSRF guard runs on every
 * fetch, cached or not.
 */
import { ExtractPool } from './extract-pool.js';
import { type FetchPageOptions, fetchPage } from './fetch-page.js';
import { PageCache, type PageCacheOptions } from './page-cache.js';
import { extractPage, type PageExtract } from './summarize.js';

export interface PageServiceOptions {
  fetch: FetchPageOptions;
  cache: PageCacheOptions;
  /** Worker threads for extraction; 0 extracts on the calling thread. */
  workers: number;
  /** Pages shorter than this (characters) are extracted in-process even with workers. */
  workerMinBytes: number;
}

/** An extraction failed for a reason other than the page itself (a worker died): answered as a parse failure. */
export class ExtractFailedError extends Error {
  override readonly name = 'ExtractFailedError';
}

export class PageService {
  readonly cache: PageCache;
  readonly pool: ExtractPool | undefined;
  private readonly revalidating: FetchPageOptions;

  constructor(private readonly opts: PageServiceOptions) {
    this.cache = new PageCache(opts.cache);
    this.pool = opts.workers > 1 ? new ExtractPool(opts.workers) : undefined;
    this.revalidating = { ...opts.fetch, validatorsFor: (url) => this.cache.validatorsFor(url) };
  }

  /** The page's extraction; throws FetchPageError (fetch) or ExtractFailedError (worker). */
  async load(url: string, testHooks: { crashWorker?: boolean } = {}): Promise<PageExtract> {
    let page = await fetchPage(url, this.revalidating);
    if (page.notModified) {
      const cached = this.cache.get(page.url);
      if (cached) return cached;
      // Evicted (or expired) between sending the validators and the 304: fetch it whole, unconditionally.
      page = await fetchPage(url, this.opts.fetch);
    }
    const extract = await this.extract(page.html, page.url, testHooks.crashWorker === true);
    const validators = {
      ...(page.etag ? { etag: page.etag } : {}),
      ...(page.lastModified ? { lastModified: page.lastModified } : {}),
    };
    this.cache.set(page.url, validators, extract);
    return extract;
  }

  async close(): Promise<void> {
    this.cache.clear();
    await this.pool?.close();
  }

  private async extract(html: string, baseUrl: string, crash: boolean): Promise<PageExtract> {
    if (!this.pool || html.length < this.opts.workerMinBytes) return extractPage(html, baseUrl);
    try {
      return await this.pool.run(html, baseUrl, crash ? { crash } : {});
    } catch (err) {
      throw new ExtractFailedError(`Failed to parse ${baseUrl}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
