import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/**
 * Server-sent events on a raw response, and the registry of open log streams (per backend process: a stream lives
 * on the connection that carries it, so `stop` and `active` see the streams of this process).
 */

export interface SseOptions {
  /** Comment lines that keep proxies and idle timeouts from closing a quiet stream (default 15 s). */
  heartbeatMs?: number;
  /** Client reconnect delay announced with `retry:` (default 5 s). */
  retryMs?: number;
}

/** Writes `text/event-stream` frames; `closed` once the client is gone or `end` was called. */
export class SseWriter {
  private heartbeat: NodeJS.Timeout | null = null;
  private ended = false;
  private readonly closeListeners: Array<() => void> = [];

  constructor(
    private readonly res: ServerResponse,
    headers: Record<string, string | number | string[]>,
    { heartbeatMs = 15_000, retryMs = 5_000 }: SseOptions = {},
  ) {
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // nginx and similar proxies buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    res.write(`retry: ${retryMs}\n\n`);
    this.heartbeat = setInterval(() => this.comment(`ping ${new Date().toISOString()}`), heartbeatMs);
    this.heartbeat.unref();
    res.on('close', () => this.finish());
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Called once when the stream ends, whoever ended it. */
  onClose(listener: () => void): void {
    if (this.ended) listener();
    else this.closeListeners.push(listener);
  }

  /** One event; `data` is sent as JSON on a single `data:` line (JSON has no raw newlines). */
  send(event: string, data: unknown): void {
    if (this.ended) return;
    this.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  comment(text: string): void {
    if (this.ended) return;
    this.res.write(`: ${text.replace(/[\r\n]/g, ' ')}\n\n`);
  }

  /** Sends a last `end` event with the reason, then closes the response. */
  end(reason: string): void {
    if (this.ended) return;
    this.send('end', { reason });
    this.res.end();
    this.finish();
  }

  private finish(): void {
    if (this.ended && this.heartbeat === null) return;
    this.ended = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}

export interface LogStream {
  id: string;
  userId: string;
  agentId: string;
  startedAt: string;
  linesSent: number;
  /** Ends the stream (an `end` event with the reason, then the response closes). */
  stop(reason: string): void;
}

/** Open log streams by id, with a per-user cap. */
export class LogStreamRegistry {
  private readonly streams = new Map<string, LogStream>();

  constructor(readonly maxPerUser: number) {}

  countFor(userId: string): number {
    let n = 0;
    for (const stream of this.streams.values()) if (stream.userId === userId) n += 1;
    return n;
  }

  /** Registers a stream; the caller checked the cap first (both happen before any await). */
  add(userId: string, agentId: string, stop: (reason: string) => void): LogStream {
    const stream: LogStream = {
      id: `lgs_${randomBytes(12).toString('base64url')}`,
      userId,
      agentId,
      startedAt: new Date().toISOString(),
      linesSent: 0,
      stop,
    };
    this.streams.set(stream.id, stream);
    return stream;
  }

  remove(id: string): void {
    this.streams.delete(id);
  }

  listFor(userId: string): LogStream[] {
    return [...this.streams.values()].filter((stream) => stream.userId === userId);
  }

  /** Ends the user's streams of one agent; how many there were. */
  stopFor(userId: string, agentId: string, reason: string): number {
    const matching = this.listFor(userId).filter((stream) => stream.agentId === agentId);
    for (const stream of matching) stream.stop(reason);
    return matching.length;
  }

  stopAll(reason: string): void {
    for (const stream of [...this.streams.values()]) stream.stop(reason);
  }
}
