/**
 * Open and long time ranges (docs/query.md, "Time ranges"): the batches a window reads are the
 * time-form batch ids the Storage Nodes hold in it, not every interval the window could hold.
 *
 * A window `[start, end]` (Unix seconds, inclusive) at a dataset's interval `iv` names exactly the
 * ids `generateBatchIdsTime(start, end, iv)` would name — `[t, t + iv)` for every multiple `t` of
 * `iv` from floor(start) to ceil(end) inclusive — that some node holds. So resolving a window gives
 * the same batches as enumerating it, minus the ones nobody ingested, at a cost in proportion to the
 * batches that exist.
 *
 * Nodes answer a window as runs of consecutive intervals (`[first start, count]`), so a dense
 * year of one-minute batches is a few numbers on the wire, and a sparse one a run per batch.
 */
import { BATCH_ID_LEN } from '../engine-rs/batchId';
import { QueryError } from './queryError';

/** Largest |seconds| a window bound may take: 2^53 − 1 (JSON-safe), far beyond any interval's reach of i64. */
export const MAX_TIME_SECONDS = Number.MAX_SAFE_INTEGER;

/** An inclusive window in Unix seconds. */
export interface TimeRange {
  readonly start: number;
  readonly end: number;
}

/** A run of `count` consecutive batches of one interval, the first covering `[start, start + interval)`. */
export type BatchRun = readonly [start: number, count: number];

/** One node's (or the union of several nodes') held batches in a window. */
export interface HeldRuns {
  readonly runs: BatchRun[];
  /** Batches in `runs`. */
  readonly batches: number;
  /** More batches were held than the asked limit: `runs` stops at the limit. */
  readonly truncated: boolean;
}

/**
 * Checks a window and an interval, naming the key at fault: integers, |value| ≤ 2^53 − 1, start ≤ end,
 * interval 1 .. 2^32 − 1 (docs/schema.md). Throws QueryError.
 */
export function checkTimeRange(start: unknown, end: unknown, interval: unknown, keys: { start: string; end: string } = { start: 'start', end: 'end' }): TimeRange & { interval: number } {
  const int = (v: unknown, key: string): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new QueryError(key, `must be Unix seconds (an integer of at most 2^53 - 1), got ${JSON.stringify(v)}`);
    return v;
  };
  const s = int(start, keys.start);
  const e = int(end, keys.end);
  if (e < s) throw new QueryError(keys.end, `${e} is before ${keys.start} ${s}`);
  if (typeof interval !== 'number' || !Number.isInteger(interval) || interval < 1 || interval > 0xffff_ffff) throw new QueryError('interval', `must be 1 .. 2^32 - 1 seconds, got ${JSON.stringify(interval)}`);
  return { start: s, end: e, interval };
}

const floorTo = (t: number, iv: number): number => Math.floor(t / iv) * iv;
const ceilTo = (t: number, iv: number): number => Math.ceil(t / iv) * iv;

/**
 * The start of the window of `id` when it is a time-form id of width `interval` (bytes 0..48 zero,
 * start a multiple of the interval, end = start + interval): the ids the enumeration makes.
 * Undefined for every other id (string or number form, another interval, a window out of range).
 */
export function timeFormStart(id: Uint8Array, interval: number): number | undefined {
  if (id.length !== BATCH_ID_LEN) return undefined;
  for (let i = 0; i < 48; i++) if (id[i] !== 0) return undefined;
  // Called for every held id of a node per window asked: plain numbers, no BigInt. A start beyond
  // ±(2^53 − 1) is refused, so both halves of each i64 fit a double exactly.
  const s = i64At(id, 48);
  const e = i64At(id, 56);
  if (s === undefined || e === undefined) return timeFormStartBig(id, interval);
  return s % interval === 0 && e - s === interval ? s : undefined;
}

/** {@link timeFormStart} of an id with a bound beyond ±(2^53 − 1), in BigInt. */
function timeFormStartBig(id: Uint8Array, interval: number): number | undefined {
  const dv = new DataView(id.buffer, id.byteOffset, id.byteLength);
  const s = dv.getBigInt64(48);
  const e = dv.getBigInt64(56);
  const iv = BigInt(interval);
  if (s % iv !== 0n || e - s !== iv) return undefined;
  if (s > BigInt(MAX_TIME_SECONDS) || s < -BigInt(MAX_TIME_SECONDS)) return undefined;
  return Number(s);
}

