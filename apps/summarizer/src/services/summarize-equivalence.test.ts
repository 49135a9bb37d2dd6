import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { referenceExtractHtml, referenceSummarizeHtml } from './extract-reference.test-support.js';
import { htmlCorpus } from './html-corpus.test-support.js';
import { extractPage, isSpace } from './summarize.js';

// The streaming extractor must give exactly what the DOM extractor gave: same values, same key order, same JSON.

const richPage = readFileSync(new URL('../../test-fixtures/rich-page.html', import.meta.url), 'utf8');

/** Every HTML string the other summarizer tests feed in (summarize, fetch-page and route tests). */
const FIXTURES: string[] = [
  richPage,
  richPage.replace('</body>', '<script>a b c d e f g</script></body>'),
  '<html><body><h1>  Only   a heading </h1><h1>Second h1</h1></body></html>',
  '<title> \n </title><h1>From h1</h1>',
  '<p>No title here at all, nothing.</p>',
  '<meta property="og:description" content=" From OG "><meta name="description" content="">',
  '<meta name="keywords" content="x">',
  '<meta property="og:description" content="og"><meta name="description" content="plain">',
  Array.from({ length: 25 }, (_, i) => `<h2>Heading ${i + 1}</h2>`).join('\n'),
  Array.from({ length: 15 }, (_, i) => `<p>Paragraph number ${i + 1} with enough text.</p>`).join('\n'),
  `<article>An article body that is long enough.</article>
      <div class="content">A content block that is long enough.</div>
      <section class="post-content">A post-content block, long enough.</section>
      <div class="other">An unrelated div that is long enough.</div>`,
  `<html><head><title>Title words not counted</title></head><body>
      <p>one two   three</p>
      <script>four five</script><style>.six { color: red }</style>
      <noscript>seven</noscript><template>eight</template>
      <p>nine ten</p></body></html>`,
  '<html><body>   </body></html>',
  '<h1>Real <script>evil()</script>title</h1><p>Paragraph text <script>var x = 1;</script>that is long.</p>',
  `<head><base href="https://cdn.example.net/assets/"></head>
      <a href="doc.html">Doc</a><a href="/root">Root</a><img src="pic.png" alt="Pic">`,
  '<base href="/v2/"><a href="x">X</a>',
  '<base href="http://[broken"><a href="x">X</a>',
  `<a href="#">Hash</a><a href="  #section">Hash2</a><a href="JAVASCRIPT:alert(1)">JS</a>
      <a href="java\tscript:alert(1)">Tab JS</a><a href="tel:+123">Call</a>`,
  '<a href="relative">Rel</a><a href="https://abs.example/">Abs</a><img src="rel.png">',
  `<meta name="og:site_name" content="Named">
      <meta property="twitter:site" content="@site">
      <meta property="OG:Locale" content="en_GB">
      <meta name="description" content="  Desc  ">`,
  `<a href="/e">${'a'.repeat(99)}😀tail</a>`,
  '',
  'just some words, no markup at all',
  '<<<>>><</ \u0000 <a href=<img src=>>> &#xZZ; &bogus;',
  String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i)),
  '<html><body><div><p>Unclosed paragraph with plenty of words<p>Second unclosed para, longlink<a href="/x">link',
  '<html><body><h1>Only a heading</h1><p>Short.</p></body></html>',
  '<h1>Not here</h1>',
  '<title>late</title>',
  '<title>Café</title>',
  '<!doctype html><html><head><title>Hello</title></head><body><p>café – ok</p></body></html>',
  '<html><title>x</title></html>',
  '<p/>',
  '<html><body><p>first bytes…',
  `<html><body>${'x'.repeat(50_000)}</body></html>`,
  '<meta charset="windows-1252"><p>café</p>',
];

const PAGE_URLS = ['https://example.com/blog/post.html', 'http://127.0.0.1:8080/a/b?c=d', 'not a url'];

function reference(html: string, url: string) {
  return { summary: referenceSummarizeHtml(html, url), extraction: referenceExtractHtml(html, url) };
}

function expectSame(html: string, url: string): void {
  const expected = reference(html, url);
  const actual = extractPage(html, url);
  expect(actual).toStrictEqual(expected);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
}

describe('streaming extractor = DOM extractor', () => {
  it('on every fixture of the summarizer tests', () => {
    for (const html of FIXTURES) {
      for (const url of PAGE_URLS) expectSame(html, url);
    }
  });

  const corpus = htmlCorpus();

  it('uses a corpus of at least 50 varied pages', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(100);
    expect(new Set(corpus).size).toBe(corpus.length);
    // The generator must actually reach the limits, or equality there would be vacuous.
    const results = corpus.map((html) => extractPage(html, PAGE_URLS[0] as string));
    expect(results.some((r) => r.summary.headings.length === 20)).toBe(true);
    expect(results.some((r) => r.summary.paragraphs.length === 10)).toBe(true);
    expect(results.some((r) => r.extraction.links.length === 50)).toBe(true);
    expect(results.some((r) => r.extraction.images.length === 20)).toBe(true);
    expect(results.some((r) => r.summary.wordCount > 10_000)).toBe(true);
    expect(results.filter((r) => r.summary.title !== '').length).toBeGreaterThan(20);
    expect(results.filter((r) => r.summary.description !== '').length).toBeGreaterThan(10);
  });

  it.each(corpus.map((html, i) => [i, html] as const))('on generated page %i', (_i, html) => {
    expectSame(html, PAGE_URLS[_i % PAGE_URLS.length] as string);
  });
});

describe('isSpace', () => {
  it('is exactly \\s on every UTF-16 code unit', () => {
    const wrong: number[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      if (isSpace(c) !== /\s/.test(String.fromCharCode(c))) wrong.push(c);
    }
    expect(wrong).toEqual([]);
  });
});
