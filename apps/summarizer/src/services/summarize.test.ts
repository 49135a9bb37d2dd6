import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractHtml, summarizeHtml } from './summarize.js';

const PAGE_URL = 'https://example.com/blog/post.html';
const richPage = readFileSync(new URL('../../test-fixtures/rich-page.html', import.meta.url), 'utf8');

// Strings the fixture holds past the limits (see test-fixtures/rich-page.html).
const LONG_LINK_TEXT =
  'Read more about this extremely long link text that keeps going on and on well past the one hundred character limit for link labels';
const LONG_ALT =
  'A very long alternative text describing the image in far more detail than anybody needs, well beyond one hundred characters';

/** `n` copies of `make(i)` for i = 1..n, joined. */
function repeat(n: number, make: (i: number) => string): string {
  return Array.from({ length: n }, (_, i) => make(i + 1)).join('\n');
}

describe('summarizeHtml on the rich fixture', () => {
  const summary = summarizeHtml(richPage, PAGE_URL);

  it('takes the collapsed <title> and the meta description', () => {
    expect(summary.title).toBe('The Rich Fixture Page');
    expect(summary.description).toBe('A page that exercises every summarizer rule.');
  });

  it('keeps h1-h3 of 3..199 chars, collapsed, deduplicated, in document order', () => {
    expect(summary.headings.slice(0, 3)).toEqual(['Welcome to the Fixture', 'Abc', 'Section One']);
    expect(summary.headings).toHaveLength(4);
    expect(summary.headings[3]).toMatch(/^Heading of exactly one hundred ninety-nine characters/);
    expect(summary.headings[3]).toHaveLength(199);
    expect(summary.headings).not.toContain('Hi');
    expect(summary.headings.some((h) => h.startsWith('Too long heading'))).toBe(false);
    expect(summary.headings).not.toContain('Level four is not collected');
  });

  it('keeps paragraphs of 21..1999 chars, collapsed and deduplicated', () => {
    expect(summary.paragraphs).toHaveLength(3);
    expect(summary.paragraphs.slice(0, 2)).toEqual(['Just long enough: 21!', 'First real paragraph with enough text to count.']);
    expect(summary.paragraphs[2]).toMatch(/^Long paragraph kept at the upper bound\./);
    expect(summary.paragraphs[2]).toHaveLength(1999);
    expect(summary.paragraphs).not.toContain('Too short paragraph.');
  });

  it('counts body words but not script or style', () => {
    expect(summary.wordCount).toBeGreaterThan(400);
    const withScriptWords = summarizeHtml(richPage.replace('</body>', '<script>a b c d e f g</script></body>'), PAGE_URL);
    expect(withScriptWords.wordCount).toBe(summary.wordCount);
  });
});

describe('extractHtml on the rich fixture', () => {
  const extraction = extractHtml(richPage, PAGE_URL);

  it('resolves, dedupes and labels links, skipping #, javascript:, empty and broken hrefs', () => {
    expect(extraction.links.slice(0, 5)).toEqual([
      { href: 'https://example.com/about', text: 'About us' },
      {
        href: 'https://example.com/blog/contact.html',
        text: 'https://example.com/blog/contact.html',
      },
      { href: 'https://other.example.org/x?y=1#frag', text: 'External' },
      { href: 'mailto:hi@example.com', text: 'Mail us' },
      { href: 'https://example.com/up', text: LONG_LINK_TEXT.slice(0, 100) },
    ]);
    expect(extraction.links[4]?.text).toHaveLength(100);
    const hrefs = extraction.links.map((l) => l.href);
    expect(hrefs.some((h) => h.includes('#top') || /^javascript:/i.test(h) || h.includes('broken'))).toBe(false);
  });

  it('stops at 50 links', () => {
    expect(extraction.links).toHaveLength(50);
    expect(extraction.links[5]).toEqual({
      href: 'https://example.com/page/1',
      text: 'Page 1',
    });
    expect(extraction.links[49]).toEqual({
      href: 'https://example.com/page/45',
      text: 'Page 45',
    });
  });

  it('resolves and dedupes images, uses data-src, skips data: and broken URLs, stops at 20', () => {
    expect(extraction.images.slice(0, 4)).toEqual([
      { src: 'https://example.com/img/logo.png', alt: 'Site logo' },
      { src: 'https://example.com/blog/lazy.jpg', alt: 'Lazy' },
      { src: 'https://example.com/blog/lazy-empty-src.jpg', alt: '' },
      { src: 'https://example.com/img/long.png', alt: LONG_ALT.slice(0, 100) },
    ]);
    expect(extraction.images).toHaveLength(20);
    expect(extraction.images[4]).toEqual({
      src: 'https://example.com/blog/gallery/1.jpg',
      alt: 'Gallery 1',
    });
    expect(extraction.images[19]).toEqual({
      src: 'https://example.com/blog/gallery/16.jpg',
      alt: 'Gallery 16',
    });
    expect(extraction.images.some((i) => i.src.startsWith('data:') || i.src.includes('broken'))).toBe(false);
  });

  it('collects og:, twitter: and description meta, lowercased, first wins, empty skipped', () => {
    expect(extraction.meta).toEqual({
      description: 'A page that exercises every summarizer rule.',
      'og:description': 'The Open Graph description.',
      'og:title': 'Rich Fixture (OG)',
      'og:image': '/images/cover.png',
      'twitter:card': 'summary_large_image',
      'twitter:title': 'Rich Fixture (Twitter)',
    });
  });
});

