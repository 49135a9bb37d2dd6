/**
 * A small pool of worker threads running extractPage, so big pages parse on
 * other cores while the main thread keeps serving HTTP. One task per worker at
 * a time; the rest wait in a FIFO queue. A worker that dies (crash, OOM,
 * process.exit) fails only the task it held and is replaced; the service keeps
 * running.
 */
import { Worker } from 'node:worker_threads';
import type { ExtractReply, ExtractRequest } from './extract-worker.js';
import type { PageExtract } from './summarize.js';

export class ExtractPoolError extends Error {
  override readonly name = 'ExtractPoolError';
}

interface Task {
  req: ExtractRequest;
  resolve: (extract: PageExtract) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  task: Task | undefined;
}

/**
 * The compiled worker next to this file in dist. Under tests (TypeScript
 * sources, no build) the .ts worker, imported through tsx's API from a tiny
 * eval'd bootstrap: Node 20 doesn't apply `--import tsx` from a worker's
 * execArgv. Messages posted meanwhile wait in the port until the worker listens.
 */
function startWorker(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./extract-worker.js', import.meta.url));
  const file = new URL('./extract-worker.ts', import.meta.url).href;
  // A bare specifier: resolved from the working directory (the repo root under vitest), where tsx is installed.
  const code = `import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(file)}, ${JSON.stringify(file)}))`;
  return new Worker(code, { eval: true });
}

export class ExtractPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;
  /** Workers started to replace dead ones: for tests and logs. */
  replaced = 0;

  /** Workers start on demand (up to `size`): a service that never sees a big page never pays for them. */
  constructor(readonly size: number) {}

  /** Workers currently running. */
  get started(): number {
    return this.slots.length;
  }

  /** Pages waiting for a free worker (/metrics). */
  get queued(): number {
    return this.queue.length;
  }

  run(html: string, baseUrl: string, opts: { crash?: boolean } = {}): Promise<PageExtract> {
    if (this.closed) return Promise.reject(new ExtractPoolError('Extract pool is closed'));
    return new Promise((resolve, reject) => {
      const req: ExtractRequest = { id: this.nextId++, html, baseUrl, ...(opts.crash ? { crash: true } : {}) };
      this.queue.push({ req, resolve, reject });
      this.dispatch();
    });
  }

  /** Terminates every worker; queued and running tasks fail. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const err = new ExtractPoolError('Extract pool closed');
    for (const task of this.queue.splice(0)) task.reject(err);
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.task?.reject(err);
        slot.task = undefined;
        await slot.worker.terminate();
      }),
    );
  }

  private spawn(): Slot {
    const worker = startWorker();
    const slot: Slot = { worker, task: undefined };
    worker.on('message', (reply: ExtractReply) => {
      const task = slot.task;
      if (!task || task.req.id !== reply.id) return;
      slot.task = undefined;
      worker.unref();
      if (reply.ok) task.resolve(reply.extract);
      else task.reject(new ExtractPoolError(reply.message));
      this.dispatch();
    });
    // 'error' (an uncaught exception in the worker) is followed by 'exit'; handling it keeps it from crashing us.
    worker.on('error', () => {});
    worker.on('exit', (code) => {
      const task = slot.task;
      slot.task = undefined;
      task?.reject(new ExtractPoolError(`Extract worker exited with code ${code}`));
      if (this.closed) return;
      const index = this.slots.indexOf(slot);
      if (index !== -1) {
        this.slots[index] = this.spawn();
        this.replaced++;
      }
      this.dispatch();
    });
    // Idle workers must not keep the process alive (tests, scripts); a busy one is ref'd while it holds a task.
    worker.unref();
    return slot;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.task);
      if (!slot) {
        if (this.slots.length >= this.size) return;
        slot = this.spawn();
        this.slots.push(slot);
      }
      const task = this.queue.shift() as Task;
      slot.task = task;
      slot.worker.ref();
      slot.worker.postMessage(task.req);
    }
  }
}
