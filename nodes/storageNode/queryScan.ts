/**
 * How the `scan` operator reaches a Storage Node's data (docs/storage-node.md, "Queries"): filters
 * compiled against the dataset's schema, each batch found in the node's index (through the OCF read
 * cache when enabled) and read a block step at a time.
 */
import type { BatchID } from '../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES as CODES } from '../../engine-rs/hdwpFrame';
import { AggregateAccumulator, AggregatePlan, TopPlan, QueryError as KernelQueryError, ScanFilter, SegmentReader, SegmentScanner, verifySegment, type Schema } from '../../engine-rs/index';
import type { QuerySpec } from '../../stream/queryElement';
import type { BatchScan, BatchScanStep, BatchUnreadable, CompiledQuery, RowsAnswers, ScanSource, SummaryAnswers } from '../../operators/scan';
import { scanRowsGroup } from '../../engine-rs/scanRowsGroup';
import type { PartialAccumulator } from '../../operators/mergedPartials';
import { QueryError } from '../../query/queryError';
import { NOT_HELD } from '../../query/batchNotice';
import type { StorageNode } from './node';
import type { QuerySchemas } from './querySchemas';
import { columnarEncoder } from './columnarResults';
import { CompiledPlans } from './compiledPlans';

/** Default record bytes one read step covers: large enough that the native call is cheap beside the scan, small enough that a cancel lands within about a millisecond. */
export const DEFAULT_STEP_BYTES = 2 * 1024 * 1024;

/**
 * Default record bytes of a batch scanned within a group (merged partials): a one-minute batch of
 * the demo's chess positions or flows is far below it, and a batch above it costs enough kernel
 * work that its own open, steps and close are cheap beside it.
 */
export const DEFAULT_GROUP_BATCH_BYTES = 256 * 1024;

/** Options of {@link nodeScanSource}. */
export interface NodeScanSourceOptions {
  readonly node: StorageNode;
  readonly schemas: QuerySchemas;
  /** Records per segment block (HASH_CHAIN_BLOCK_SIZE), to size read steps. */
  readonly blockSize: number;
  /** Record bytes per read step (default {@link DEFAULT_STEP_BYTES}; at most 16 MiB, the kernel's step cap). */
  readonly stepBytes?: number;
  /** Record bytes of a batch small enough to be scanned within a group of batches in one native call (default {@link DEFAULT_GROUP_BATCH_BYTES}; 0: groups only answer from summaries). */
  readonly groupBatchBytes?: number;
  /** Where compiled filters, aggregates, tops and column encoders are kept per query shape (default: one cache of this source's own). */
  readonly plans?: CompiledPlans;
}

/**
 * The scan source of a running Storage Node. With the dataset's schema, filters compile to the
 * engine-rs kernel (`ScanFilter`) and batches are read by `SegmentScanner` (zone maps skip blocks,
 * verify_hash hashes every block as it is read). Without one, only queries without filters run,
 * reading whole blocks (every record matches; verify_hash recomputes the chain at the end).
 */
