import { type LineQueue, pause, splitTimestampNs } from './log-follow.js';

/** What a log source answers for one attach: the gateway's timestamped lines, nothing to attach to yet, or the end. */
export type LogAttach = AsyncIterable<string> | null | 'end';

/**
 * Feeds `queue` from a log that can only be followed in attachments (a container or pod is replaced, the API drops
 * the stream): each attach resumes after `floor`, the newest timestamp already sent, because the sources' `since`
 * is inclusive (or coarser) and would repeat lines. A failed attach is retried after `pollMs`; `ends(error)` says
 * which failures mean the agent is gone for good.
 */
export async function pumpLogLines(options: {
  start: bigint;
  queue: LineQueue;
  pollMs: number;
  signal: AbortSignal;
  attach(floor: bigint): Promise<LogAttach>;
  ends?(error: unknown): boolean;
}): Promise<void> {
  const { queue, pollMs, signal } = options;
  let floor = options.start;
  while (!signal.aborted) {
    try {
      const lines = await options.attach(floor);
      if (lines === 'end') return queue.end();
      if (lines) {
        for await (const text of lines) {
          const { ns, text: line } = splitTimestampNs(text);
          if (ns !== null && ns <= floor) continue;
          if (ns !== null) floor = ns;
          queue.push(line);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (options.ends?.(error)) return queue.end();
    }
    await pause(pollMs, signal);
  }
}
