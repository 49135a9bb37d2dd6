import { describe, expect, it } from 'vitest';
import { type DiffLine, diffJson, diffLines, foldUnchanged, stableStringify } from './line-diff.js';

const apply = (lines: DiffLine[], side: 'before' | 'after') =>
  lines.filter((l) => l.kind === 'same' || l.kind === (side === 'before' ? 'del' : 'add')).map((l) => l.text);

describe('line diff', () => {
  it('keeps both sides recoverable and marks only what changed', () => {
    const before = ['{', '  "a": 1,', '  "b": 2,', '  "c": 3', '}'];
    const after = ['{', '  "a": 1,', '  "b": 20,', '  "c": 3,', '  "d": 4', '}'];
    const lines = diffLines(before, after);
    expect(apply(lines, 'before')).toEqual(before);
    expect(apply(lines, 'after')).toEqual(after);
    expect(lines.filter((l) => l.kind === 'del').map((l) => l.text)).toEqual(['  "b": 2,', '  "c": 3']);
    expect(lines.filter((l) => l.kind === 'add').map((l) => l.text)).toEqual(['  "b": 20,', '  "c": 3,', '  "d": 4']);
  });

  it('finds the longest common subsequence in the middle', () => {
    const lines = diffLines(['x', 'a', 'b', 'c', 'y'], ['z', 'a', 'c', 'b', 'w']);
    expect(lines.filter((l) => l.kind === 'same')).toHaveLength(2);
    expect(apply(lines, 'before')).toEqual(['x', 'a', 'b', 'c', 'y']);
    expect(apply(lines, 'after')).toEqual(['z', 'a', 'c', 'b', 'w']);
  });

  it('handles empty sides and identical input', () => {
    expect(diffLines([], ['a'])).toEqual([{ kind: 'add', text: 'a' }]);
    expect(diffLines(['a'], [])).toEqual([{ kind: 'del', text: 'a' }]);
    expect(diffLines(['a', 'b'], ['a', 'b']).every((l) => l.kind === 'same')).toBe(true);
  });

  it('sorts keys so that key order is not a change', () => {
    expect(stableStringify({ b: 1, a: { d: 1, c: [{ f: 1, e: 2 }] } })).toBe(stableStringify({ a: { c: [{ e: 2, f: 1 }], d: 1 }, b: 1 }));
    expect(diffJson({ b: 1, a: 2 }, { a: 2, b: 1 })).toMatchObject({ added: 0, removed: 0 });
    expect(diffJson({ logging: { level: 'info' } }, { logging: { level: 'debug' } })).toMatchObject({ added: 1, removed: 1 });
  });

  it('folds long unchanged runs around the changes', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`);
    const after = [...before];
    after[10] = 'changed';
    const rows = foldUnchanged(diffLines(before, after), 2);
    expect(rows[0]).toEqual({ kind: 'skip', count: 8 });
    expect(rows.at(-1)).toEqual({ kind: 'skip', count: 7 });
    expect(rows.filter((r) => r.kind !== 'skip')).toHaveLength(6);
  });
});
