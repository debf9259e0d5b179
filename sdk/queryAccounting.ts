/**
 * Batch accounting of one query on the client: which batches were expected, which arrived, which
 * failed, and how that compares with the Proxy's filter verdict.
 */
import { isNotHeld } from '../query/batchNotice';
import type { BatchError } from '../query/hdQuery';

/** The Proxy's verdict: batches its per-batch filters say cannot match. */
export interface FilterVerdict {
  readonly wouldExcludeBatches: readonly string[];
  readonly bloomrfMode: string;
}

/** A batch the verdict excluded that still delivered records. */
export interface VerdictMismatch {
  readonly batchId: string;
  readonly records: number;
}

/** Accounting of the current query; reset by `reset` (prepareQuery, or the start of the next query). */
export class QueryAccounting {
  private expected: Set<string> | undefined;
  /** Expected batches not yet settled (arrived, failed or absent): completeness is its size, not a scan per event. */
  private readonly pending = new Set<string>();
  private readonly found = new Map<string, number>();
  private readonly errors = new Map<string, BatchError>();
  /** Batches no replica stores (an interval nobody ingested): absent, not failed. */
  private readonly absent = new Set<string>();
  private verdict: FilterVerdict | undefined;
  private onChange: (() => void) | undefined;

  /** Clears everything, the verdict included. */
  reset(): void {
    this.expected = undefined;
    this.pending.clear();
    this.found.clear();
    this.errors.clear();
    this.absent.clear();
    this.verdict = undefined;
  }

  /** Called whenever a batch completes, fails or the expectation changes (the waiter checks completeness). */
  watch(fn: (() => void) | undefined): void {
    this.onChange = fn;
  }

  /** The batches the query is waiting for (hex ids). Without it, the query payload's list is used. */
  expect(batchIds: Iterable<string>): void {
    this.expected = new Set([...batchIds].map((b) => b.toLowerCase()));
    this.pending.clear();
    for (const b of this.expected) if (!this.found.has(b) && !this.errors.has(b) && !this.absent.has(b)) this.pending.add(b);
    this.onChange?.();
  }

  /** Whether an expectation was set. */
  get hasExpectation(): boolean {
    return this.expected !== undefined;
  }

  /** Records one arrived batch (a later failure notice for it no longer counts). */
  batchArrived(batchId: string, records: number): void {
    this.found.set(batchId, records);
    this.pending.delete(batchId);
    this.errors.delete(batchId);
    this.absent.delete(batchId);
    this.onChange?.();
  }

  /**
   * Records one failed batch; one entry per batch, the first notice wins. A notice that only says
   * the batch is not stored marks it absent instead (missing, not an error).
   */
  batchFailed(e: BatchError): void {
    if (this.found.has(e.batchId) || this.errors.has(e.batchId)) return this.onChange?.();
    this.pending.delete(e.batchId);
    if (isNotHeld(e)) this.absent.add(e.batchId);
    else {
      this.absent.delete(e.batchId);
      this.errors.set(e.batchId, e);
    }
    this.onChange?.();
  }

  /** Every expected batch arrived or failed. */
  get complete(): boolean {
    return this.expected !== undefined && this.pending.size === 0;
  }

  /** Batches that arrived, in arrival order. */
  foundBatchIds(): string[] {
    return [...this.found.keys()];
  }

  /** Expected batches that did not arrive (failed or never answered). */
  missingBatchIds(): string[] {
    return [...(this.expected ?? [])].filter((b) => !this.found.has(b));
  }

  /** One entry per failed batch. */
  batchErrors(): BatchError[] {
    return [...this.errors.values()];
  }

  /** Records the Proxy's verdict. */
  setVerdict(v: FilterVerdict): void {
    this.verdict = { wouldExcludeBatches: v.wouldExcludeBatches.map((b) => b.toLowerCase()), bloomrfMode: v.bloomrfMode };
  }

  /** The verdict, if one was given. */
  get filterVerdict(): FilterVerdict | undefined {
    return this.verdict;
  }

  /** Batches the verdict excluded that delivered records anyway (a filter/verdict disagreement). */
  verdictMismatches(): VerdictMismatch[] {
    if (!this.verdict) return [];
    return this.verdict.wouldExcludeBatches.filter((b) => (this.found.get(b) ?? 0) > 0).map((b) => ({ batchId: b, records: this.found.get(b) ?? 0 }));
  }
}

/**
 * Parses the Proxy's result event JSON for its verdict: `{ would_exclude_batches: [...], bloomrf_mode }`
 * (docs/proxy.md). Returns undefined when the text is not such an object.
 */
export function verdictFromJson(json: string): FilterVerdict | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const o = doc as Record<string, unknown>;
  const v = (typeof o.verdict === 'object' && o.verdict !== null ? o.verdict : o) as Record<string, unknown>;
  const ids = v.would_exclude_batches;
  if (!Array.isArray(ids) || !ids.every((b) => typeof b === 'string' && /^[0-9a-fA-F]{128}$/.test(b))) return undefined;
  const mode = typeof v.bloomrf_mode === 'string' ? v.bloomrf_mode : 'none';
  return { wouldExcludeBatches: ids as string[], bloomrfMode: mode };
}