/** The big-endian i64 at `at` when |value| ≤ 2^53 − 1; undefined beyond. */
function i64At(b: Uint8Array, at: number): number | undefined {
  const hi = ((b[at] as number) << 24) | ((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number);
  const lo = (((b[at + 4] as number) << 24) | ((b[at + 5] as number) << 16) | ((b[at + 6] as number) << 8) | (b[at + 7] as number)) >>> 0;
  // hi is the signed upper half: the value is hi·2^32 + lo, safe while −2^21 ≤ hi < 2^21 (and not −2^53 itself).
  if (hi >= 0x20_0000 || hi < -0x20_0000) return undefined;
  const v = hi * 0x1_0000_0000 + lo;
  return v < -MAX_TIME_SECONDS ? undefined : v;
}

/** The time-form id `[start, start + interval)` as 128 lower-case hex digits (as `generateBatchIdTime` makes it). */
export function timeFormHex(start: number, interval: number): string {
  // Built as text (one per batch of a window, thousands per statement): 96 zero digits, then two
  // 16-digit two's-complement halves; BigInt only for a window outside ±2^53 (never a real one).
  const end = start + interval;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return timeFormHexBig(start, interval);
  return ZERO_PREFIX + i64Hex(start) + i64Hex(end);
}

const ZERO_PREFIX = '0'.repeat(96);

/** 16 hex digits of a safe integer as a big-endian two's-complement i64. */
function i64Hex(v: number): string {
  const hi = Math.floor(v / 0x1_0000_0000);
  const lo = v - hi * 0x1_0000_0000;
  return (hi >>> 0).toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

function timeFormHexBig(start: number, interval: number): string {
  const b = Buffer.alloc(BATCH_ID_LEN);
  b.writeBigInt64BE(BigInt(start), 48);
  b.writeBigInt64BE(BigInt(start) + BigInt(interval), 56);
  return b.toString('hex');
}

/** First and last window start the enumeration of `[start, end]` names (floor(start) .. ceil(end), inclusive). */
export function windowStarts(r: TimeRange, interval: number): { first: number; last: number } {
  return { first: floorTo(r.start, interval), last: ceilTo(r.end, interval) };
}

/**
 * The window to ask for when reading `[start, end]` of records batched by time (HD's own time
 * batches hold the records of `[t, t + interval)`): floored at both ends, so its enumeration names
 * exactly the intervals that can hold records of `[start, end]` — floor(start) .. floor(end) —
 * and not the one past the end that `generateBatchIdsTime` adds (the reference's enumeration
 * "typically extends one interval past it"). Reading that extra batch costs a scan (or, where no
 * node holds it, a second round to the other replica) and can add no record of the window.
 */
export function recordWindow(r: TimeRange, interval: number): TimeRange {
  return { start: floorTo(r.start, interval), end: floorTo(r.end, interval) };
}

/** Sorted, distinct window starts → runs of consecutive intervals. */
export function runsOf(starts: readonly number[], interval: number): BatchRun[] {
  const runs: [number, number][] = [];
  for (const s of starts) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] * interval === s) last[1]++;
    else if (!last || s > last[0] + (last[1] - 1) * interval) runs.push([s, 1]);
  }
  return runs;
}

/**
 * A node's answer: of the ids it holds (`held`, any forms), the time-form ids of `interval` the
 * enumeration of `r` names, as runs, at most `limit` batches (then `truncated`). One pass over the
 * held ids and a sort; a reader answering many windows keeps {@link sortedStarts} and calls
 * {@link heldRunsOf}.
 */
export function heldRuns(held: Iterable<Uint8Array>, r: TimeRange, interval: number, limit: number): HeldRuns {
  return heldRunsOf(sortedStarts(held, interval), r, interval, limit);
}

/** The distinct window starts of the time-form ids of `interval` among `held` (any forms), ascending: what {@link heldRunsOf} answers windows from. */
export function sortedStarts(held: Iterable<Uint8Array>, interval: number): number[] {
  const starts: number[] = [];
  for (const id of held) {
    const s = timeFormStart(id, interval);
    if (s !== undefined) starts.push(s);
  }
  starts.sort((a, b) => a - b);
  // Distinct ids have distinct starts (an id is its window): nothing to drop.
  return starts;
}

/** {@link heldRuns} from {@link sortedStarts}: a binary search and the window's batches, not a pass over every held id. */
export function heldRunsOf(starts: readonly number[], r: TimeRange, interval: number, limit: number): HeldRuns {
  const { first, last } = windowStarts(r, interval);
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((starts[mid] as number) < first) lo = mid + 1;
    else hi = mid;
  }
  const kept: number[] = [];
  let truncated = false;
  for (let i = lo; i < starts.length && (starts[i] as number) <= last; i++) {
    if (kept.length === limit) {
      truncated = true;
      break;
    }
    kept.push(starts[i] as number);
  }
  return { runs: runsOf(kept, interval), batches: kept.length, truncated };
}

/**
 * Checks a node's `runs` (JSON) against the window asked: pairs of integers, count ≥ 1, starts on the
 * interval and inside the window's enumeration, ascending without overlap. Undefined when malformed
 * (a node that answers so is not trusted at all).
 */
export function readRuns(v: unknown, r: TimeRange, interval: number): BatchRun[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const { first, last } = windowStarts(r, interval);
  const out: BatchRun[] = [];
  let next = -Infinity;
  for (const run of v) {
    if (!Array.isArray(run) || run.length !== 2) return undefined;
    const [s, n] = run as unknown[];
    if (typeof s !== 'number' || !Number.isSafeInteger(s) || typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) return undefined;
    if (s % interval !== 0 || s < first || s < next || s + (n - 1) * interval > last) return undefined;
    out.push([s, n]);
    next = s + n * interval;
  }
  return out;
}

/** The union of several nodes' runs (replicas hold the same batches; a lagging one fewer), as sorted distinct starts. */
export function unionStarts(answers: readonly (readonly BatchRun[])[], interval: number, limit: number): { starts: number[]; truncated: boolean } {
  const all = new Set<number>();
  for (const runs of answers) {
    for (const [s, n] of runs) {
      for (let i = 0; i < n; i++) {
        all.add(s + i * interval);
        if (all.size > limit) return { starts: [...all].sort((a, b) => a - b).slice(0, limit), truncated: true };
      }
    }
  }
  return { starts: [...all].sort((a, b) => a - b), truncated: false };
}

/** How many ids the enumeration of `r` names at `interval` (as a float: it may pass 2^53 for absurd windows). */
export function enumeratedCount(r: TimeRange, interval: number): number {
  const { first, last } = windowStarts(r, interval);
  return (last - first) / interval + 1;
}