export function nodeScanSource(opts: NodeScanSourceOptions): ScanSource {
  const node = opts.node;
  const name = node.config.nodeName;
  const stepBytes = opts.stepBytes ?? DEFAULT_STEP_BYTES;
  const groupBatchBytes = Math.min(opts.groupBatchBytes ?? DEFAULT_GROUP_BATCH_BYTES, stepBytes);
  // A repeated statement (new query id, same shape) compiles nothing again.
  const plans = opts.plans ?? new CompiledPlans();
  const maskKey = (mask: Buffer | undefined): string => (mask === undefined ? '' : mask.toString('hex'));
  return {
    async compile(spec: QuerySpec, helloRecordSize: number): Promise<CompiledQuery> {
      // The index is complete only once recovery ran.
      await node.started;
      // A dataset not known makes the schema directory and the DMS be read again.
      const schema = await opts.schemas.find(spec.dataset);
      if (!schema && spec.branches > 0) {
        throw new QueryError('dataset', `node '${name}' has no schema of dataset '${spec.dataset}' to compile the filters against (the scan stage's schema_dir, or the DMS when registered)`);
      }
      const filter = schema ? plans.get(schema, `filter\0${spec.subQueriesJson}`, () => compileFilter(schema, spec.subQueriesJson)) : undefined;
      if (spec.columnar && !schema) {
        throw new QueryError('result_format', `node '${name}' has no schema of dataset '${spec.dataset}' to decode columns with (the scan stage's schema_dir, or the DMS when registered); ask for records`);
      }
      const fields = spec.columnar?.fields;
      const encodeColumns = spec.columnar && schema ? plans.get(schema, `columns\0${fields === undefined ? '*' : JSON.stringify(fields)}`, () => columnarEncoder(schema, fields)) : undefined;
      if (spec.aggregateJson !== undefined && !schema) {
        throw new QueryError('aggregate', `node '${name}' has no schema of dataset '${spec.dataset}' to compute aggregates with (the scan stage's schema_dir, or the DMS when registered)`);
      }
      const aggregateJson = spec.aggregateJson;
      const aggregate = aggregateJson !== undefined && schema ? plans.get(schema, `aggregate\0${aggregateJson}\0${maskKey(spec.fieldMask)}`, () => compileAggregate(schema, aggregateJson, spec.fieldMask)) : undefined;
      if (spec.top !== undefined && !schema) {
        throw new QueryError('top', `node '${name}' has no schema of dataset '${spec.dataset}' to order records with (the scan stage's schema_dir, or the DMS when registered)`);
      }
      const topSpec = spec.top;
      const top = topSpec !== undefined && schema ? plans.get(schema, `top\0${JSON.stringify(topSpec)}\0${maskKey(spec.fieldMask)}`, () => kernelCompiled(() => TopPlan.compile(schema, topSpec, spec.fieldMask))) : undefined;
      const recordSize = schema?.recordSize ?? helloRecordSize;
      const stepBlocks = Math.max(1, Math.floor(stepBytes / (recordSize * opts.blockSize)));
      const unreadable = (batchId: BatchID, why: string): BatchUnreadable => ({ code: CODES.batchUnreadable, message: `batch ${batchId.toHex()} of '${spec.dataset}' ${why}` });
      // Merged partials (`aggregate.merge_batches`): batches fold into one accumulator natively.
      const fold = aggregate !== undefined && spec.mergeBatches === true;
      /**
       * The batches of `batchIds` their summaries answer, and the small ones scanned whole with the
       * same filter and aggregate as `open` uses, folded in one native call off the event loop; one
       * not held here, too large, or not read cleanly, is left to `open` (which says why it cannot
       * be read).
       */
      // A group scans about one read step's bytes: a cancel or a fairer query waits as little as for a step.
      const budget = { batchBytes: groupBatchBytes, groupBytes: stepBytes };
      const fromSummaries = async (batchIds: readonly BatchID[], f: ScanFilter, plan: AggregatePlan): Promise<SummaryAnswers> => {
        const { paths, at } = await groupPaths(node, spec.dataset, batchIds);
        const g = await AggregateAccumulator.fromSummaries(paths, f, plan, budget);
        const partial = { foldInto: (acc: PartialAccumulator) => (acc as AggregateAccumulator).absorb(g.acc) };
        return { ...perBatch(g, at, batchIds.length), partial };
      };
      /** The rows of a group of small batches, scanned whole in one native call (merged rows). */
      const fromRows = async (batchIds: readonly BatchID[], f: ScanFilter): Promise<RowsAnswers> => {
        const { paths, at } = await groupPaths(node, spec.dataset, batchIds);
        const g = await scanRowsGroup(paths, f, budget, top);
        return { ...perBatch(g, at, batchIds.length), kept: spread(g.kept, at, batchIds.length), rows: g.rows };
      };
      return {
        recordSize,
        ...(encodeColumns && { encodeColumns }),
        ...(aggregate && { aggregate: true }),
        ...(fold && { newAccumulator: () => AggregateAccumulator.create(aggregate) }),
        ...(top && { selectTop: (records: Buffer) => top.select(records) }),
        ...(aggregate && fold && filter && !filter.matchesNone && { fromSummaries: (batchIds: readonly BatchID[]) => fromSummaries(batchIds, filter, aggregate) }),
        ...(!aggregate && spec.mergeBatches === true && filter && !filter.matchesNone && groupBatchBytes > 0 && { fromRows: (batchIds: readonly BatchID[]) => fromRows(batchIds, filter) }),
        async open(batchId: BatchID, verifyHash: boolean): Promise<BatchScan | BatchUnreadable> {
          const at = await node.readLocation(spec.dataset, batchId);
          if (!at) return unreadable(batchId, `${NOT_HELD} '${name}'`);
          try {
            if (filter) {
              if (filter.matchesNone && !verifyHash) return NOTHING_MATCHES;
              // A footer read before comes from the cache on this thread; else it is read off the event loop.
              const scanner = SegmentScanner.openCached(at.path, filter, { verifyHash }) ?? (await SegmentScanner.open(at.path, filter, { verifyHash }));
              if (aggregate && fold) {
                // Answered by the batch's summary: no step runs; the fold takes the summary's groups.
                return scanner.setAggregateFold(aggregate) ? summaryScan(scanner) : new KernelScan(scanner, stepBlocks, verifyHash, true);
              }
              const partial = aggregate ? scanner.setAggregate(aggregate) : undefined;
              // Answered by the batch's summary: one finishing step, without a native call.
              if (partial !== undefined) return summaryScan(scanner, partial);
              return new KernelScan(scanner, stepBlocks, verifyHash);
            }
            const reader = await SegmentReader.open(at.path);
            if (reader.recordSize !== recordSize) return unreadable(batchId, `holds ${reader.recordSize}-byte records on node '${name}', the query's dataset has ${recordSize}`);
            return new BlockScan(reader, at.path, stepBlocks, verifyHash);
          } catch (err) {
            return unreadable(batchId, `is unreadable on node '${name}': ${(err as Error).message}`);
          }
        },
      };
    },
  };
}

