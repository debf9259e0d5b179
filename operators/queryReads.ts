/**
 * One query's reads on a Storage Node (the `scan` operator's worker loop, docs/query.md "Storage
 * Node scan and result streams"): up to `queryThreads` workers take the query's batches in order,
 * each batch read a step at a time (operators/batchRead.ts), or, with merged partials, a group of
 * batches answered from their summaries or scanned whole when small, in one call
 * (operators/summaryGroup.ts). Frames of different batches interleave on the result stream; each
 * worker waits on the query's flow before every read, so the client's pace bounds what is in
 * flight. What a query emits and counts goes through here.
 */
import type { BatchID } from '../engine-rs/batchId';
import { applyFieldMask } from '../engine-rs/policy';
import { bbnReason } from '../query/batchNotice';
import { MAX_CHUNK_BYTES } from '../stream/chunk';
import { Flow } from '../stream/flow';
import type { QueryResultElement, QueryResults, RunningQuery } from '../stream/queryElement';
import { readBatch } from './batchRead';
import { MergedPartials } from './mergedPartials';
import { MergedRows } from './mergedRows';
import type { ReadQueue } from './readScheduler';
import type { ScanSpan } from './scanSpan';
import { readRowsGroup, readSummaryGroup, SUMMARY_GROUP_BATCHES, type GroupLeft } from './summaryGroup';
import type { QueryReadContext, QueryReadState } from './queryReadState';
import type { CompiledQuery } from './scanTypes';

/** The reads of one query: its batches, what it emitted and matched, its merged results. */
export class QueryReads implements QueryReadState {
  /** Elements handed to the sink (none: the query ends without a result stream). */
  emitted = 0;
  /** Records matched so far (against the query's `limit`). */
  matchedTotal = 0;
  readonly results: QueryResults;
  /** Merged partials (aggregate with merge_batches). */
  readonly merged: MergedPartials | undefined;
  /** Merged rows (records with merge_batches). */
  readonly rows: MergedRows | undefined;
  readonly queue: ReadQueue;
  private next = 0;
  /** Batches a summary group left to be read as usual, taken before the next ones. */
  private readonly returned: BatchID[] = [];
  /** Batches a group did not try (its scan budget was spent): the next group takes them first. */
  private readonly regroup: BatchID[] = [];
  /** Summary groups in flight: a worker with nothing to take waits for what they leave. */
  private groupsInFlight = 0;
  private wake: (() => void)[] = [];
  /** Whether groups are still tried: merged partials or merged rows over a filter, no verify_hash nor limit, and the last group answered some. */
  private grouping: boolean;
  /**
   * Batches the next group asks for: {@link SUMMARY_GROUP_BATCHES}, or, once a group's scan budget
   * left some untried, about as many as it tried. Small batches fill the budget after a few (the
   * demo's 200 KiB minutes: ten in a 2 MiB step), and a group asked for 64 would open and pass
   * back the rest each time: 64 lookups and footer opens to fold ten.
   */
  private groupSize = SUMMARY_GROUP_BATCHES;

  constructor(
    readonly q: RunningQuery,
    readonly compiled: CompiledQuery,
    readonly ctx: QueryReadContext,
    readonly traced: ScanSpan,
    private readonly emitTo: (el: QueryResultElement) => void,
  ) {
    const spec = q.spec;
    // Sent on the result stream only to a client that reads this build's result-stream extensions (merge_batches).
    const tc = spec.mergeBatches === true ? traced.traceContext() : undefined;
    this.results = { query: q, recordSize: compiled.recordSize, batches: spec.batchIds.length, flow: new Flow(), ...(tc && { traceContext: tc }) };
    this.queue = ctx.scheduler.join(spec.qos);
    this.merged = compiled.newAccumulator
      ? new MergedPartials(compiled.newAccumulator(), (json, completes) => {
          this.endMany(completes.length);
          this.emit({ kind: 'aggregate', dataset: spec.dataset, batchId: (completes[0] as { batchId: BatchID }).batchId, json, completes, results: this.results });
        })
      : undefined;
    // Merged rows (HDQuery merge_batches): small batches' matches are held and sent together, completed by one eobs.
    this.rows =
      spec.mergeBatches === true && !compiled.aggregate
        ? new MergedRows({ recordSize: compiled.recordSize, ...(compiled.selectTop && { selectTop: compiled.selectTop }) }, async (carrier, records, completes) => {
            if (carrier !== undefined && records !== undefined) await this.send(carrier, records);
            this.endMany(completes.length);
            this.emit({ kind: 'eobs', dataset: spec.dataset, completes, results: this.results });
          })
        : undefined;
    this.grouping = ((this.merged !== undefined && compiled.fromSummaries !== undefined) || (this.rows !== undefined && compiled.fromRows !== undefined)) && !spec.verifyHash && spec.limit === undefined;
  }

  /** Reads every batch, then sends what merged results still hold; always leaves the read queue. */
  async run(): Promise<void> {
    const spec = this.q.spec;
    try {
      const workers = Math.max(1, Math.min(this.ctx.queryThreads, spec.batchIds.length));
      await Promise.all(Array.from({ length: workers }, () => this.worker()));
      if (this.q.signal.aborted) {
        this.merged?.discard();
        this.rows?.discard();
      } else {
        this.merged?.flush();
        await this.rows?.flush();
      }
    } finally {
      this.merged?.discard();
      this.rows?.discard();
      this.queue.leave();
      // Nothing went to the sink: no stream was opened, so the query ends here.
      if (this.emitted === 0) this.q.end();
    }
  }

