/**
 * Worker-thread side of the extract pool: runs extractPage on what the main
 * thread posts. Kept tiny so a worker starts fast and holds nothing but the
 * extractor.
 */
import { parentPort } from 'node:worker_threads';
import { extractPage } from './summarize.js';

export interface ExtractRequest {
  id: number;
  html: string;
  baseUrl: string;
  /** Test hook: makes this worker die mid-task, to prove the pool survives it. */
  crash?: boolean;
}

export type ExtractReply = { id: number; ok: true; extract: ReturnType<typeof extractPage> } | { id: number; ok: false; message: string };

const port = parentPort;
if (port) {
  port.on('message', (req: ExtractRequest) => {
    if (req.crash) process.exit(70);
    let reply: ExtractReply;
    try {
      reply = { id: req.id, ok: true, extract: extractPage(req.html, req.baseUrl) };
    } catch (err) {
      reply = { id: req.id, ok: false, message: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(reply);
  });
}
