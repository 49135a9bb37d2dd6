/**
 * Pure HTML → summary / extraction functions, in one streaming pass over
 * htmlparser2's tokenizer events: no DOM tree is built. Input is whatever a web
 * server sent us, so nothing here may throw on malformed markup or odd URLs: the
 * parser recovers from broken HTML, and every URL resolution is guarded.
 *
 * The output is byte-identical to the DOM-based extractor this replaced (kept as
 * the oracle in extract-reference.test-support.ts). That extractor built a tree
 * with the same parser and the same options, and the tree's shape is fully
 * decided by the parser's open/close events (DomHandler only follows them), so
 * mirroring those events with a stack of open elements reproduces every
 * selector it ran. Building the tree, `remove()` and `text()` cost ~3× the
 * tokenizer itself on a 100 KB page; this pass stays close to the tokenizer.
 */

import { Parser } from 'htmlparser2';

export interface Summary {
  title: string;
  description: string;
  headings: string[];
  paragraphs: string[];
  wordCount: number;
}

export interface Extraction {
  links: { href: string; text: string }[];
  images: { src: string; alt: string }[];
  meta: Record<string, string>;
}

/** Both results of one pass: what the cache keeps, so either route can be answered from it. */
export interface PageExtract {
  summary: Summary;
  extraction: Extraction;
}

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
 * htmlparser2 in HTML mode with entities decoded: the exact options the DOM
 * extractor gave it, so tag recovery (implied closes, void elements, raw-text
 * script/style) and entity decoding are the same.
 */
const PARSER_OPTIONS = { xmlMode: false, decodeEntities: true } as const;

// Not visible text: excluded from headings, paragraphs and the word count (the old `remove()` of these).
const NON_CONTENT = new Set(['script', 'style', 'noscript', 'template']);
const HEADING_TAGS = new Set(['h1', 'h2', 'h3']);
// The old selector's `.content` / `.post-content`: css-select matches a class as a `\s`-delimited word, case-sensitively.
const CONTENT_CLASS = /(?:^|\s)content(?:$|\s)/;
const POST_CONTENT_CLASS = /(?:^|\s)post-content(?:$|\s)/;

/** `_baseUrl` keeps the signature symmetric with extractHtml; a summary holds no URLs. */
export function summarizeHtml(html: string, _baseUrl: string): Summary {
  return extractPage(html, _baseUrl).summary;
}

export function extractHtml(html: string, baseUrl: string): Extraction {
  return extractPage(html, baseUrl).extraction;
}

// ---------------------------------------------------------------------------
// The pass

/** Something that receives the text of one open element. */
interface Sink {
  push(text: string): void;
  /** Called when the element closes. */
  end(): void;
}

/** Collects the text of one element and hands it over when the element closes. */
class TextSink implements Sink {
  text = '';
  constructor(private readonly onEnd: (text: string) => void) {}
  push(text: string): void {
    this.text += text;
  }
  end(): void {
    this.onEnd(this.text);
  }
}

/** An open element: how many sinks it added, so closing it removes exactly those. */
interface Frame {
  nonContent: boolean;
  rawSinks: number;
  contentSinks: number;
}

interface LinkCandidate {
  raw: string;
  text: string;
}

