// Serves the fixture page on the port given as argv[2]:
//   /article       no validators, so the summarizer extracts it fresh every time;
//   /article-etag  with an ETag, answering 304 to a matching If-None-Match (the revalidated case).
// Counts requests and 304s per path at GET /stats, so the benchmark can check what it measured.
import { createServer } from 'node:http';
import { fixturePage } from './fixture-page.mjs';

const page = Buffer.from(fixturePage());
const etag = '"fixture-v1"';
const stats = { article: 0, 'article-etag': 0, notModified: 0 };
createServer((req, res) => {
  if (req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(stats));
  }
  const withEtag = req.url === '/article-etag';
  stats[withEtag ? 'article-etag' : 'article'] += 1;
  if (withEtag && req.headers['if-none-match'] === etag) {
    stats.notModified += 1;
    res.writeHead(304, { etag });
    return res.end();
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': page.length, ...(withEtag ? { etag } : {}) });
  res.end(page);
}).listen(Number(process.argv[2]), '127.0.0.1');
