import { describe, expect, it } from 'vitest';
import { FrameDemuxer, demuxFrames } from '../docker/docker-wire.js';
import { linesAfter } from '../hosting/host.js';
import { LineQueue, LineSplitter, parseTimeNs, splitTimestampNs } from './log-follow.js';

const frame = (stream: number, text: string) => {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
};

describe('live log building blocks', () => {
  it('FrameDemuxer reads multiplexed frames cut anywhere by chunk boundaries', () => {
    const wire = Buffer.concat([frame(1, 'out ✓\n'), frame(2, 'err\n'), frame(1, 'more')]);
    for (const cut of [1, 3, 8, 9, 12, wire.length - 1]) {
      const demuxer = new FrameDemuxer();
      const frames = [...demuxer.push(wire.subarray(0, cut)), ...demuxer.push(wire.subarray(cut))];
      expect(frames.map((f) => [f.stream, f.payload.toString('utf8')])).toEqual([
        [1, 'out ✓\n'],
        [2, 'err\n'],
        [1, 'more'],
      ]);
    }
    const { stdout, stderr } = demuxFrames(wire);
    expect([stdout.toString(), stderr.toString()]).toEqual(['out ✓\nmore', 'err\n']);
  });

  it('LineSplitter keeps UTF-8 across chunks, trims CR, cuts endless lines and flushes the rest', () => {
    const splitter = new LineSplitter(10);
    const text = Buffer.from('one\r\ntw✓o\nthr');
    expect([...splitter.push(text.subarray(0, 8)), ...splitter.push(text.subarray(8))]).toEqual(['one', 'tw✓o']);
    expect(splitter.flush()).toEqual(['thr']);
    expect(splitter.push(Buffer.from(`${'x'.repeat(12)}\n`))).toEqual([`${'x'.repeat(10)}…`]);
  });

  it('parses log timestamps to the nanosecond', () => {
    expect(parseTimeNs('2026-01-01T00:00:01.000000002Z')).toBe(1_767_225_601_000_000_002n);
    expect(parseTimeNs('2026-01-01T01:00:01.5+01:00')).toBe(1_767_225_601_500_000_000n);
    expect(parseTimeNs('yesterday')).toBeNull();
    expect(splitTimestampNs('2026-01-01T00:00:01Z hello world')).toEqual({ ns: 1_767_225_601_000_000_000n, text: 'hello world' });
    expect(splitTimestampNs('no stamp here')).toEqual({ ns: null, text: 'no stamp here' });
  });

  it('LineQueue hands lines to a waiting consumer, ends on abort, and passes a failure on', async () => {
    const controller = new AbortController();
    const queue = new LineQueue(controller.signal);
    const got: string[] = [];
    const consumer = (async () => {
      for await (const line of queue) got.push(line);
    })();
    queue.push('a', 'b');
    await new Promise((r) => setTimeout(r, 10));
    queue.push('c');
    await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    await consumer;
    expect(got).toEqual(['a', 'b', 'c']);
    queue.push('late');
    expect(got).toHaveLength(3);

    const failing = new LineQueue(new AbortController().signal);
    failing.push('x');
    failing.fail(new Error('source gone'));
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const line of failing) seen.push(line);
      })(),
    ).rejects.toThrow('source gone');
    expect(seen).toEqual(['x']);
  });

  it('linesAfter finds what a poll of the last lines added to the previous poll', () => {
    const at = (message: string) => ({ timestamp: 't', message });
    const previous = ['a', 'b', 'a'].map(at);
    expect(linesAfter(previous, ['a', 'b', 'a', 'b', 'a'].map(at)).map((l) => l.message)).toEqual(['b', 'a']);
    expect(linesAfter(previous, ['b', 'a', 'c'].map(at)).map((l) => l.message)).toEqual(['c']); // window moved on
    expect(linesAfter(previous, previous).map((l) => l.message)).toEqual([]);
    expect(linesAfter(previous, ['x', 'y'].map(at)).map((l) => l.message)).toEqual(['x', 'y']); // more than a window
  });
});