export function extractPage(html: string, baseUrl: string): PageExtract {
  // Sinks of open elements, innermost last. `raw` ones see all text (the old code read the title, the h1
  // fallback and link texts before removing scripts); `content` ones skip text inside script/style/noscript/template.
  const rawSinks: Sink[] = [];
  const contentSinks: Sink[] = [];
  const frames: Frame[] = [];
  let nonContentDepth = 0;

  let titleText: string | undefined;
  let h1Text: string | undefined;
  let titleSeen = false;
  let h1Seen = false;
  let metaDescription = '';
  let ogDescription = '';
  const headings = new Picks(HEADING_MIN, HEADING_MAX, MAX_HEADINGS);
  const paragraphs = new Picks(PARAGRAPH_MIN, PARAGRAPH_MAX, MAX_PARAGRAPHS);
  const bodies: WordCounter[] = [];

  let baseHref: string | undefined;
  const links: LinkCandidate[] = [];
  const images: { raw: string | undefined; alt: string }[] = [];
  const meta: Record<string, string> = {};

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        const frame: Frame = { nonContent: false, rawSinks: 0, contentSinks: 0 };
        frames.push(frame);

        // --- read before removal: title, first h1, meta, base, links, images
        if (name === 'title' && !titleSeen) {
          titleSeen = true;
          rawSinks.push(
            new TextSink((text) => {
              titleText = text;
            }),
          );
          frame.rawSinks++;
        } else if (name === 'h1' && !h1Seen) {
          h1Seen = true;
          rawSinks.push(
            new TextSink((text) => {
              h1Text = text;
            }),
          );
          frame.rawSinks++;
        } else if (name === 'meta') {
          readMeta(attribs);
        } else if (name === 'base') {
          // The first <base href> decides, even when its href is blank (then the page URL is used).
          if (baseHref === undefined && Object.hasOwn(attribs, 'href')) baseHref = (attribs.href ?? '').trim();
        } else if (name === 'a') {
          if (Object.hasOwn(attribs, 'href')) {
            const raw = (attribs.href ?? '').trim();
            // Same-page anchors and script links aren't links to summarize.
            if (raw && !raw.startsWith('#') && !/^javascript:/i.test(raw)) {
              const link: LinkCandidate = { raw, text: '' };
              links.push(link);
              rawSinks.push(
                new TextSink((text) => {
                  link.text = text;
                }),
              );
              frame.rawSinks++;
            }
          }
        } else if (name === 'img') {
          if (Object.hasOwn(attribs, 'src') || Object.hasOwn(attribs, 'data-src')) {
            // Lazy-loading pages keep the real URL in data-src and leave src empty or missing.
            const raw = ownAttr(attribs, 'src')?.trim() || ownAttr(attribs, 'data-src')?.trim();
            images.push({ raw, alt: ownAttr(attribs, 'alt') ?? '' });
          }
        }

        // --- after removal: elements inside a removed element no longer exist
        if (NON_CONTENT.has(name)) {
          frame.nonContent = true;
          nonContentDepth++;
          return;
        }
        if (nonContentDepth > 0) return;
        if (name === 'body') {
          const counter = new WordCounter();
          bodies.push(counter);
          contentSinks.push(counter);
          frame.contentSinks++;
        }
        if (HEADING_TAGS.has(name) && !headings.done) {
          contentSinks.push(headings.open());
          frame.contentSinks++;
        }
        if (!paragraphs.done && (name === 'p' || name === 'article' || hasContentClass(attribs))) {
          contentSinks.push(paragraphs.open());
          frame.contentSinks++;
        }
      },

      ontext(text) {
        for (let i = 0; i < rawSinks.length; i++) rawSinks[i]?.push(text);
        if (nonContentDepth === 0) {
          for (let i = 0; i < contentSinks.length; i++) contentSinks[i]?.push(text);
        }
      },

      onclosetag() {
        // At end of input the parser may close a tag whose opening was cut off (never reported); nothing follows then.
        const frame = frames.pop();
        if (!frame) return;
        for (let i = 0; i < frame.rawSinks; i++) rawSinks.pop()?.end();
        for (let i = 0; i < frame.contentSinks; i++) contentSinks.pop()?.end();
        if (frame.nonContent) nonContentDepth--;
      },
    },
    PARSER_OPTIONS,
  );

  function readMeta(attribs: Record<string, string>): void {
    const rawContent = ownAttr(attribs, 'content');
    if (rawContent === undefined) return;
    // Summary description: the first non-empty one of each kind (value matched case-insensitively).
    if (!metaDescription && ownAttr(attribs, 'name')?.trim().toLowerCase() === 'description') metaDescription = collapse(rawContent);
    if (!ogDescription && ownAttr(attribs, 'property')?.trim().toLowerCase() === 'og:description') ogDescription = collapse(rawContent);
    // Extraction meta: og:*, twitter:* and description; key lowercased, first non-empty content wins.
    const content = rawContent.trim();
    if (!content) return;
    // Sites mix them up (`name="og:title"`, `property="twitter:card"`), so check both attributes.
    for (const attr of ['property', 'name']) {
      const key = ownAttr(attribs, attr)?.trim().toLowerCase();
      if (key && isWantedMetaKey(key) && !Object.hasOwn(meta, key)) meta[key] = content;
    }
  }

  parser.end(html);

  const summary: Summary = {
    title: collapse(titleText ?? '') || collapse(h1Text ?? ''),
    description: metaDescription || ogDescription,
    headings: headings.result(),
    paragraphs: paragraphs.result(),
    wordCount: WordCounter.joined(bodies),
  };
  const base = documentBase(baseHref, baseUrl);
  return { summary, extraction: { links: resolveLinks(links, base), images: resolveImages(images, base), meta } };
}

/** The attribute if the element has it as its own property (what css-select and cheerio's attr() check). */
function ownAttr(attribs: Record<string, string>, name: string): string | undefined {
  return Object.hasOwn(attribs, name) ? attribs[name] : undefined;
}

