/**
 * A deterministic corpus of real-world-shaped HTML pages for the extractor
 * equivalence tests: a seeded generator (same seed, same pages, no network)
 * that mixes ordinary article structure with the markup that trips extractors
 * up — implied closes, raw-text elements, comments and CDATA, entities, Unicode
 * whitespace, quoted `>` in attributes, unclosed tags at end of input, nested
 * and missing <body>, <base> after links, limits just under and over.
 */

/** mulberry32: tiny, fast and good enough to vary test pages; reproducible across runs. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'agent gateway schedule token cron bridge workflow device summary paragraph heading link image meta content ' +
  'article section table row cell list item the a of and to in is it that for on with as was at by'
).split(' ');

// Whitespace and near-whitespace: \s includes NBSP, U+2003, U+3000, U+FEFF, U+2028; U+0085, U+180E and U+200B are not \s.
const SPACES = [
  ' ',
  ' ',
  ' ',
  '  ',
  '\n',
  '\t',
  '\r\n',
  '\u00a0',
  '&nbsp;',
  '\u2003',
  '\u3000',
  '\ufeff',
  '\u2028',
  '\u0085',
  '\u180e',
  '\u200b',
  '&#x2003;',
  '&#160;',
];
const ENTITIES = [
  '&amp;',
  '&lt;',
  '&gt;',
  '&quot;',
  '&#39;',
  '&copy;',
  '&copy',
  '&eacute;',
  '&notanentity;',
  '&#0;',
  '&#xD800;',
  '&#x1F600;',
  '&amp',
  '&#128512;',
  '&hellip;',
];
const EMOJI = ['😀', '🚀', 'é', 'ß', '中文', '\u0301'];

export class PageGenerator {
  private readonly rnd: () => number;

  constructor(seed: number) {
    this.rnd = seededRandom(seed);
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.rnd() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.rnd() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rnd() * items.length)] as T;
  }

  word(): string {
    if (this.chance(0.05)) return this.pick(ENTITIES);
    if (this.chance(0.03)) return this.pick(EMOJI);
    const w = this.pick(WORDS);
    return this.chance(0.1) ? w.toUpperCase() : w;
  }

  space(): string {
    return this.chance(0.8) ? ' ' : this.pick(SPACES);
  }

  /** `n` words with varied whitespace between them. */
  words(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += (i ? this.space() : '') + this.word();
    return out;
  }

  /** Text of exactly `length` characters (ASCII), for the length limits. */
  exact(prefix: string, length: number): string {
    return (prefix + ' ' + 'x'.repeat(length)).slice(0, length);
  }

  tag(name: string): string {
    // Parsers lowercase tag names in HTML mode; pages still use every case.
    return this.chance(0.15) ? name.toUpperCase() : this.chance(0.05) ? name[0]?.toUpperCase() + name.slice(1) : name;
  }

  href(): string {
    return this.pick([
      '/about',
      'contact.html',
      '../up/one',
      'https://other.example.org/x?y=1#frag',
      '//cdn.example.net/lib',
      '#top',
      '  #section  ',
      '#',
      '',
      '   ',
      'javascript:void(0)',
      'JavaScript:alert(1)',
      'java\tscript:alert(1)',
      ' javascript:x',
      'mailto:hi@example.com',
      'tel:+123',
      'http://[broken',
      'https://example.com/a b',
      `/page/${this.int(1, 80)}`,
      `/page/${this.int(1, 80)}?q=${this.int(1, 5)}&amp;r=2`,
      'data:text/html,hi',
      '?query=only',
      'HTTPS://EXAMPLE.COM/Upper',
      'https://例え.jp/パス',
    ]);
  }

  src(): string {
    return this.pick([
      '/img/logo.png',
      'pic.png',
      '',
      ' ',
      'data:image/png;base64,iVBORw0KGgo=',
      'javascript:alert(1)',
      'http://[broken',
      `/img/${this.int(1, 40)}.jpg`,
      'https://cdn.example.net/a.webp',
      '//cdn.example.net/b.gif',
    ]);
  }

  /** An attribute string, with the oddities pages have: quoted `>`, no quotes, no value, duplicates, uppercase names. */
  attrs(extra = ''): string {
    const parts: string[] = [];
    if (this.chance(0.3)) parts.push(`title="a > b"`);
    if (this.chance(0.2)) parts.push(`data-x='c>d'`);
    if (this.chance(0.2)) parts.push(`id=plain${this.int(1, 9)}`);
    if (this.chance(0.1)) parts.push('hidden');
    if (this.chance(0.3))
      parts.push(
        `class="${this.pick(['content', 'post-content', 'Content', 'contents', 'x content y', 'x\u00a0content', 'x\tpost-content', 'main', 'content-box', ''])}"`,
      );
    if (extra) parts.push(extra);
    return parts.length ? ` ${parts.join(' ')}` : '';
  }

  inline(): string {
    const n = this.int(0, 3);
    let out = this.words(this.int(1, 12));
    for (let i = 0; i < n; i++) {
      switch (this.int(0, 9)) {
        case 0:
          out += ` <a href="${this.href()}"${this.attrs()}>${this.words(this.int(0, 4))}</a>`;
          break;
        case 1:
          out += ` <${this.tag('em')}>${this.words(2)}</em>`;
          break;
        case 2:
          out += ` <img src="${this.src()}" alt="${this.words(this.int(0, 3))}">`;
          break;
        case 3:
          out += `<script>var s = "${this.words(2)} </div>";</script>`;
          break;
        case 4:
          out += `<!-- ${this.words(3)} -->`;
          break;
        case 5:
          out += '<br/>';
          break;
        case 6:
          out += `<span${this.attrs()}>${this.words(3)}`; // left open
          break;
        case 7:
          out += `<![CDATA[ ${this.words(2)} ]]>`;
          break;
        case 8:
          out += this.pick(ENTITIES);
          break;
        default:
          out += `<${this.tag('b')}>${this.words(2)}</${this.tag('b')}>`;
      }
      out += this.space() + this.words(this.int(0, 6));
    }
    return out;
  }

  block(depth: number): string {
    const kind = this.int(0, 24);
    switch (kind) {
      case 0:
      case 1:
      case 2:
        return `<${this.tag('p')}${this.attrs()}>${this.inline()}</p>`;
      case 3:
        return `<p>${this.inline()}`; // unclosed: the next block closes it (or doesn't)
      case 4: {
        const level = this.int(1, 6);
        return `<h${level}${this.attrs()}>${this.chance(0.2) ? this.words(1).slice(0, 2) : this.inline()}</h${level}>`;
      }
      case 5:
        return `<${this.tag('h2')}>${this.exact('Heading', this.pick([2, 3, 198, 199, 200]))}</h2>`;
      case 6:
        return `<p>${this.exact('Paragraph', this.pick([20, 21, 22, 1998, 1999, 2000]))}</p>`;
      case 7: {
        const rows = this.int(1, 4);
        let t = `<${this.tag('table')}${this.attrs()}>`;
        if (this.chance(0.5)) t += `<caption>${this.words(3)}</caption>`;
        for (let r = 0; r < rows; r++) {
          t += '<tr>';
          for (let c = 0; c < this.int(1, 4); c++) t += this.chance(0.5) ? `<td>${this.inline()}` : `<th>${this.words(2)}</th>`;
        }
        return `${t}</table>`;
      }
      case 8: {
        const list = this.pick(['ul', 'ol']);
        let l = `<${list}>`;
        for (let i = 0; i < this.int(1, 5); i++) {
          l += `<li>${this.inline()}`;
          if (depth < 4 && this.chance(0.3)) l += this.block(depth + 1);
          if (this.chance(0.5)) l += '</li>';
        }
        return `${l}</${list}>`;
      }
      case 9:
        return `<script type="text/javascript">if (a < b && c > d) { document.write("<p>${this.words(3)}</p>"); } // <!-- </scr + ipt></script>`;
      case 10:
        return `<${this.tag('style')}>p > a { content: "${this.words(2)}"; } .content{}</style>`;
      case 11:
        return `<noscript><p>${this.words(8)} inside noscript, long enough</p><img src="/img/nojs.png" alt="nojs"><h2>Noscript heading</h2></noscript>`;
      case 12:
        return `<template><h2>Template heading</h2><p class="content">${this.words(8)} template paragraph text</p></template>`;
      case 13:
        return `<!--[if IE]><p>${this.words(6)} conditional comment</p><![endif]-->`;
      case 14:
        return `<article${this.attrs()}>${depth < 4 ? this.blocks(depth + 1, this.int(1, 3)) : this.inline()}</article>`;
      case 15:
        return `<div${this.attrs(this.pick(['class="content"', 'class="post-content"', 'CLASS="content"', '']))}>${depth < 4 ? this.blocks(depth + 1, this.int(1, 3)) : this.inline()}</div>`;
      case 16:
        return `<svg viewBox="0 0 10 10"><title>${this.words(2)}</title><circle r="1"/><text>${this.words(2)}</text></svg>`;
      case 17:
        return `<math><mi>x</mi><mo>=</mo><mn>1</mn></math>`;
      case 18:
        return `<dl><dt>${this.words(2)}<dd>${this.inline()}<dt>${this.words(1)}</dl>`;
      case 19:
        return `<select><option>${this.words(1)}<option>${this.words(1)}</select><textarea>${this.words(3)} <p>not a tag</p></textarea>`;
      case 20:
        return `<a href="${this.href()}"><a href="${this.href()}">${this.words(2)}</a> nested ${this.words(2)}</a>`;
      case 21:
        return `</p></br></div></span>${this.words(3)}`; // stray end tags
      case 22:
        return `<main>${depth < 4 ? this.blocks(depth + 1, this.int(1, 2)) : this.inline()}</main>`;
      case 23:
        return `<meta ${this.pick(['name', 'property', 'NAME', 'Property'])}="${this.pick(['description', ' Description ', 'og:description', 'OG:Title', 'twitter:card', 'keywords'])}" content="${this.pick(['', '  ', this.words(4)])}">`;
      default:
        return `<img src="${this.src()}"${this.chance(0.4) ? ` data-src="${this.src()}"` : ''} alt="${this.words(this.int(0, 20))}">`;
    }
  }

  blocks(depth: number, n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += this.block(depth) + (this.chance(0.7) ? '\n' : '');
    return out;
  }

  head(): string {
    let h = '';
    if (this.chance(0.7))
      h += this.pick([
        '<meta charset="utf-8">',
        '<meta charset=windows-1252>',
        '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=iso-8859-1">',
      ]);
    if (this.chance(0.8))
      h += `<${this.tag('title')}>${this.pick([this.words(5), '  \n ', '', `${this.words(2)} <b>bold?</b> &amp; ${this.words(1)}`])}</title>`;
    if (this.chance(0.2)) h += `<title>${this.words(3)} second title</title>`;
    for (let i = 0; i < this.int(0, 5); i++) {
      const attr = this.pick(['name', 'property', 'NAME', 'Property']);
      const key = this.pick([
        'description',
        ' DESCRIPTION ',
        'og:description',
        'og:title',
        'og:image',
        'twitter:card',
        'Twitter:Title',
        'keywords',
        'og:',
      ]);
      const content = this.pick(['', '   ', `  ${this.words(6)}  `, `${this.words(3)}\n${this.words(2)}`, '&quot;quoted&quot; &amp; more']);
      h += this.chance(0.1)
        ? `<meta ${attr}="${key}">`
        : `<meta ${attr}="${key}" content="${content}"${this.chance(0.1) ? ` content="dup"` : ''}>`;
    }
    if (this.chance(0.2)) h += `<base href="${this.pick(['https://cdn.example.net/assets/', '/v2/', '', 'http://[broken', ' sub/ '])}">`;
    if (this.chance(0.3)) h += `<script>window.x = "<title>fake</title>";</script>`;
    if (this.chance(0.2)) h += `<style>h1 { color: red }</style>`;
    if (this.chance(0.1)) h += `<noscript><meta name="description" content="from noscript"></noscript>`;
    return h;
  }

  /** One whole page; the shape (doctype, head, body presence) varies with the seed. */
  page(): string {
    const body = this.blocks(0, this.int(0, 30));
    const shape = this.int(0, 9);
    const doctype = this.pick(['<!DOCTYPE html>', '<!doctype HTML PUBLIC "-//W3C//DTD HTML 4.01//EN">', '<?xml version="1.0"?>', '']);
    switch (shape) {
      case 0:
        return body; // fragment: no html, head or body
      case 1:
        return `${doctype}<html><head>${this.head()}</head></html>`; // no body
      case 2:
        return `${doctype}<HTML><HEAD>${this.head()}</HEAD><BODY BGCOLOR=white>${body}</BODY></HTML>`;
      case 3:
        return `${doctype}<html><head>${this.head()}<body>${body}`; // unclosed head and body
      case 4:
        return `<html><head>${this.head()}</head><body>${body}<div><body class="inner">${this.words(5)}</body></div> tail</body></html>`;
      case 5:
        return `<html><body>${this.words(3)}</body><body>${body}</body></html>`; // two bodies, words may join
      case 6:
        return `<html><head>${this.head()}</head><body>${body}${this.pick(['<a href="/cut', '<p class="content', '<!-- unterminated', '<script>never closed', '<div', '&amp', '<![CDATA[x', '</'])}`;
      default:
        return `${doctype}\n<html lang="en">\n<head>${this.head()}</head>\n<body>\n${body}\n</body>\n</html>\n`;
    }
  }
}

