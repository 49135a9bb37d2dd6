/**
 * A small line diff for the configuration page: pretty-printed JSON with sorted keys (so key order never shows as a
 * change), compared line by line with a longest-common-subsequence table.
 */

export type DiffLine = { kind: 'same' | 'add' | 'del'; text: string };
export type DiffRow = DiffLine | { kind: 'skip'; count: number };

/** JSON with object keys sorted at every level and two-space indentation. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2) ?? 'undefined';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

/**
 * Beyond this many table cells (about 16 MB) the middle part is shown as removed and re-added instead of computed:
 * configurations are a few hundred lines, so only a pathological document gets there.
 */
const MAX_CELLS = 4_000_000;

/** The lines of `before` and `after` in order, each kept, removed (`del`) or added (`add`). */
export function diffLines(before: readonly string[], after: readonly string[]): DiffLine[] {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let endA = before.length;
  let endB = after.length;
  while (endA > start && endB > start && before[endA - 1] === after[endB - 1]) {
    endA--;
    endB--;
  }
  const head: DiffLine[] = before.slice(0, start).map((text) => ({ kind: 'same', text }));
  const tail: DiffLine[] = before.slice(endA).map((text) => ({ kind: 'same', text }));
  const a = before.slice(start, endA);
  const b = after.slice(start, endB);
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0 || (n + 1) * (m + 1) > MAX_CELLS) {
    return [...head, ...a.map((text): DiffLine => ({ kind: 'del', text })), ...b.map((text): DiffLine => ({ kind: 'add', text })), ...tail];
  }
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * width + j] =
        a[i] === b[j]
          ? (lcs[(i + 1) * width + j + 1] as number) + 1
          : Math.max(lcs[(i + 1) * width + j] as number, lcs[i * width + j + 1] as number);
    }
  }
  const middle: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      middle.push({ kind: 'same', text: a[i] as string });
      i++;
      j++;
    } else if ((lcs[(i + 1) * width + j] as number) >= (lcs[i * width + j + 1] as number)) {
      middle.push({ kind: 'del', text: a[i] as string });
      i++;
    } else {
      middle.push({ kind: 'add', text: b[j] as string });
      j++;
    }
  }
  while (i < n) middle.push({ kind: 'del', text: a[i++] as string });
  while (j < m) middle.push({ kind: 'add', text: b[j++] as string });
  return [...head, ...middle, ...tail];
}

/** The diff with long unchanged runs folded to `context` lines either side of each change. */
export function foldUnchanged(lines: readonly DiffLine[], context = 3): DiffRow[] {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((line, index) => {
    if (line.kind === 'same') return;
    for (let k = Math.max(0, index - context); k <= Math.min(lines.length - 1, index + context); k++) keep[k] = true;
  });
  const rows: DiffRow[] = [];
  let skipped = 0;
  lines.forEach((line, index) => {
    if (keep[index]) {
      if (skipped) rows.push({ kind: 'skip', count: skipped });
      skipped = 0;
      rows.push(line);
    } else skipped++;
  });
  if (skipped) rows.push({ kind: 'skip', count: skipped });
  return rows;
}

/** The diff of two JSON values as pretty-printed lines, with counts. */
export function diffJson(before: unknown, after: unknown): { lines: DiffLine[]; added: number; removed: number } {
  const lines = diffLines(stableStringify(before).split('\n'), stableStringify(after).split('\n'));
  return {
    lines,
    added: lines.filter((l) => l.kind === 'add').length,
    removed: lines.filter((l) => l.kind === 'del').length,
  };
}
