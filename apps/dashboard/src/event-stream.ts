import { ApiError, parseBody, refusal } from './api.js';

/**
 * Server-sent events read with `fetch` rather than `EventSource`: an `EventSource` hides the HTTP status and body of
 * a refusal (a 501 "not on this provider" looks the same as a dropped connection), and the log page must tell them
 * apart. The session cookie goes along as with any same-origin request.
 */

export interface StreamEvent {
  event: string;
  data: string;
}

/** The `text/event-stream` format (WHATWG HTML §9.2): fields per line, an empty line dispatches, `:` starts a comment. */
export class EventStreamParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  /** Feeds decoded text; returns the events it completed. */
  push(chunk: string): StreamEvent[] {
    this.buffer += chunk;
    const out: StreamEvent[] = [];
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this.buffer);
      if (!match) break;
      // A lone `\r` at the very end may be the first half of `\r\n`: wait for the next chunk.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line, out);
    }
    return out;
  }

  private line(line: string, out: StreamEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) out.push({ event: this.event || 'message', data: this.data.join('\n') });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    // `id` and `retry` matter only to EventSource's own reconnection, which this reader does not do.
  }
}

/** JSON of an event's data, or the text itself. */
export function eventData(event: StreamEvent): unknown {
  try {
    return JSON.parse(event.data);
  } catch {
    return event.data;
  }
}

/**
 * Opens `path` as an event stream and calls `onEvent` for each event until the server ends the stream (resolves) or
 * the connection breaks (rejects). A refusal (an error status, or an answer that is not an event stream) rejects with
 * an `ApiError` carrying the API's own `{ error }` message before any event.
 */
export async function readEventStream(path: string, onEvent: (event: StreamEvent) => void, signal: AbortSignal): Promise<void> {
  let res: Response;
  try {
    res = await fetch(path, { credentials: 'same-origin', headers: { accept: 'text/event-stream' }, signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'The service cannot be reached. Check your connection and try again.', null);
  }
  const type = res.headers.get('content-type') ?? '';
  if (!res.ok || !type.includes('text/event-stream') || !res.body) {
    throw refusal(res.ok ? 502 : res.status, parseBody(await res.text().catch(() => '')));
  }
  const parser = new EventStreamParser();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const event of parser.push(value)) onEvent(event);
    }
  } finally {
    reader.releaseLock();
  }
}
