/**
 * The DOM-based extractor (cheerio over htmlparser2) that summarize.ts replaced,
 * kept only as the reference oracle: the equivalence tests and the benchmark
 * compare the streaming extractor against it. Not built into dist (tsconfig
 * excludes *.test-support.ts), so cheerio stays out of the service's hot path.
 */

import type { CheerioAPI } from 'cheerio';
import { load } from 'cheerio';
import type { Extraction, Summary } from './summarize.js';

// Limits from the product spec.
const MAX_HEADINGS = 20;
const HEADING_MIN = 3;
const HEADING_MAX = 199;
const MAX_PARAGRAPHS = 10;
const PARAGRAPH_MIN = 21;
const PARAGRAPH_MAX = 1999;
const MAX_LINKS = 50;
const MAX_IMAGES = 20;
const MAX_LABEL = 100;

/**
 * htmlparser2 in HTML mode: about twice as fast as parse5 on large pages (the
 * benchmark's 100 KB article: ~8 ms against ~15 ms), and it still recovers from
 * unclosed and stray tags, which is all a summary needs.
 */
const PARSE_OPTIONS = { xml: { xmlMode: false, decodeEntities: true } } as const;

const PARAGRAPH_SELECTOR = 'p, article, .content, .post-content, main p';
// Not visible text: excluded from word counts and extracted text.
const NON_CONTENT_SELECTOR = 'script, style, noscript, template';

/** `_baseUrl` keeps the signature symmetric with extractHtml; a summary holds no URLs. */
export function referenceSummarizeHtml(html: string, _baseUrl: string): Summary {
  const $ = load(html, PARSE_OPTIONS);
  // Read <head> data first, then drop non-content elements so their text
  // (inline JS, CSS) doesn't leak into headings, paragraphs or the word count.
  const title = collapse($('title').first().text()) || collapse($('h1').first().text());
  const description = metaContent($, 'name', 'description') || metaContent($, 'property', 'og:description');
  $(NON_CONTENT_SELECTOR).remove();

  return {
    title,
    description,
    headings: uniqueTexts($, 'h1, h2, h3', HEADING_MIN, HEADING_MAX, MAX_HEADINGS),
    paragraphs: uniqueTexts($, PARAGRAPH_SELECTOR, PARAGRAPH_MIN, PARAGRAPH_MAX, MAX_PARAGRAPHS),
    wordCount: countWords($('body').text()),
  };
}

export function referenceExtractHtml(html: string, baseUrl: string): Extraction {
  const $ = load(html, PARSE_OPTIONS);
  const base = documentBase($, baseUrl);
  return {
    links: extractLinks($, base),
    images: extractImages($, base),
    meta: extractMeta($),
  };
}

// ---------------------------------------------------------------------------
// Summary helpers

/** Whitespace runs (incl. newlines, NBSP) → one space, trimmed. */
function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Content of the first `<meta attr="value">` with a non-empty content (value matched case-insensitively). */
function metaContent($: CheerioAPI, attr: 'name' | 'property', value: string): string {
  for (const el of $('meta[content]').toArray()) {
    if ($(el).attr(attr)?.trim().toLowerCase() !== value) continue;
    const content = collapse($(el).attr('content') ?? '');
    if (content) return content;
  }
  return '';
}

/**
 * Collapsed texts of the matched elements in document order, keeping those
 * with `min <= length <= max`, first occurrence of each, at most `limit`.
 */
function uniqueTexts($: CheerioAPI, selector: string, min: number, max: number, limit: number): string[] {
  const seen = new Set<string>();
  for (const el of $(selector).toArray()) {
    const text = collapse($(el).text());
    if (text.length < min || text.length > max) continue;
    seen.add(text);
    if (seen.size === limit) break;
  }
  return [...seen];
}

// ---------------------------------------------------------------------------
// Extraction helpers

/**
 * The URL relative links resolve against: `<base href>` (itself relative to
 * the page URL) if present and valid, else the page URL. Undefined when neither
 * parses, in which case only absolute URLs survive.
 */
function documentBase($: CheerioAPI, baseUrl: string): URL | undefined {
  const page = tryUrl(baseUrl);
  const baseHref = $('base[href]').first().attr('href')?.trim();
  return (baseHref ? tryUrl(baseHref, page) : undefined) ?? page;
}

function tryUrl(href: string, base?: URL): URL | undefined {
  try {
    return new URL(href, base);
  } catch {
    return undefined;
  }
}

/** Cuts to `max` UTF-16 units without leaving half a surrogate pair at the end. */
function truncate(text: string, max = MAX_LABEL): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

function extractLinks($: CheerioAPI, base: URL | undefined): Extraction['links'] {
  const links = new Map<string, string>();
  for (const el of $('a[href]').toArray()) {
    const raw = ($(el).attr('href') ?? '').trim();
    // Same-page anchors and script links aren't links to summarize.
    if (!raw || raw.startsWith('#') || /^javascript:/i.test(raw)) continue;
    const url = tryUrl(raw, base);
    // The URL parser strips tabs/newlines, so `java\tscript:` only shows up after parsing.
    if (!url || url.protocol === 'javascript:' || links.has(url.href)) continue;
    links.set(url.href, truncate(collapse($(el).text()) || url.href));
    if (links.size === MAX_LINKS) break;
  }
  return [...links].map(([href, text]) => ({ href, text }));
}

function extractImages($: CheerioAPI, base: URL | undefined): Extraction['images'] {
  const images = new Map<string, string>();
  for (const el of $('img[src], img[data-src]').toArray()) {
    // Lazy-loading pages keep the real URL in data-src and leave src empty or missing.
    const raw = $(el).attr('src')?.trim() || $(el).attr('data-src')?.trim();
    const url = raw ? tryUrl(raw, base) : undefined;
    // data: URLs can be megabytes of base64; javascript: isn't an image.
    if (!url || url.protocol === 'data:' || url.protocol === 'javascript:' || images.has(url.href)) continue;
    images.set(url.href, truncate(collapse($(el).attr('alt') ?? '')));
    if (images.size === MAX_IMAGES) break;
  }
  return [...images].map(([src, alt]) => ({ src, alt }));
}

function isWantedMetaKey(key: string): boolean {
  return key.startsWith('og:') || key.startsWith('twitter:') || key === 'description';
}

/** og:*, twitter:* and description meta tags; key lowercased, first non-empty content wins. */
function extractMeta($: CheerioAPI): Record<string, string> {
  const meta: Record<string, string> = {};
  for (const el of $('meta[content]').toArray()) {
    const content = ($(el).attr('content') ?? '').trim();
    if (!content) continue;
    // Sites mix them up (`name="og:title"`, `property="twitter:card"`), so check both attributes.
    for (const attr of ['property', 'name']) {
      const key = $(el).attr(attr)?.trim().toLowerCase();
      if (key && isWantedMetaKey(key) && !Object.hasOwn(meta, key)) meta[key] = content;
    }
  }
  return meta;
}
