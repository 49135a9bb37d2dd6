export interface SseEvent {
  event: string;
  data: any;
}

/**
 * A server-sent-event client over fetch, reading frame by frame as they arrive (as a browser's EventSource does):
 * collects events (JSON data) and comments until the stream ends or `close()` aborts it. A refusal (not an event
 * stream) leaves `events` empty; `res` has the status and body.
 */
export async function openSse(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const state = { ended: false };
  if (res.headers.get('content-type')?.startsWith('text/event-stream') && res.body) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
            const frame = buffer.slice(0, at);
            buffer = buffer.slice(at + 2);
            let event = 'message';
            let data: string | null = null;
            for (const line of frame.split('\n')) {
              if (line.startsWith(':')) comments.push(line.slice(1).trim());
              else if (line.startsWith('event: ')) event = line.slice(7);
              else if (line.startsWith('data: ')) data = line.slice(6);
            }
            if (data !== null) events.push({ event, data: JSON.parse(data) });
          }
        }
      } catch {
        // aborted
      } finally {
        state.ended = true;
      }
    })();
  }
  return {
    res,
    events,
    comments,
    get ended() {
      return state.ended;
    },
    close: () => controller.abort(),
  };
}