describe('summarizeHtml rules', () => {
  it('falls back to the first h1 when there is no title', () => {
    const html = '<html><body><h1>  Only   a heading </h1><h1>Second h1</h1></body></html>';
    expect(summarizeHtml(html, PAGE_URL).title).toBe('Only a heading');
  });

  it('falls back to the first h1 when the title is blank, and to "" with neither', () => {
    expect(summarizeHtml('<title> \n </title><h1>From h1</h1>', PAGE_URL).title).toBe('From h1');
    expect(summarizeHtml('<p>No title here at all, nothing.</p>', PAGE_URL).title).toBe('');
  });

  it('falls back to og:description, and to "" with neither', () => {
    const og = '<meta property="og:description" content=" From OG "><meta name="description" content="">';
    expect(summarizeHtml(og, PAGE_URL).description).toBe('From OG');
    expect(summarizeHtml('<meta name="keywords" content="x">', PAGE_URL).description).toBe('');
  });

  it('prefers meta description over og:description', () => {
    const html = '<meta property="og:description" content="og"><meta name="description" content="plain">';
    expect(summarizeHtml(html, PAGE_URL).description).toBe('plain');
  });

  it('keeps at most 20 headings', () => {
    const html = repeat(25, (i) => `<h2>Heading ${i}</h2>`);
    const { headings } = summarizeHtml(html, PAGE_URL);
    expect(headings).toHaveLength(20);
    expect(headings[0]).toBe('Heading 1');
    expect(headings[19]).toBe('Heading 20');
  });

  it('keeps at most 10 paragraphs', () => {
    const html = repeat(15, (i) => `<p>Paragraph number ${i} with enough text.</p>`);
    const { paragraphs } = summarizeHtml(html, PAGE_URL);
    expect(paragraphs).toHaveLength(10);
    expect(paragraphs[9]).toBe('Paragraph number 10 with enough text.');
  });

  it('also takes article, .content and .post-content blocks, in document order', () => {
    const html = `
      <article>An article body that is long enough.</article>
      <div class="content">A content block that is long enough.</div>
      <section class="post-content">A post-content block, long enough.</section>
      <div class="other">An unrelated div that is long enough.</div>`;
    expect(summarizeHtml(html, PAGE_URL).paragraphs).toEqual([
      'An article body that is long enough.',
      'A content block that is long enough.',
      'A post-content block, long enough.',
    ]);
  });

  it('counts whitespace-separated body words, excluding script, style, noscript and template', () => {
    const html = `<html><head><title>Title words not counted</title></head><body>
      <p>one two   three</p>
      <script>four five</script><style>.six { color: red }</style>
      <noscript>seven</noscript><template>eight</template>
      <p>nine ten</p></body></html>`;
    expect(summarizeHtml(html, PAGE_URL).wordCount).toBe(5);
    expect(summarizeHtml('<html><body>   </body></html>', PAGE_URL).wordCount).toBe(0);
  });

  it('does not let script text into headings or paragraphs', () => {
    const html = '<h1>Real <script>evil()</script>title</h1><p>Paragraph text <script>var x = 1;</script>that is long.</p>';
    const summary = summarizeHtml(html, PAGE_URL);
    expect(summary.headings).toEqual(['Real title']);
    expect(summary.paragraphs).toEqual(['Paragraph text that is long.']);
  });
});

