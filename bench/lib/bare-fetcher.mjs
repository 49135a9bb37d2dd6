// The baseline: a bare node:http server that, per POST, only fetches the page
// named in the body and answers its length. No parsing, no validation, no safety.
import { createServer } from 'node:http';

createServer((req, res) => {
  let body = '';
  req.on('data', (c) => {
    body += c;
  });
  req.on('end', async () => {
    if (req.method !== 'POST') return res.end('ok');
    const { url } = JSON.parse(body);
    const page = await (await fetch(url)).text();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ url, bytes: page.length }));
  });
}).listen(Number(process.argv[2]), '127.0.0.1');
