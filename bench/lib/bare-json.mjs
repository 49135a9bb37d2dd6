// The baseline: a bare node:http server answering a fixed JSON body.
import { createServer } from 'node:http';

const body = JSON.stringify({ config: { logging: { level: 'info' } }, backups: [] });
createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(Number(process.argv[2]), '127.0.0.1');