describe('extractHtml rules', () => {
  it('resolves relative URLs against <base href>', () => {
    const html = `<head><base href="https://cdn.example.net/assets/"></head>
      <a href="doc.html">Doc</a><a href="/root">Root</a><img src="pic.png" alt="Pic">`;
    const { links, images } = extractHtml(html, PAGE_URL);
    expect(links).toEqual([
      { href: 'https://cdn.example.net/assets/doc.html', text: 'Doc' },
      { href: 'https://cdn.example.net/root', text: 'Root' },
    ]);
    expect(images).toEqual([{ src: 'https://cdn.example.net/assets/pic.png', alt: 'Pic' }]);
  });

  it('resolves a relative <base href> against the page URL, and ignores a broken one', () => {
    expect(extractHtml('<base href="/v2/"><a href="x">X</a>', PAGE_URL).links).toEqual([{ href: 'https://example.com/v2/x', text: 'X' }]);
    expect(extractHtml('<base href="http://[broken"><a href="x">X</a>', PAGE_URL).links).toEqual([
      { href: 'https://example.com/blog/x', text: 'X' },
    ]);
  });

  it('skips # and javascript: links in any case or obfuscation, keeps tel:', () => {
    const html = `<a href="#">Hash</a><a href="  #section">Hash2</a><a href="JAVASCRIPT:alert(1)">JS</a>
      <a href="java\tscript:alert(1)">Tab JS</a><a href="tel:+123">Call</a>`;
    expect(extractHtml(html, PAGE_URL).links).toEqual([{ href: 'tel:+123', text: 'Call' }]);
  });

  it('keeps only absolute URLs when the base URL itself is unusable', () => {
    const html = '<a href="relative">Rel</a><a href="https://abs.example/">Abs</a><img src="rel.png">';
    const { links, images } = extractHtml(html, 'not a url');
    expect(links).toEqual([{ href: 'https://abs.example/', text: 'Abs' }]);
    expect(images).toEqual([]);
  });

  it('checks both property and name for meta keys', () => {
    const html = `<meta name="og:site_name" content="Named">
      <meta property="twitter:site" content="@site">
      <meta property="OG:Locale" content="en_GB">
      <meta name="description" content="  Desc  ">`;
    expect(extractHtml(html, PAGE_URL).meta).toEqual({
      'og:site_name': 'Named',
      'twitter:site': '@site',
      'og:locale': 'en_GB',
      description: 'Desc',
    });
  });

  it('does not leave half a surrogate pair when cutting labels', () => {
    const text = `${'a'.repeat(99)}😀tail`;
    const [link] = extractHtml(`<a href="/e">${text}</a>`, PAGE_URL).links;
    expect(link?.text).toBe('a'.repeat(99));
  });
});

describe('malformed input', () => {
  const cases: [string, string][] = [
    ['empty string', ''],
    ['plain text', 'just some words, no markup at all'],
    ['garbage', '<<<>>><</ \u0000 <a href=<img src=>>> &#xZZ; &bogus;'],
    ['binary-ish', String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i))],
    ['unclosed tags', '<html><body><div><p>Unclosed paragraph with plenty of words<p>Second unclosed para, long<a href="/x">link'],
  ];

  for (const [name, html] of cases) {
    it(`does not throw on ${name}`, () => {
      expect(() => summarizeHtml(html, PAGE_URL)).not.toThrow();
      expect(() => extractHtml(html, PAGE_URL)).not.toThrow();
    });
  }

  it('recovers content from unclosed tags like a browser', () => {
    const html = cases[4]?.[1] ?? '';
    expect(summarizeHtml(html, PAGE_URL)).toEqual({
      title: '',
      description: '',
      headings: [],
      paragraphs: ['Unclosed paragraph with plenty of words', 'Second unclosed para, longlink'],
      wordCount: 9, // body text runs "words" and "Second" together, as $(body).text() does
    });
    expect(extractHtml(html, PAGE_URL).links).toEqual([{ href: 'https://example.com/x', text: 'link' }]);
  });

  it('returns an empty summary and extraction for an empty string', () => {
    expect(summarizeHtml('', PAGE_URL)).toEqual({
      title: '',
      description: '',
      headings: [],
      paragraphs: [],
      wordCount: 0,
    });
    expect(extractHtml('', PAGE_URL)).toEqual({
      links: [],
      images: [],
      meta: {},
    });
  });
});
