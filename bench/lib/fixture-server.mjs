// Serves the fixture page on the port given as argv[2].
import { createServer } from 'node:http';
import { fixturePage } from './fixture-page.mjs';

const page = Buffer.from(fixturePage());
createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': page.length });
  res.end(page);
}).listen(Number(process.argv[2]), '127.0.0.1');
