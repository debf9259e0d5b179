import type { OperatorFunction } from 'rxjs';
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';
import { HashChain, type HashAlgorithmName } from '../engine-rs/hashChain';
import { awaitEachOf } from '../stream/awaitEach';
import { batchKey, isBatched, type AckHook, type BatchedRecordChunk, type BbnElement, type Chunk, type ControlElement, type EobElement } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';

/** Live figures of the hash queue (for /health, /metrics and tests). */
export interface HashQueueStats {
  /** Bytes handed to the hasher and not yet hashed. */
  queuedBytes: number;
  /** Highest `queuedBytes` seen. */
  highWater: number;
  /** Times a records chunk had to wait for room in the queue. */
  waits: number;
  /** Batches with a chain open now. */
  openChains: number;
}

/** Options of {@link hashChain}. */
export interface HashChainOperatorOptions {
  /** HASH_ALGORITHM; default sha512. */
  readonly algorithm?: HashAlgorithmName;
  /** RECORD_SIZE: the chain splits records here; every records chunk must have this record size (unless `recordSizes` says otherwise for its dataset). */
  readonly recordSize: number;
  /**
   * Per-dataset record sizes (docs/scc.md, "Record sizes"): a batch's records must have its
   * dataset's size; absent: every dataset has `recordSize`.
   */
  readonly recordSizes?: {
    /** The size `dataset` must have given records of `seen` bytes arrived (may read its source again). */
    expect(dataset: string, seen: number): Promise<number>;
    /** The size of `dataset` as known now. */
    sizeOf(dataset: string): number;
    /** Where that size comes from, for the refusal. */
    describe(dataset: string): string;
  };
  /** HASH_CHAIN_BLOCK_SIZE; default 64. */
  readonly blockSize?: number;
  /**
   * MAX_HASH_QUEUE_BYTES: bytes queued for hashing at most. A chunk that does not fit waits (and
   * with it the source's credit) until earlier chunks are hashed; a chunk larger than the cap is
   * admitted alone into an empty queue, so the bound is max(cap, one chunk).
   */
  readonly maxQueueBytes: number;
  /** The pipeline's pending-work accounting: a waiting chunk holds a unit, so sources stop pulling. */
  readonly flow?: Flow;
  /** Counts records (received = sent; control elements in `controls`). */
  readonly counters?: StageCounters;
  /** Told about every batch refused at its eob. */
  readonly onProblem?: (message: string) => void;
  /** Filled with the queue's figures as they change. */
  readonly stats?: HashQueueStats;
}

interface Batch {
  readonly chain: HashChain;
  /** The record size its chain splits at. */
  readonly recordSize: number;
  readonly batchId: BatchID;
  /** Updates not yet settled. */
  readonly pending: Set<Promise<void>>;
  /** Why the batch cannot close (a bad record size, a failed update); its eob is refused. */
  failure?: { code: number; message: string };
}

/**
 * The SCC's background hash chain (docs/scc.md, "Hash queue"): one {@link HashChain} per open batch,
 * fed every records chunk natively off the event loop while the chunk itself passes on unchanged at
 * once (replication does not wait for hashing). On the batch's eob the operator waits for that
 * batch's updates, finishes the chain and passes the eob on with `closingHash` set, so the Storage
 * Nodes can check their own chain. On a bbn the chain is dropped.
 *
 * An eob is turned into a bbn (the replicas discard the batch) and its sender's `ack` answered with
 * an error when: the eob's record count differs from the records hashed, the batch ended in a
 * partial record, the sender's batch digest or own closing hash differs from ours (all error 14,
 * batch mismatch), or records had the wrong size (error 2).
 *
 * @example
 * frames$.pipe(hashChain({ recordSize: 150, maxQueueBytes: 64 << 20, flow }))
 */
