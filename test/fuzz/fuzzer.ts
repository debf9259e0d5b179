/**
 * A coverage-guided fuzzer for the TypeScript parsers of outside bytes, on V8's own block coverage
 * (node:inspector, Profiler.takePreciseCoverage with call counts): an input that reaches a block
 * of the project's code, or a new count bucket of one, joins the working corpus and is mutated
 * further. No native module: @jazzer.js/core 4 (the maintained one on npm) ships a prebuilt addon
 * that needs glibc 2.38 / GLIBCXX_3.4.32, and its older releases download binaries from outside
 * the package registries, so neither runs on this project's machines.
 *
 * A target throws only its parser's own typed errors; anything else is a finding.
 */
import { Session } from 'node:inspector';
import { mulberry32 } from '../../lib/mulberry32';

/** One fuzz target: a parser fed arbitrary bytes. */
export interface FuzzTarget {
  readonly name: string;
  /** Runs the parser; throws only `expected` errors (or nothing). */
  run(data: Buffer): void | Promise<void>;
  /** Whether an error is the parser's own refusal (a typed error), not a finding. */
  expected(err: unknown): boolean;
}

/** What a run found. */
export interface FuzzReport {
  readonly target: string;
  readonly execs: number;
  /** Inputs kept for new coverage (beyond the seeds). */
  readonly kept: number;
  /** Distinct coverage features (block × count bucket) seen. */
  readonly features: number;
  /** Unexpected errors: input (hex, cut) and error. */
  readonly findings: { input: string; error: string }[];
}

const INTERESTING = [0, 1, 0x7f, 0x80, 0xff, 0x22, 0x7b, 0x5b, 0x0a, 0x2c, 0x3a];

/** 1 to 4 byte-level edits of `seed` (bit flips, interesting bytes, runs inserted, cut or copied, splices). */
export function mutate(seed: Buffer, other: Buffer, rnd: () => number): Buffer {
  const below = (n: number): number => Math.floor(rnd() * n);
  let d = Buffer.from(seed);
  for (let k = 1 + below(4); k > 0; k--) {
    const op = below(9);
    if (d.length === 0 && op !== 4) {
      d = Buffer.from([below(256)]);
      continue;
    }
    const i = below(d.length);
    switch (op) {
      case 0:
      case 1:
        d[i] ^= 1 << below(8);
        break;
      case 2:
        d[i] = INTERESTING[below(INTERESTING.length)];
        break;
      case 3: {
        const n = 1 + below(Math.min(16, d.length - i));
        d = Buffer.concat([d.subarray(0, i), d.subarray(i + n)]);
        break;
      }
      case 4: {
        const at = below(d.length + 1);
        d = Buffer.concat([d.subarray(0, at), Buffer.alloc(1 + below(8), INTERESTING[below(INTERESTING.length)]), d.subarray(at)]);
        break;
      }
      case 5: {
        const n = 1 + below(Math.min(32, d.length - i));
        const at = below(d.length + 1);
        d = Buffer.concat([d.subarray(0, at), Buffer.from(d.subarray(i, i + n)), d.subarray(at)]);
        break;
      }
      case 6:
        if (other.length > 0) d = Buffer.concat([d.subarray(0, below(d.length + 1)), other.subarray(below(other.length))]);
        break;
      case 7: {
        // A 32-bit integer (big-endian, as the wire formats use) set to an edge value.
        if (d.length >= i + 4) d.writeUInt32BE([0, 1, 0x7fffffff, 0x80000000, 0xffffffff, d.length, below(65536)][below(7)] >>> 0, i);
        break;
      }
      default:
        d[i] = below(256);
    }
  }
  return d.length > 1 << 16 ? d.subarray(0, 1 << 16) : d;
}

/** V8 block coverage of the project's own code, as feature keys. */
class Coverage {
  private readonly session = new Session();
  private readonly seen = new Set<string>();

  constructor() {
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  }

  private post(method: string, params?: object): unknown {
    let out: unknown;
    let error: Error | null = null;
    // In-process sessions answer synchronously.
    this.session.post(method, params, (err, r) => {
      error = err;
      out = r;
    });
    if (error) throw error;
    return out;
  }

  /** Resets the counters (what ran so far is not the next input's). */
  reset(): void {
    this.post('Profiler.takePreciseCoverage');
  }

  /** Feature keys of what ran since the last call that were never seen before: how many. */
  fresh(): number {
    const r = this.post('Profiler.takePreciseCoverage') as { result: { url: string; functions: { ranges: { startOffset: number; endOffset: number; count: number }[] }[] }[] };
    let n = 0;
    for (const s of r.result) {
      if (!s.url.includes('/work') && !s.url.startsWith('file:')) continue;
      if (s.url.includes('node_modules')) continue;
      for (const f of s.functions) {
        for (const range of f.ranges) {
          if (range.count === 0) continue;
          const bucket = range.count < 4 ? range.count : 31 - Math.clz32(range.count);
          const key = `${s.url}:${range.startOffset}:${range.endOffset}:${bucket}`;
          if (!this.seen.has(key)) {
            this.seen.add(key);
            n++;
          }
        }
      }
    }
    return n;
  }

  get features(): number {
    return this.seen.size;
  }

  close(): void {
    this.post('Profiler.stopPreciseCoverage');
    this.session.disconnect();
  }
}

/** Runs `t` once on `data`; the error when it is a finding. */
async function once(t: FuzzTarget, data: Buffer): Promise<string | undefined> {
  try {
    await t.run(data);
    return undefined;
  } catch (err) {
    if (t.expected(err)) return undefined;
    return err instanceof Error ? `${err.name}: ${err.message}\n${err.stack?.split('\n').slice(1, 4).join('\n')}` : String(err);
  }
}

/**
 * Fuzzes `t` for `seconds`, starting from `seeds`: each seed once, then mutations of the working
 * corpus, coverage-guided unless `guided` is false (then plain mutation of the seeds, cheaper per
 * input). `seed` makes the run replayable.
 */
export async function fuzz(t: FuzzTarget, seeds: readonly Buffer[], opts: { seconds: number; seed?: number; guided?: boolean; onKept?: (input: Buffer) => void }): Promise<FuzzReport> {
  const rnd = mulberry32(opts.seed ?? 1);
  const corpus = seeds.length > 0 ? [...seeds] : [Buffer.alloc(0)];
  const findings: { input: string; error: string }[] = [];
  const seenErrors = new Set<string>();
  const cov = opts.guided === false ? undefined : new Coverage();
  let execs = 0;
  let kept = 0;
  const deadline = Date.now() + opts.seconds * 1000;
  const record = (input: Buffer, error: string): void => {
    const key = error.split('\n')[0].replace(/\d+/g, 'N');
    if (seenErrors.has(key)) return;
    seenErrors.add(key);
    findings.push({ input: input.toString('hex').slice(0, 2000), error });
  };
  try {
    for (const s of seeds) {
      cov?.reset();
      const e = await once(t, s);
      cov?.fresh();
      execs++;
      if (e) record(s, e);
    }
    while (Date.now() < deadline) {
      const base = corpus[Math.floor(rnd() * corpus.length)];
      const other = corpus[Math.floor(rnd() * corpus.length)];
      const input = mutate(base, other, rnd);
      cov?.reset();
      const e = await once(t, input);
      execs++;
      if (e) record(input, e);
      if (cov && cov.fresh() > 0 && corpus.length < 4096) {
        corpus.push(input);
        kept++;
        opts.onKept?.(input);
      }
    }
  } finally {
    cov?.close();
  }
  return { target: t.name, execs, kept, features: cov?.features ?? 0, findings };
}