  /** Whether the query has what its `limit` asked for. */
  limitReached(): boolean {
    const limit = this.q.spec.limit;
    return limit !== undefined && this.matchedTotal >= limit;
  }

  /** Hands an element to the sink (counted: the query then ends with its stream). */
  emit(el: QueryResultElement): void {
    this.emitted++;
    this.emitTo(el);
  }

  /** A batch ended with `recordCount` records sent. */
  end(batchId: BatchID, recordCount: number): void {
    this.endMany(1);
    this.emit({ kind: 'eob', dataset: this.q.spec.dataset, batchId, recordCount, results: this.results });
  }

  /** `n` batches ended (their frame is emitted by the caller). */
  endMany(n: number): void {
    this.ctx.counters.controls += n;
    for (let i = 0; i < n; i++) {
      this.ctx.meter?.batch('eob');
      this.traced.batch('eob');
    }
  }

  /** A batch cannot be answered here: a bbn with `code`. */
  fail(batchId: BatchID, code: number, message: string): void {
    const { counters, meter, report } = this.ctx;
    counters.controls++;
    counters.errors++;
    meter?.batch(code);
    this.traced.batch('bbn');
    report(`query ${this.q.spec.queryId}: ${message}`);
    this.emit({ kind: 'bbn', dataset: this.q.spec.dataset, batchId, reason: bbnReason(code, message), code, results: this.results });
  }

  /** Sends a batch's matching records (the buffer is ours): masked, then as columns or records frames. */
  async send(batchId: BatchID, records: Buffer): Promise<void> {
    const { spec } = this.q;
    const { compiled, results } = this;
    const counters = this.ctx.counters;
    // Hidden fields are zeroed after filtering (filters see the stored values), one native call per step.
    if (spec.fieldMask !== undefined) applyFieldMask(records, spec.fieldMask);
    if (compiled.encodeColumns) {
      // Columnar results: decoded after the mask, so a hidden field's column holds zeros' presentation.
      for (const p of await compiled.encodeColumns(records)) {
        counters.sent += p.rows;
        this.emit({ kind: 'columns', dataset: spec.dataset, batchId, rows: p.rows, body: p.body, results });
      }
      return;
    }
    for (const c of chunksOf(records, compiled.recordSize)) {
      const count = c.length / compiled.recordSize;
      counters.sent += count;
      this.emit({ kind: 'records', dataset: spec.dataset, batchId, count, recordSize: compiled.recordSize, buf: c, results });
    }
  }

  /** One worker: takes the next batch (or group of batches) not yet started until none is left or the query stops. */
  private async worker(): Promise<void> {
    const ids = this.q.spec.batchIds;
    for (;;) {
      if (this.q.signal.aborted) return;
      if (this.grouping && this.returned.length === 0 && this.regroup.length + ids.length - this.next >= 2) {
        const group = this.regroup.splice(0, this.groupSize);
        const more = ids.slice(this.next, this.next + this.groupSize - group.length);
        this.next += more.length;
        for (const b of more) group.push(b);
        this.groupsInFlight++;
        let left: GroupLeft = { read: [], again: [] };
        try {
          left = await (this.merged ? readSummaryGroup : readRowsGroup)(this, group);
          // None folded: this query's batches are read one by one from here on.
          if (left.read.length + left.again.length === group.length) this.grouping = false;
          this.groupSize = nextGroupSize(this.groupSize, group.length, left.again.length);
        } finally {
          this.groupsInFlight--;
          for (const b of left.read) this.returned.push(b);
          // Before the batches of later groups (a group started meanwhile takes its own first).
          this.regroup.unshift(...left.again);
          for (const w of this.wake.splice(0)) w();
        }
        continue;
      }
      const batchId = this.returned.shift() ?? this.regroup.shift() ?? (this.next < ids.length ? ids[this.next++] : undefined);
      if (batchId === undefined) {
        if (this.groupsInFlight === 0) return;
        await new Promise<void>((resolve) => this.wake.push(resolve));
        continue;
      }
      if ((await readBatch(this, batchId)) === 'stop') return;
    }
  }
}

/**
 * The size of the next group after one of `asked` batches left `untried` past its scan budget:
 * what it tried and a little more (the next batches may be smaller), at least 2; doubling back
 * towards {@link SUMMARY_GROUP_BATCHES} while full groups try everything they are given.
 */
export function nextGroupSize(size: number, asked: number, untried: number): number {
  if (untried > 0) return Math.max(2, Math.min(SUMMARY_GROUP_BATCHES, asked - untried + GROUP_SIZE_MARGIN));
  // A group short of `size` (the query's last batches) says nothing of the budget.
  return asked < size ? size : Math.min(SUMMARY_GROUP_BATCHES, size * 2);
}

/** Batches a group asks for beyond what the previous one tried. */
const GROUP_SIZE_MARGIN = 2;

/** `buf` cut at whole records into pieces of at most {@link MAX_CHUNK_BYTES} (views, no copies). */
function chunksOf(buf: Buffer, recordSize: number): Buffer[] {
  if (buf.length <= MAX_CHUNK_BYTES) return [buf];
  const step = Math.max(recordSize, Math.floor(MAX_CHUNK_BYTES / recordSize) * recordSize);
  const out: Buffer[] = [];
  for (let at = 0; at < buf.length; at += step) out.push(buf.subarray(at, at + step));
  return out;
}
