/**
 * A reader of the Prometheus text exposition format (version 0.0.4), as the nodes' `/metrics`
 * serve it (prom-client): `name{label="value",...} value [timestamp]` a line, `#` lines for HELP,
 * TYPE and comments. The DMS reads its nodes' metrics with it for the WebUX's graphs
 * (metricsScraper.ts), so it never throws: a line it cannot read is skipped and named in
 * `problems` (with its line number), and the rest of the text still counts.
 */

/** One sample: a metric name, its labels and its value. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** What {@link parsePromText} read. */
export interface PromText {
  readonly samples: PromSample[];
  /** Lines skipped, as `line N: why` (at most {@link MAX_PROBLEMS}). */
  readonly problems: string[];
}

/** Problems listed at most (a text that is wholly wrong names the first few only). */
export const MAX_PROBLEMS = 5;

const NAME = /^[A-Za-z_:][A-Za-z0-9_:]*/;
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/** The value of a sample: a decimal or one of the special values the format allows. */
function valueOf(text: string): number | undefined {
  if (text === 'NaN') return NaN;
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** Reads `{a="x",b="y"}` at the start of `s`; returns the labels and the rest, or why not. */
function readLabels(s: string): { labels: Record<string, string>; rest: string } | string {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    while (s[i] === ' ') i++;
    if (s[i] === '}') return { labels, rest: s.slice(i + 1) };
    const m = LABEL_NAME.exec(s.slice(i));
    if (!m) return `a label name was expected at column ${i + 1}`;
    i += m[0].length;
    if (s[i] !== '=' || s[i + 1] !== '"') return `label '${m[0]}' has no ="value"`;
    i += 2;
    let v = '';
    for (;;) {
      const c = s[i];
      if (c === undefined) return `label '${m[0]}' has no closing quote`;
      if (c === '"') break;
      if (c === '\\') {
        const e = s[i + 1];
        v += e === 'n' ? '\n' : (e ?? '');
        i += 2;
      } else {
        v += c;
        i++;
      }
    }
    labels[m[0]] = v;
    i++;
    while (s[i] === ' ') i++;
    if (s[i] === ',') i++;
    else if (s[i] !== '}') return `',' or '}' was expected after label '${m[0]}'`;
  }
}

/** Reads one sample line (not a comment); returns the sample or why it cannot be read. */
function readLine(line: string): PromSample | string {
  const m = NAME.exec(line);
  if (!m) return 'it does not start with a metric name';
  let rest = line.slice(m[0].length);
  let labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    const l = readLabels(rest);
    if (typeof l === 'string') return l;
    labels = l.labels;
    rest = l.rest;
  }
  const parts = rest.trim().split(/\s+/);
  if (parts.length === 0 || parts[0] === '' || parts.length > 2) return 'it has no value, or more than a value and a timestamp';
  const value = valueOf(parts[0] as string);
  if (value === undefined) return `'${(parts[0] as string).slice(0, 40)}' is not a number`;
  if (parts.length === 2 && !/^-?\d+$/.test(parts[1] as string)) return `'${(parts[1] as string).slice(0, 40)}' is not a timestamp`;
  return { name: m[0], labels, value };
}

/** Reads a whole exposition text; lines that cannot be read are skipped and named. */
export function parsePromText(text: string): PromText {
  const samples: PromSample[] = [];
  const problems: string[] = [];
  let skipped = 0;
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = (lines[n] as string).trim();
    if (line === '' || line.startsWith('#')) continue;
    const r = readLine(line);
    if (typeof r !== 'string') samples.push(r);
    else if (++skipped <= MAX_PROBLEMS) problems.push(`line ${n + 1}: ${r}`);
  }
  if (skipped > MAX_PROBLEMS) problems.push(`${skipped - MAX_PROBLEMS} more lines skipped`);
  return { samples, problems };
}

/** The sum of the samples named `name` whose labels pass `where` (0 when there are none). */
export function sumOf(samples: readonly PromSample[], name: string, where: (labels: Readonly<Record<string, string>>) => boolean = () => true): number {
  let total = 0;
  for (const s of samples) if (s.name === name && Number.isFinite(s.value) && where(s.labels)) total += s.value;
  return total;
}

/** Whether any sample is named `name`. */
export function has(samples: readonly PromSample[], name: string): boolean {
  return samples.some((s) => s.name === name);
}