/** The per-batch numbers of a group's answer. */
const SUMMARY_COLUMNS = ['records', 'blocks', 'matched', 'scanned', 'skipped'] as const;

type GroupColumns = { readonly [K in (typeof SUMMARY_COLUMNS)[number]]: Float64Array };

/** The segments of the batches of a group held here, and where each sits in the group. */
async function groupPaths(node: StorageNode, dataset: string, batchIds: readonly BatchID[]): Promise<{ paths: string[]; at: number[] }> {
  const locations = await node.readLocations(dataset, batchIds);
  const paths: string[] = [];
  const at: number[] = [];
  for (let i = 0; i < locations.length; i++) {
    const loc = locations[i];
    if (loc === undefined) continue;
    paths.push(loc.path);
    at.push(i);
  }
  return { paths, at };
}

/** A native group answer (per path) as per batch of the group: -1 (read as usual) for a batch not held here. */
function perBatch(g: GroupColumns, at: readonly number[], n: number): GroupColumns {
  // Every batch held here (the usual case): the native answers are already per batch.
  if (at.length === n) return { records: g.records, blocks: g.blocks, matched: g.matched, scanned: g.scanned, skipped: g.skipped };
  const out = { records: g.records, blocks: g.blocks, matched: g.matched, scanned: g.scanned, skipped: g.skipped };
  for (const k of SUMMARY_COLUMNS) out[k] = spread(g[k], at, n);
  return out;
}

/** Per-path numbers as per batch of a group of `n` (-1 where no path was asked). */
function spread(from: Float64Array, at: readonly number[], n: number): Float64Array {
  if (at.length === n) return from;
  const to = new Float64Array(n).fill(-1);
  for (let j = 0; j < at.length; j++) to[at[j] as number] = from[j] as number;
  return to;
}

/** What the kernel compiles; its refusal is a bad query naming the path. */
function kernelCompiled<T>(compile: () => T): T {
  try {
    return compile();
  } catch (err) {
    if (err instanceof KernelQueryError) throw new QueryError(err.path, err.reason);
    throw err;
  }
}

