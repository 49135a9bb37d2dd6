/**
 * Reading a service's `GET /metrics` (Prometheus text format) in tests: one scrape is parsed into samples, and a value
 * is looked up by metric name and a subset of its labels (issue #21).
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  status: number;
  contentType: string | null;
  text: string;
  samples: Sample[];
  /** The sum of the samples named `name` whose labels include `labels` (0 when there is none). */
  value(name: string, labels?: Record<string, string>): number;
  /** Whether any sample is named `name` (with `labels`). */
  has(name: string, labels?: Record<string, string>): boolean;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const unescapeLabel = (value: string) => value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key as string] = unescapeLabel(value as string);
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

const matches = (sample: Sample, name: string, labels: Record<string, string>) =>
  sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value);

/** `GET <url>/metrics` with `headers`, parsed when it answered 200. */
export async function scrapeMetrics(url: string, headers: Record<string, string> = {}): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers });
  const text = await res.text();
  const samples = res.status === 200 ? parseMetrics(text) : [];
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    text,
    samples,
    value: (name, labels = {}) => samples.filter((s) => matches(s, name, labels)).reduce((sum, s) => sum + s.value, 0),
    has: (name, labels = {}) => samples.some((s) => matches(s, name, labels)),
  };
}
