import { describe, expect, it } from 'vitest';
import { EventStreamParser, eventData } from './event-stream.js';

describe('event stream parser', () => {
  it('reads named events, default events, comments and multi-line data', () => {
    const parser = new EventStreamParser();
    const events = parser.push('retry: 5000\n\n: ping\n\nevent: ready\ndata: {"streamId":"s1"}\n\ndata: a\ndata: b\n\n');
    expect(events).toEqual([
      { event: 'ready', data: '{"streamId":"s1"}' },
      { event: 'message', data: 'a\nb' },
    ]);
    expect(eventData(events[0] as never)).toEqual({ streamId: 's1' });
    expect(eventData(events[1] as never)).toBe('a\nb');
  });

  it('joins events split across chunks, including a CRLF split in two', () => {
    const parser = new EventStreamParser();
    expect(parser.push('event: log\r')).toEqual([]);
    expect(parser.push('\ndata: {"line":"x"}\r\n')).toEqual([]);
    expect(parser.push('\r\nevent: end\rdata:{"reason":"stopped"}\r\r\n')).toEqual([
      { event: 'log', data: '{"line":"x"}' },
      { event: 'end', data: '{"reason":"stopped"}' },
    ]);
  });

  it('an event without data is not dispatched', () => {
    expect(new EventStreamParser().push('event: log\n\n')).toEqual([]);
  });
});