/** The query's `aggregate` compiled against the schema and its field mask. */
function compileAggregate(schema: Schema, json: string, fieldMask: Buffer | undefined): AggregatePlan {
  return kernelCompiled(() => AggregatePlan.compile(schema, json, fieldMask));
}

/** The kernel's compiled filter. */
function compileFilter(schema: Schema, subQueriesJson: string): ScanFilter {
  return kernelCompiled(() => ScanFilter.compile(schema, subQueriesJson));
}

/** A batch the filter cannot match: nothing to read. */
const NOTHING_MATCHES: BatchScan = {
  next: () => Promise.resolve({ records: Buffer.alloc(0), matched: 0, scanned: 0, blocksRead: 0, blocksSkipped: 0, done: true }),
  close: () => undefined,
};

/**
 * A batch whose aggregate its summary answered: every record matched, no block was read. With
 * `partial` the finishing step carries it; without, the batch folds into the query's accumulator.
 */
function summaryScan(scanner: SegmentScanner, partial?: string): BatchScan {
  return {
    next: () => Promise.resolve({ records: Buffer.alloc(0), matched: scanner.records, scanned: 0, blocksRead: 0, blocksSkipped: scanner.blocks, done: true, ...(partial === undefined ? {} : { partial }) }),
    ...(partial === undefined && { foldInto: (acc: PartialAccumulator) => scanner.foldInto(acc as AggregateAccumulator) }),
    close: () => scanner.close(),
  };
}

/** A batch read by the engine-rs kernel, `stepBlocks` blocks a step. */
class KernelScan implements BatchScan {
  private position = 0;

  constructor(
    private readonly scanner: SegmentScanner,
    private readonly stepBlocks: number,
    private readonly verifyHash: boolean,
    folds = false,
  ) {
    if (folds) this.foldInto = (acc) => this.scanner.foldInto(acc as AggregateAccumulator);
  }

  /** With merged partials: folds the finished batch into the query's accumulator. */
  readonly foldInto?: (acc: PartialAccumulator) => boolean;

  async next(): Promise<BatchScanStep> {
    const left = this.scanner.blocks - this.position;
    const s = await this.scanner.next(this.stepBlocks);
    // A step covers stepBlocks blocks (the kernel's 16 MiB cap is above any step we ask for), or all that are left.
    const covered = s.done ? left : Math.min(this.stepBlocks, left);
    this.position += covered;
    // With verify_hash every block is read for the chain, skipped by the zone maps or not.
    const blocksRead = this.verifyHash ? covered : covered - s.blocksSkipped;
    return {
      records: s.records,
      matched: s.matched,
      scanned: s.scanned,
      blocksRead,
      blocksSkipped: s.blocksSkipped,
      done: s.done,
      ...(s.hashOk === undefined ? {} : { hashOk: s.hashOk }),
      ...(s.partial === undefined ? {} : { partial: s.partial }),
    };
  }

  close(): void {
    this.scanner.close();
  }
}

/** A batch of a dataset without a schema here: whole blocks, every record matches. */
class BlockScan implements BatchScan {
  private nextBlock = 0;

  constructor(
    private readonly reader: SegmentReader,
    private readonly path: string,
    private readonly blocksPerStep: number,
    private readonly verifyHash: boolean,
  ) {}

  async next(): Promise<BatchScanStep> {
    const first = this.nextBlock;
    const count = Math.min(this.blocksPerStep, this.reader.blocks - first);
    const records = count > 0 ? await this.reader.readBlocks(first, count) : Buffer.alloc(0);
    this.nextBlock += count;
    const done = this.nextBlock >= this.reader.blocks;
    const n = records.length / this.reader.recordSize;
    const hashOk = done && this.verifyHash ? (await verifySegment(this.path)).ok : undefined;
    return { records, matched: n, scanned: n, blocksRead: count, blocksSkipped: 0, done, ...(hashOk === undefined ? {} : { hashOk }) };
  }

  close(): void {
    // The reader holds no descriptor between reads.
  }
}