/** Pages aimed at single rules, beside the random ones: limits, big pages, <base> placement, many links. */
export function targetedPages(gen: PageGenerator): string[] {
  const manyLinks = Array.from({ length: 70 }, (_, i) => `<a href="/l/${i % 60}">Link ${i}</a>`).join(' ');
  const manyImages = Array.from({ length: 30 }, (_, i) => `<img src="/i/${i % 25}.png" alt="Image ${i}">`).join('');
  const manyHeadings = Array.from({ length: 30 }, (_, i) => `<h${(i % 3) + 1}>Heading number ${i % 24}</h${(i % 3) + 1}>`).join('');
  const manyParas = Array.from({ length: 20 }, (_, i) => `<p>Paragraph number ${i % 12} that is long enough.</p>`).join('');
  const longText = gen.words(40_000);
  return [
    '',
    '<html><body></body></html>',
    '<html><body>   </body></html>',
    `<html><head><title>Big</title></head><body><article>${longText}</article><p>${longText.slice(0, 5000)}</p></body></html>`,
    `<body>${manyLinks}<base href="https://late.example/base/"></body>`,
    `<head><base href="https://early.example/dir/"></head><body>${manyLinks}${manyImages}</body>`,
    `<base href=""><base href="https://second.example/"><a href="x">X</a>`,
    `<body>${manyHeadings}${manyParas}</body>`,
    `<body><article>${manyParas}</article></body>`,
    `<body><article><p>Inner paragraph one, long enough.</p>${manyParas}</article></body>`,
    `<body><h1>Real <script>evil()</script>title</h1><p>Paragraph text <script>var x = 1;</script>that is long.</p></body>`,
    `<noscript><body><p>Body inside noscript is removed, long enough.</p></body></noscript>`,
    `<body>word<body>inner</body>tail</body>`,
    `<body>end</body><body>start more</body>`,
    `<body> a </body><body></body><body>b</body>`,
    `<h1>${'x'.repeat(300)}</h1><title></title>`,
    `<title><h1>Title with markup</h1></title>`,
    `<svg><title>Svg title first</title></svg><title>Real title</title>`,
    `<a href="/e">${'a'.repeat(99)}😀tail</a><img src="/s" alt="${'b'.repeat(99)}😀">`,
    `<a href="/same">First</a><a href="/same">Second</a><a href="https://example.com/same">Third</a>`,
    `<A HREF="/UP">Upper</A><IMG SRC="/UP.PNG" ALT="UP"><META NAME="Description" CONTENT="Upper desc">`,
    `<a href="/x" href="/y">dup attrs</a><meta name="description" name="og:title" content="first" content="second">`,
    `<p class="content">${'y'.repeat(1999)}</p><p>${'z'.repeat(2000)}</p>`,
    `<p>one\u00a0two\u2003three\u3000four\ufeff five\u0085six\u180eseven\u200beight</p>`,
    `<img data-src="/lazy.png" src="" alt="lazy"><img src=" " data-src=" "><img data-src="data:x">`,
    `<p>&nbsp;&nbsp;Entity&nbsp;spaces&#x20;and&#32;&amp;&amp;&amp; a long paragraph</p>`,
    `<table><tr><td>cell<td>cell2<tr><td><p>Paragraph inside table cell long enough</table><p>after table, long enough text</p>`,
    `<ul><li>one<li>two<ul><li>nested<li>nested two</ul><li>three</ul>`,
    `<p>Unclosed paragraph with plenty of words<p>Second unclosed para, long<a href="/x">link`,
    `<body><h2>Cut heading at the end of inp`,
    `<body><a href="/cut">cut link text`,
    `<body><p class="content">text then <a href="/cut" title="unterminated`,
    `${'<div>'.repeat(500)}deep text that is fine${'</div>'.repeat(100)}`,
    `<body><xmp><p>xmp raw</p></xmp><iframe><p>iframe raw</p></iframe><plaintext><p>plaintext</p>`,
    String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i)),
    '<<<>>><</ \u0000 <a href=<img src=>>> &#xZZ; &bogus;',
  ];
}

/** The generated corpus: `randomCount` seeded random pages plus the targeted ones. */
export function htmlCorpus(seed = 20_240_518, randomCount = 80): string[] {
  const gen = new PageGenerator(seed);
  const pages: string[] = [];
  for (let i = 0; i < randomCount; i++) pages.push(gen.page());
  return [...pages, ...targetedPages(gen)];
}
