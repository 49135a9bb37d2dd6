// A ~100 KB article page: headings, paragraphs, links and images, like a long blog post.
export function fixturePage(targetBytes = 100_000) {
  const parts = [
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Benchmark article</title>',
    '<meta name="description" content="A long page for the summarizer benchmark.">',
    '<meta property="og:title" content="Benchmark"><meta name="twitter:card" content="summary"></head><body><main>',
  ];
  let i = 0;
  while (parts.join('').length < targetBytes) {
    parts.push(
      `<h2>Section ${i}</h2><p>Paragraph ${i} talks about agents, gateways and schedules at some length so that it counts as a real paragraph of text.</p>`,
      `<p>Another paragraph ${i} with <a href="/articles/${i}">a link to article ${i}</a> and <img src="/img/${i}.png" alt="figure ${i}">.</p>`,
    );
    i += 1;
  }
  parts.push('</main></body></html>');
  return parts.join('\n');
}