export function hashChain(opts: HashChainOperatorOptions): OperatorFunction<Chunk, BatchedRecordChunk | ControlElement> {
  const cap = opts.maxQueueBytes;
  if (!Number.isSafeInteger(cap) || cap <= 0) throw new RangeError(`maxQueueBytes must be a positive integer, got ${cap}`);
  // Every chain also digests its bytes, so an eob carrying the sender's batch digest can be checked.
  const chainOpts = { algorithm: opts.algorithm ?? 'sha512', recordSize: opts.recordSize, blockSize: opts.blockSize ?? 64, withDigest: true };
  const sizes = opts.recordSizes;
  const newBatch = (batchId: BatchID, recordSize: number): Batch => ({ chain: new HashChain(batchId, { ...chainOpts, recordSize }), recordSize, batchId, pending: new Set() });
  // Fail on bad settings now rather than on the first batch.
  new HashChain(new Uint8Array(64), chainOpts).finish();

  // Everything below `init` is per subscription: a second subscription has its own chains and queue.
  return awaitEachOf<Chunk, BatchedRecordChunk | ControlElement>(() => {
    const counters = opts.counters ?? new StageCounters('records');
    const stats: HashQueueStats = opts.stats ?? { queuedBytes: 0, highWater: 0, waits: 0, openChains: 0 };
    const batches = new Map<string, Batch>();
    let waiters: (() => void)[] = [];

    const settled = (bytes: number): void => {
      stats.queuedBytes -= bytes;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    };
    const room = async (bytes: number): Promise<void> => {
      if (stats.queuedBytes === 0 || stats.queuedBytes + bytes <= cap) return;
      stats.waits++;
      while (stats.queuedBytes > 0 && stats.queuedBytes + bytes > cap) await new Promise<void>((r) => waiters.push(r));
    };
    const batchOf = (dataset: string, batchId: BatchID, recordSize: number): Batch => {
      const key = batchKey(dataset, batchId);
      let b = batches.get(key);
      if (!b) {
        b = newBatch(batchId, recordSize);
        batches.set(key, b);
        stats.openChains = batches.size;
      }
      return b;
    };
    const drop = (dataset: string, batchId: BatchID): Batch | undefined => {
      const key = batchKey(dataset, batchId);
      const b = batches.get(key);
      batches.delete(key);
      stats.openChains = batches.size;
      return b;
    };
    /** The replicas discard the batch; the sender of the eob hears why once they have. */
    const refuse = (eob: EobElement, code: number, message: string): BbnElement => {
      counters.errors++;
      opts.onProblem?.(`batch ${eob.batchId.toString()} of '${eob.dataset}' refused: ${message}`);
      const senderAck = eob.ack;
      const ack: AckHook | undefined = senderAck ? () => senderAck({ ok: false, code, message }) : undefined;
      return { kind: 'bbn', dataset: eob.dataset, batchId: eob.batchId, reason: `refused by the SCC: ${message}`, cause: 'refused', ...(ack ? { ack } : {}) };
    };

    const step = async (el: Chunk): Promise<readonly (BatchedRecordChunk | ControlElement)[]> => {
      switch (el.kind) {
        case 'records': {
          if (!isBatched(el)) throw new TypeError('hashChain takes batched records; got records without a batch id');
          counters.received += el.count;
          const open = batches.get(batchKey(el.dataset, el.batchId));
          // The batch's record size is its dataset's, settled on its first records (a dataset not
          // known yet makes the DMS be read again).
          const expected = open ? open.recordSize : sizes ? await sizes.expect(el.dataset, el.recordSize) : opts.recordSize;
          const b = open ?? batchOf(el.dataset, el.batchId, expected);
          if (el.recordSize !== b.recordSize) {
            const why = sizes ? `dataset '${el.dataset}' takes ${b.recordSize}-byte records (${sizes.describe(el.dataset)})` : `this SCC hashes RECORD_SIZE=${opts.recordSize}`;
            b.failure ??= { code: HDWP_ERROR_FRAME_CODES.unsupported, message: `records of ${el.recordSize} bytes; ${why}` };
          } else if (!b.failure) {
            const bytes = el.buf.length;
            await room(bytes);
            stats.queuedBytes += bytes;
            stats.highWater = Math.max(stats.highWater, stats.queuedBytes);
            const p: Promise<void> = b.chain.update(el.buf).then(
              () => {
                b.pending.delete(p);
                settled(bytes);
              },
              (err: unknown) => {
                b.pending.delete(p);
                settled(bytes);
                b.failure ??= { code: HDWP_ERROR_FRAME_CODES.internal, message: `hashing failed: ${(err as Error).message}` };
              },
            );
            b.pending.add(p);
          }
          counters.sent += el.count;
          return [el];
        }
        case 'eob': {
          const b = drop(el.dataset, el.batchId) ?? newBatch(el.batchId, sizes ? sizes.sizeOf(el.dataset) : opts.recordSize);
          await Promise.all([...b.pending]);
          counters.controls++;
          if (b.failure) return [refuse(el, b.failure.code, b.failure.message)];
          const r = b.chain.finish();
          // What arrived is not what the sender's eob describes: records lost or added on the way
          // (a batch spanning an SCC restart). Error 14 names it; the sender re-sends the batch.
          const mismatch = HDWP_ERROR_FRAME_CODES.batchMismatch;
          if (r.tailBytes !== 0) return [refuse(el, mismatch, `batch mismatch: the batch ends inside a record (${r.tailBytes} of ${b.recordSize} bytes)`)];
          if (r.records !== el.recordCount) return [refuse(el, mismatch, `batch mismatch: its eob counts ${el.recordCount} records, ${r.records} arrived`)];
          if (el.digest && el.digest.length > 0 && !(r.digest && r.digest.equals(el.digest))) {
            return [refuse(el, mismatch, `batch mismatch: the sender's batch digest differs from the digest of the ${r.records} records that arrived`)];
          }
          if (el.closingHash && el.closingHash.length > 0 && !r.closingHash.equals(el.closingHash)) {
            return [refuse(el, mismatch, `batch mismatch: the sender's closing hash differs from the SCC's ${opts.algorithm ?? 'sha512'} chain`)];
          }
          return [{ ...el, closingHash: r.closingHash }];
        }
        case 'bbn': {
          // Updates in flight finish on their own and release their queue bytes; the chain is dropped.
          drop(el.dataset, el.batchId);
          counters.controls++;
          return [el];
        }
        default:
          throw new TypeError(`hashChain takes batched records, got a '${el.kind}' element`);
      }
    };
    return { step };
  }, opts.flow ?? new Flow());
}