function hasContentClass(attribs: Record<string, string>): boolean {
  const cls = ownAttr(attribs, 'class');
  return cls !== undefined && (CONTENT_CLASS.test(cls) || POST_CONTENT_CLASS.test(cls));
}

/** Whitespace runs (incl. newlines, NBSP) → one space, trimmed. */
function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Texts of matched elements in document (opening) order, keeping those with
 * `min <= length <= max`, first occurrence of each, at most `limit`. Elements
 * close out of order (an <article> closes after the <p>s inside it), so each
 * gets a slot when it opens and the slots are consumed in order as they fill.
 */
class Picks {
  private readonly slots: (string | undefined)[] = [];
  private next = 0;
  private readonly seen = new Set<string>();
  /** The limit is reached: later elements can't change the result. */
  done = false;

  constructor(
    private readonly min: number,
    private readonly max: number,
    private readonly limit: number,
  ) {}

  open(): Sink {
    const index = this.slots.push(undefined) - 1;
    return new TextSink((text) => {
      this.slots[index] = collapse(text);
      this.advance();
    });
  }

  private advance(): void {
    while (!this.done && this.next < this.slots.length) {
      const text = this.slots[this.next];
      if (text === undefined) return;
      this.slots[this.next] = ''; // consumed; lets the string go
      this.next++;
      if (text.length < this.min || text.length > this.max) continue;
      this.seen.add(text);
      if (this.seen.size === this.limit) this.done = true;
    }
  }

  result(): string[] {
    return [...this.seen];
  }
}

/**
 * Counts what `text.split(/\s+/).filter(Boolean).length` would (runs of
 * non-`\s` characters) incrementally, chunk by chunk, without building the text
 * or an array of words.
 */
class WordCounter implements Sink {
  words = 0;
  private inWord = false;
  private empty = true;
  private startsInWord = false;

  push(text: string): void {
    const n = text.length;
    if (n === 0) return;
    if (this.empty) {
      this.empty = false;
      this.startsInWord = !isSpace(text.charCodeAt(0));
    }
    let inWord = this.inWord;
    let words = this.words;
    for (let i = 0; i < n; i++) {
      if (isSpace(text.charCodeAt(i))) inWord = false;
      else if (!inWord) {
        inWord = true;
        words++;
      }
    }
    this.inWord = inWord;
    this.words = words;
  }

  end(): void {}

  /**
   * Words of the texts of all <body> elements concatenated in document order (the old `$('body').text()`): a
   * word cut between one body's end and the next one's start counts once.
   */
  static joined(counters: WordCounter[]): number {
    let words = 0;
    let endsInWord = false;
    for (const c of counters) {
      if (c.empty) continue;
      words += c.words - (endsInWord && c.startsInWord ? 1 : 0);
      endsInWord = c.inWord;
    }
    return words;
  }
}

/** Exactly JavaScript's `\s`: ASCII whitespace, line terminators, NBSP, BOM and the Unicode space separators. */
export function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

// ---------------------------------------------------------------------------
// Extraction helpers

/**
 * The URL relative links resolve against: `<base href>` (itself relative to
 * the page URL) if present and valid, else the page URL. Undefined when neither
 * parses, in which case only absolute URLs survive. Known only at the end of the
 * pass (the first <base> may follow links), which is why links resolve last.
 */
function documentBase(baseHref: string | undefined, baseUrl: string): URL | undefined {
  const page = tryUrl(baseUrl);
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

function resolveLinks(candidates: LinkCandidate[], base: URL | undefined): Extraction['links'] {
  const links = new Map<string, string>();
  for (const { raw, text } of candidates) {
    const url = tryUrl(raw, base);
    // The URL parser strips tabs/newlines, so `java\tscript:` only shows up after parsing.
    if (!url || url.protocol === 'javascript:' || links.has(url.href)) continue;
    links.set(url.href, truncate(collapse(text) || url.href));
    if (links.size === MAX_LINKS) break;
  }
  return [...links].map(([href, text]) => ({ href, text }));
}

function resolveImages(candidates: { raw: string | undefined; alt: string }[], base: URL | undefined): Extraction['images'] {
  const images = new Map<string, string>();
  for (const { raw, alt } of candidates) {
    const url = raw ? tryUrl(raw, base) : undefined;
    // data: URLs can be megabytes of base64; javascript: isn't an image.
    if (!url || url.protocol === 'data:' || url.protocol === 'javascript:' || images.has(url.href)) continue;
    images.set(url.href, truncate(collapse(alt)));
    if (images.size === MAX_IMAGES) break;
  }
  return [...images].map(([src, alt]) => ({ src, alt }));
}

function isWantedMetaKey(key: string): boolean {
  return key.startsWith('og:') || key.startsWith('twitter:') || key === 'description';
}
