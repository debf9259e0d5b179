/**
 * The one typed declaration of the native addon's functions (`engine-rs/index.node`).
 *
 * Nothing outside `engine-rs/` imports this file: `engine-rs/index.ts` wraps it in idiomatic
 * classes, and the addon itself is never the public API. Keep each section in the same order as
 * the bridge modules in `engine-rs/node/src/`. Functions whose names end in `Async` run as Neon
 * tasks off the event loop and return Promises.
 */
import path from 'node:path';
import type { NativeColumns } from './arrowNative';

/** A compiled dataset schema held natively (a boxed `Arc<Schema>`); made by `schemaCompile`. */
export type SchemaHandle = { readonly __brand: 'SchemaHandle' };

/** One value `codecConvertRecord` refused. */
export interface NativeFieldError {
  field: string;
  reason: string;
}

/** What the NDJSON and CSV parsers return for one block. */
export interface NativeParsed {
  records: Buffer;
  count: number;
  errors: { line: number; field?: string; reason: string }[];
  /** Lines the block held, blank and rejected ones included. */
  lines: number;
  /** CSV only: column names read from this block's header row. */
  header?: string[];
}

/** A hash chain in progress held natively (a boxed `ChainState` and its chunk queue); made by `chainNew`. */
export type ChainHandle = { readonly __brand: 'ChainHandle' };
/** A segment being written (a boxed `SegmentWriter`); made by `segmentWriterCreate`. */
export type SegmentWriterHandle = { readonly __brand: 'SegmentWriterHandle' };
/** A compiled Rego policy held natively (a boxed `Arc<Policy>`); made by `policyCompile`. */
export type PolicyHandle = { readonly __brand: 'PolicyHandle' };

/** A NORM sender or receiver (a boxed instance, session and event thread); made by `normSenderOpen` / `normReceiverOpen`. */
export type NormHandle = { readonly __brand: 'NormHandle' };

/** A user-space NIC (a boxed `TcpHost` over a DPDK port); made by `userNicOpen`. */
export type UserNicHandle = { readonly __brand: 'UserNicHandle' };

/** How a user-space NIC starts (engine-rs/node/src/user_nic.rs). */
export interface NativeUserNicOptions {
  /** The DPDK port: a PCIe address on the allow list, or a vdev name (`net_tap0`). */
  device: string;
  /** PCIe addresses DPDK probes (its allow list). */
  pci?: string[];
  /** Virtual devices, as DPDK's `--vdev` takes them. */
  vdevs?: string[];
  /** DPDK's cores (an EAL core list such as `2-3`); the host's thread runs on the first. */
  cores?: string;
  /** Plain memory instead of hugepages. */
  noHuge?: boolean;
  /** Megabytes DPDK reserves; 0 lets it decide. */
  memoryMb?: number;
  /** The host's IPv4 address and prefix length. */
  ip: string;
  prefix: number;
  /** The link's IP MTU. */
  ipMtu: number;
  /** Packet buffers in DPDK's pool. */
  mbufs?: number;
  /** Bytes of each connection's send and receive buffers. */
  buffer?: number;
  /** Poll without sleeping (a dedicated transport core). */
  busyPoll?: boolean;
  /** Received bytes not yet delivered to JS above which reading stops. */
  maxUndelivered?: number;
}

/** Where a NORM session meets (engine-rs/node/src/norm.rs). */
export interface NativeNormSession {
  address: string;
  port: number;
  nodeId: number;
  interface?: string;
  loopback?: boolean;
  rxSocketBuffer?: number;
}
/** An open, validated segment (a boxed `SegmentReader`); made by `segmentOpen`. */
export type SegmentReaderHandle = { readonly __brand: 'SegmentReaderHandle' };

/** A query's filters compiled against a schema (a boxed `Arc<ScanFilter>`); made by `scanFilterCompile`. */
export type ScanFilterHandle = { readonly __brand: 'ScanFilterHandle' };
/** A scan in progress over one segment (a boxed `SegmentScanner`); made by `scanOpen`. */
export type SegmentScannerHandle = { readonly __brand: 'SegmentScannerHandle' };
/** A compiled HDQuery `aggregate` (a boxed `AggregatePlan`); made by `scanAggregateCompile`. */
export type AggregatePlanHandle = { readonly __brand: 'AggregatePlanHandle' };
/** Merged partials of many batches of one aggregate (a boxed `AggregateAccumulator`); made by `scanAccumulatorCreate`. */
export type AggregateAccumulatorHandle = { readonly __brand: 'AggregateAccumulatorHandle' };
/** A compiled HDQuery `top` (a boxed `TopPlan`: field, k, direction, mask); made by `scanTopCompile`. */
export type TopPlanHandle = { readonly __brand: 'TopPlanHandle' };

/** What `scanNext` resolves. */
export interface NativeScanStep {
  records: Buffer;
  matched: number;
  scanned: number;
  blocksSkipped: number;
  done: boolean;
  hashOk?: boolean;
  /** With an aggregate set, on the last step: the batch's partial as aggregate frame JSON. */
  partial?: string;
}

/** What `segmentInfo` returns. */
/** The process's GPU filter offload (engine-rs `gpu::offload`). */
export interface GpuStats {
  /** A GPU was turned on (filter_device_selector gpu, and one was found). */
  readonly enabled: boolean;
  /** Its name, memory and compute capability; empty when off. */
  readonly device: string;
  /** Record bytes filtered on it. */
  readonly bytesFiltered: number;
  /** Scan steps it ran. */
  readonly steps: number;
  /** Scan steps left on the CPU kernel: small, or the GPU busy. */
  readonly cpuFallbacks: number;
  /** Steps it failed (redone on the CPU kernel). */
  readonly errors: number;
  /** The last such error. */
  readonly lastError: string | null;
}

export interface NativeSegmentInfo {
  datasetId: string;
  batchId: Buffer;
  recordSize: number;
  blockSize: number;
  algorithm: string;
  records: number;
  blocks: number;
  closingHash: Buffer;
  /** 4 numbers per zone field: offset, size, kind (1 unsigned, 2 signed, 3 float, 4 bytes), big-endian. */
  fields: Uint32Array;
  /** Min key, max key per block per field (block-major). */
  zones: BigUint64Array;
  /** Min key, max key per field over the whole batch. */
  filter: BigUint64Array;
}

/**
 * One result column for `pgTextDataRows` (engine-rs/pgTextRows.ts builds them): `kind` 0 integers,
 * 1 floats (`width` bytes each), 2 booleans (bits from `offset`), 3 UTF-8 text (`offsets`: i32 bounds),
 * 4 dictionary codes naming `labels` (bounds in `labelOffsets`); `validity` bits from `validityOffset`.
 */
export interface NativePgTextColumn {
  readonly kind: number;
  readonly width: number;
  readonly signed: boolean;
  readonly offset: number;
  readonly data: Uint8Array;
  readonly offsets?: Uint8Array;
  readonly labels?: Uint8Array;
  readonly labelOffsets?: Uint8Array;
  readonly validity?: Uint8Array;
  readonly validityOffset: number;
}

/** Functions exported by the Rust bridge crate `hd-engine-node`. */
export interface Native {
  // --- affinity.rs ---------------------------------------------------------------------------
  /** The CPUs thread `tid` may run on (0: the calling thread), ascending; throws ESRCH for no such thread. */
  affinityThreadCpus(tid: number): number[];
  /** Restricts thread `tid` (0: the calling thread) to `cpus`; throws EINVAL, ESRCH, EPERM or ERR_RANGE. */
  affinitySetThreadCpus(tid: number, cpus: Float64Array): void;
  /** The calling thread's kernel thread id. */
  affinityCurrentTid(): number;
  /** The process's threads as [tid, name] (/proc/self/task), by tid. */
  affinityProcessThreads(): [number, string][];
  /** CPUs the engine's worker threads started from now on run on (the hashing pool); empty: not pinned. */
  affinitySetWorkerCpus(cpus: Float64Array): void;
  /** On a libuv pool thread: pins it to `cpus`, waits up to `waitMs` for the round's `expected` calls; resolves with its tid. */
  affinityPinPoolWorkerAsync(round: number, expected: number, cpus: Float64Array, waitMs: number): Promise<number>;

  // --- batch_id.rs ---------------------------------------------------------------------------
  /** String form: first 64 UTF-8 bytes, right-aligned, zero-padded on the left. */
  batchIdString(s: string): Buffer;
  /** Number form: big-endian u64 in bytes 56..64. */
  batchIdNumber(n: bigint): Buffer;
  /** Time form: floored start in bytes 48..56, ceiled end in bytes 56..64 (big-endian i64). */
  batchIdTime(start: number, end: number, interval: number): Buffer;
  /** One time-form id per interval from floor(start) to ceil(end) inclusive, concatenated. */
  batchIdsTime(start: number, end: number, interval: number): Buffer;

  // --- schema.rs -----------------------------------------------------------------------------
  /** Validates schema JSON and boxes the compiled schema; throws `{ code: 'ERR_SCHEMA', issues }`. */
  schemaCompile(json: string): SchemaHandle;
  /** Canonical schema JSON of a compiled schema (enum codes past 2^53 as digit strings). */
  schemaDescribe(handle: SchemaHandle): string;

  // --- codec.rs ------------------------------------------------------------------------------
  /** Reference `convert_record_to_binary`: one fresh record plus the values it refused. */
  codecConvertRecord(handle: SchemaHandle, map: Record<string, string>): { record: Buffer; errors: NativeFieldError[] };
  /** NDJSON block (whole lines) → records, lines numbered from `firstLine`. */
  codecParseNdjson(handle: SchemaHandle, buf: Buffer, firstLine: number): NativeParsed;
  /** `codecParseNdjson` as a Neon task off the event loop (the block is copied first). */
  codecParseNdjsonAsync(handle: SchemaHandle, buf: Buffer, firstLine: number): Promise<NativeParsed>;
  /** CSV block → records; `header` is the column names joined by '\n' (null: the block's first row). */
  codecParseCsv(handle: SchemaHandle, buf: Buffer, firstLine: number, header: string | null, delimiter: string): NativeParsed;
  /** `codecParseCsv` as a Neon task off the event loop. */
  codecParseCsvAsync(handle: SchemaHandle, buf: Buffer, firstLine: number, header: string | null, delimiter: string): Promise<NativeParsed>;
  /** Records → one copy per time window (`interval` 0: the schema's), in order of first appearance. */
  codecTimeWindows(handle: SchemaHandle, records: Buffer, interval: number): { start: number; count: number; records: Buffer }[];

  // --- decode.rs -----------------------------------------------------------------------------
  /** The Arrow columns a dataset decodes to, as JSON `PlanColumn[]` (`raw`: addresses as integers/bytes). */
  decodePlan(handle: SchemaHandle, rawAddresses: boolean): string;
  /** Records (a whole number of them) → column buffers, on the calling thread; `fields`: only those (names, in that order). */
  decodeRecords(handle: SchemaHandle, records: Buffer, rawAddresses: boolean, fields?: readonly string[]): NativeColumns;
  /** `decodeRecords` as a Neon task off the event loop (the records are copied first). */
  decodeRecordsAsync(handle: SchemaHandle, records: Buffer, rawAddresses: boolean, fields?: readonly string[]): Promise<NativeColumns>;

  // --- columnar.rs ---------------------------------------------------------------------------
  /** Records (a copy ANDed with `mask` when given) → the columnar body of field indices `fields`, off the event loop. */
  columnarEncodeAsync(handle: SchemaHandle, records: Buffer, fields: readonly number[], rawAddresses: boolean, mask: Buffer | null): Promise<Buffer>;
  /** `columnarEncodeAsync` on the calling thread (a few records: the hop costs more than the encode). */
  columnarEncode(handle: SchemaHandle, records: Buffer, fields: readonly number[], rawAddresses: boolean, mask: Buffer | null): Buffer;
  /** Checks a columnar body against `fields` and `rows` (negative: any); throws `ERR_COLUMNAR_*`. */
  columnarRead(handle: SchemaHandle, fields: readonly number[], rawAddresses: boolean, rows: number, body: Uint8Array): NativeColumns;
  /** `columnarRead` off the event loop (the body is copied). */
  columnarReadAsync(handle: SchemaHandle, fields: readonly number[], rawAddresses: boolean, rows: number, body: Uint8Array): Promise<NativeColumns>;

  // --- encode_arrow.rs -----------------------------------------------------------------------
  /**
   * Arrow columns → records: `plan` is the JSON `EncodePlan` (engine-rs/encodeArrow.ts) whose
   * chunks name `buffers` by index. Throws `{ code: 'ERR_ENCODE_ARROW_*', column?, row? }`.
   */
  encodeArrowColumns(handle: SchemaHandle, plan: string, buffers: Uint8Array[]): Buffer;
  /** `encodeArrowColumns` as a Neon task off the event loop (the buffers are copied first). */
  encodeArrowColumnsAsync(handle: SchemaHandle, plan: string, buffers: Uint8Array[]): Promise<Buffer>;

  // --- hdwp.rs -------------------------------------------------------------------------------
  /**
   * Decodes every whole HDWP frame at the start of `buf` (payloads up to `maxPayload` bytes).
   * `frames` holds 10 numbers per frame: kind, start, end, queryId (-1: none), token offset (-1:
   * none), then by kind — hello: datasetStart, datasetEnd, version, role, recordSize; records:
   * batchIdOffset, recordSize, count, payloadStart, payloadEnd; eob: batchIdOffset, recordCount,
   * hashStart, hashEnd, digest (1: a 32-byte batch digest at hashEnd + 1, 0: none); bbn: batchIdOffset, reasonStart, reasonEnd; query: jsonStart, jsonEnd;
   * error: code, messageStart, messageEnd; credit: bytes; aggregate: batchIdOffset, jsonStart, jsonEnd;
   * columns: batchIdOffset, rows, bodyStart, bodyEnd; eobs: entriesStart, count (then `count` entries of a
   * 64-byte batch id and a u64 big-endian record count); traceContext: jsonStart, jsonEnd. Offsets index `buf`. `consumed` is the
   * bytes of those frames, `need` the total bytes the next incomplete frame requires, and
   * `code`/`message` the error of a bad frame at `consumed` (null when none).
   */
  hdwpScan(
    buf: Uint8Array,
    maxPayload: number,
  ): { frames: Float64Array; consumed: number; need: number; code: string | null; message: string | null };
  /** Hello frame; a null token means no query block (queryId is then ignored). */
  hdwpEncodeHello(version: number, role: number, recordSize: number, datasetId: string, queryId: number, token: Uint8Array | null): Buffer;
  /** One records frame of exactly `count` records. */
  hdwpEncodeRecordsFrame(batchId: Uint8Array, recordSize: number, count: number, payload: Uint8Array, queryId: number, token: Uint8Array | null): Buffer;
  /** Records packed into frames of at most `maxFrameBytes`; `mtu` also checks it is a datagram MTU. */
  hdwpEncodeRecords(batchId: Uint8Array, recordSize: number, records: Uint8Array, maxFrameBytes: number, mtu: boolean, queryId: number, token: Uint8Array | null): Buffer;
  /** End-of-batch frame. */
  hdwpEncodeEob(batchId: Uint8Array, recordCount: number, closingHash: Uint8Array, digest: Uint8Array, queryId: number, token: Uint8Array | null): Buffer;
  /** Bad batch notice frame. */
  hdwpEncodeBbn(batchId: Uint8Array, reason: string, queryId: number, token: Uint8Array | null): Buffer;
  /** Query frame. */
  hdwpEncodeQuery(queryId: number, token: Uint8Array, json: string): Buffer;
  /** Cancel frame. */
  hdwpEncodeCancel(queryId: number, token: Uint8Array): Buffer;
  /** Error frame. */
  hdwpEncodeError(code: number, message: string, queryId: number, token: Uint8Array | null): Buffer;
  /** Credit frame. */
  hdwpEncodeCredit(bytes: number, queryId: number, token: Uint8Array | null): Buffer;
  /** Aggregate frame (a batch's partial aggregate as JSON). */
  hdwpEncodeAggregate(batchId: Uint8Array, json: string, queryId: number, token: Uint8Array | null): Buffer;
  /** Columns frame (a batch's rows as a columnar body, `columnarEncodeAsync`). */
  hdwpEncodeColumns(batchId: Uint8Array, rows: number, body: Uint8Array, queryId: number, token: Uint8Array | null): Buffer;
  /**
   * Eobs frame ending `recordCounts.length` batches: `batchIds` their 64-byte ids back to back, in the
   * same order as `recordCounts` (1..65535 batches, counts at most 2^53 - 1, no id twice).
   */
  hdwpEncodeEobs(batchIds: Uint8Array, recordCounts: Float64Array, queryId: number, token: Uint8Array | null): Buffer;
  /** Trace context frame (the sender's W3C trace context as a JSON object). */
  hdwpEncodeTraceContext(json: string, queryId: number, token: Uint8Array | null): Buffer;

  // --- norm.rs -------------------------------------------------------------------------------
  /** The loaded NORM library's version; throws ERR_NORM (saying to install libnorm1) without it. */
  normVersion(): string;
  /** Opens a NORM sender with one stream; `onEvent('vacancy' | 'send-error')` off its event thread. */
  normSenderOpen(opts: NativeNormSession & { segmentSize: number; bufferBytes: number; streamBytes: number; txRateBps: number; blockSize?: number; parity?: number; grttEstimate?: number }, onEvent: (kind: string) => void): NormHandle;
  /** Opens a NORM receiver; `onEvent('data', bytes)` in stream order from a message start, or 'break' | 'sender' | 'aborted' | 'completed'. */
  normReceiverOpen(opts: NativeNormSession & { bufferBytes: number }, onEvent: (kind: string, data?: Buffer) => void): NormHandle;
  /** Writes what fits now; returns the bytes taken (fewer: wait for 'vacancy'). */
  normWrite(handle: NormHandle, bytes: Uint8Array): number;
  /** Marks the end of a message and flushes it; `active`: with flush commands, so a lost tail is asked for at once. */
  normEndMessage(handle: NormHandle, active: boolean): void;
  /** Stops the handle (idempotent). */
  normClose(handle: NormHandle): void;

  // --- user_nic.rs ---------------------------------------------------------------------------
  /** True when this build can drive a user-space NIC (its DPDK shim exists). */
  userNicBuiltIn(): boolean;
  /**
   * Starts a user-space NIC's transport thread; `onEvent(kind, id, a?, b?)`: 'ready' (a: MAC) or
   * 'stopped' (a: reason), 'accepted' (a: peer ip:port, b: local port), 'connected', 'data' (a:
   * bytes), 'sent' (a: byte count), 'ended', 'closed' (a: reason when not in order).
   * Throws ERR_USER_NIC when this build has no DPDK.
   */
  userNicOpen(opts: NativeUserNicOptions, onEvent: (kind: string, id: number, a?: string | number | Buffer, b?: number) => void): UserNicHandle;
  /** Accepts connections on a TCP port. */
  userNicListen(handle: UserNicHandle, port: number, backlog: number): void;
  /** Stops accepting on a TCP port. */
  userNicUnlisten(handle: UserNicHandle, port: number): void;
  /** Connects to ip:port; returns the connection's id. */
  userNicConnect(handle: UserNicHandle, ip: string, port: number): number;
  /** Queues bytes on a connection. */
  userNicWrite(handle: UserNicHandle, id: number, bytes: Uint8Array): void;
  /** end | abort | pause | resume a connection. */
  userNicControl(handle: UserNicHandle, id: number, what: 'end' | 'abort' | 'pause' | 'resume'): void;
  /** Stops the transport thread (idempotent). */
  userNicClose(handle: UserNicHandle): void;

  // --- hash.rs -------------------------------------------------------------------------------
  /** Starts a batch's hash chain (algorithm sha512 | sha256 | blake3; batchId 64 bytes). */
  chainNew(algorithm: string, recordSize: number, blockSize: number, batchId: Uint8Array, withDigest: boolean): ChainHandle;
  /** Starts a sender's batch digest alone (BLAKE3-256 of the bytes fed with `chainUpdate`). */
  digestNew(): ChainHandle;
  /** Closes a digest (or a chain made with a digest): the 32-byte batch digest. */
  digestFinish(handle: ChainHandle): Buffer;
  /** Copies `buf` into the chain's queue; resolves once it is hashed (on libuv's pool). */
  chainUpdate(handle: ChainHandle, buf: Uint8Array): Promise<void>;
  /** Closes the chain; throws ERR_HASH_CHAIN_BUSY while an update is still hashing. */
  chainFinish(handle: ChainHandle): { closingHash: Buffer; blocks: number; records: number; tailBytes: number; blockHashes: Buffer; digest?: Buffer };
  /** Sets the threads hashing records in this process (0: one per core); returns the count in force. */
  setHashThreads(threads: number): number;
  /** Threads hashing records in this process. */
  hashThreads(): number;

  // --- segment.rs ----------------------------------------------------------------------------
  /** Creates `<dir>/<name>.partial` and writes the header; `fields` has 4 numbers per zone field; `io` is `buffered`, `direct` or `uring`. */
  segmentWriterCreate(dir: string, name: string, datasetId: string, batchId: Uint8Array, recordSize: number, blockSize: number, algorithm: string, fields: Uint32Array, io: string): SegmentWriterHandle;
  /** How the writer writes (the mode it fell back to after a refused `uring` or `direct`); call before queuing appends. */
  segmentWriterIo(handle: SegmentWriterHandle): 'uring' | 'direct' | 'buffered';
  /** Whether files in `dir` take O_DIRECT (creates and removes one probe file). */
  segmentDirectIoSupported(dir: string): boolean;
  /** Why segments in `dir` cannot be written through io_uring (kernel, seccomp, sysctl or file system), or null when they can. */
  segmentUringIoRefusal(dir: string): string | null;
  /** Queues a copy of `buf`; resolves once it is hashed and written. */
  segmentWriterAppend(handle: SegmentWriterHandle, buf: Uint8Array): Promise<void>;
  /** Footer, fsync, rename, fsync directory; `expected` is the SCC's closing hash (null: none). */
  segmentWriterFinish(handle: SegmentWriterHandle, expected: Uint8Array | null): Promise<{ path: string; records: number; blocks: number; closingHash: Buffer; bytes: number }>;
  /** Drops queued chunks and removes the partial file. */
  segmentWriterAbort(handle: SegmentWriterHandle): Promise<void>;
  /** Opens and validates a segment (header, footer, layout). */
  segmentOpen(path: string): Promise<SegmentReaderHandle>;
  /** Opens a segment whose footer is in the footer cache, on this thread; undefined when it is not cached. */
  segmentOpenCachedSync(path: string): SegmentReaderHandle | undefined;
  /** Header values, counts, zone maps and batch filter of an open segment. */
  segmentInfo(handle: SegmentReaderHandle): NativeSegmentInfo;
  /** Records of blocks `first .. first + count`, CRCs checked. */
  segmentReadBlocks(handle: SegmentReaderHandle, first: number, count: number): Promise<Buffer>;
  /** Sets the record cache's limit in bytes (0: off); returns it. Throws ERR_INVALID_ARG. */
  setRecordCacheBytes(bytes: number): number;
  /** The record cache: limit, bytes and pieces held, pieces found (hits) and read (misses). */
  recordCacheStats(): { limit: number; bytes: number; pieces: number; hits: number; misses: number; narrowBytes: number; narrowPieces: number };
  /** Recomputes the chain over every record; damage resolves `{ ok: false, code, message }`. */
  segmentVerify(path: string): Promise<{ ok: true; records: number; blocks: number; closingHash: Buffer } | { ok: false; code: string; message: string }>;
  /** Crash recovery of a segment directory. */
  segmentRecover(dir: string, verifyChains: boolean): Promise<{ complete: string[]; discarded: string[]; quarantined: { path: string; code: string; reason: string }[] }>;

  // --- gpu.rs --------------------------------------------------------------------------------
  /** Opens GPU 0 as the process's filter offload for scan steps of at least 16 MiB; resolves its description. Rejects ERR_GPU_UNAVAILABLE with the reason. */
  gpuEnable(): Promise<string>;
  /** The process's GPU offload: whether on, its device, bytes filtered and steps on it, steps left on the CPU, errors. */
  gpuStats(): GpuStats;

  // --- scan.rs -------------------------------------------------------------------------------
  /** Compiles `sub_queries` JSON; throws `{ code: 'ERR_QUERY', path, reason }`. */
  scanFilterCompile(schema: SchemaHandle, json: string): ScanFilterHandle;
  /** What a compiled filter is. */
  scanFilterInfo(handle: ScanFilterHandle): { recordSize: number; subQueries: number; matchesAll: boolean; matchesNone: boolean };
  /** The matching records of `records` (whole records), on the calling thread. */
  scanEvaluate(handle: ScanFilterHandle, records: Uint8Array): Buffer;
  /** Opens a segment for a scan (off the event loop). */
  scanOpen(
    path: string,
    filter: ScanFilterHandle,
    verifyHash: boolean,
  ): Promise<{ handle: SegmentScannerHandle; records: number; blocks: number; batchId: Buffer; datasetId: string; closingHash: Buffer }>;
  /** Opens a segment whose footer is in the footer cache, on this thread; undefined when it is not cached. */
  scanOpenCachedSync(
    path: string,
    filter: ScanFilterHandle,
    verifyHash: boolean,
  ): { handle: SegmentScannerHandle; records: number; blocks: number; batchId: Buffer; datasetId: string; closingHash: Buffer } | undefined;
  /** Scans up to `maxBlocks` more blocks (off the event loop). */
  scanNext(handle: SegmentScannerHandle, maxBlocks: number): Promise<NativeScanStep>;
  /** Closes a scanner; a step in flight finishes first. */
  scanClose(handle: SegmentScannerHandle): void;
  /** Compiles an HDQuery `aggregate` (JSON) against a schema and a field mask (one record, or null); throws ERR_QUERY with path. */
  scanAggregateCompile(schema: SchemaHandle, json: string, fieldMask: Uint8Array | null): AggregatePlanHandle;
  /** Makes an open scanner fold its matches into the aggregate; the last step then carries `partial`. */
  scanSetAggregate(handle: SegmentScannerHandle, plan: AggregatePlanHandle): string | undefined;
  /** Like `scanSetAggregate`, the partial kept native for `scanFoldInto`; true when the batch summary answered it. */
  scanSetAggregateFold(handle: SegmentScannerHandle, plan: AggregatePlanHandle): boolean;
  /** An empty accumulator of the plan's partials. */
  scanAccumulatorCreate(plan: AggregatePlanHandle): AggregateAccumulatorHandle;
  /** Groups an accumulator holds. */
  scanAccumulatorGroups(acc: AggregateAccumulatorHandle): number;
  /** Whether nothing was folded in since creation or the last take. */
  scanAccumulatorEmpty(acc: AggregateAccumulatorHandle): boolean;
  /** The merged groups as an aggregate frame's `groups` JSON array; empties the accumulator. */
  scanAccumulatorTake(acc: AggregateAccumulatorHandle): string;
  /** Merges a finished batch's partial into the accumulator (this thread); false, unchanged, past max_groups. */
  scanFoldInto(handle: SegmentScannerHandle, acc: AggregateAccumulatorHandle): boolean;
  /** Moves everything `other` holds into `acc` (this thread); false, both unchanged, past max_groups. */
  scanAccumulatorAbsorb(acc: AggregateAccumulatorHandle, other: AggregateAccumulatorHandle): boolean;
  /**
   * Folds the segments their summaries answer, and small ones scanned (at most `batchBytes` record bytes each, `groupBytes` in all),
   * into a fresh accumulator (off the event loop); per path records (-1 not folded, -2 not tried), blocks, matched, scanned, skipped blocks.
   */
  scanSummaryGroup(
    paths: string[],
    filter: ScanFilterHandle,
    plan: AggregatePlanHandle,
    batchBytes: number,
    groupBytes: number,
  ): Promise<{ records: Float64Array; blocks: Float64Array; matched: Float64Array; scanned: Float64Array; skipped: Float64Array; acc: AggregateAccumulatorHandle }>;
  /**
   * Scans small segments whole (at most `batchBytes` record bytes each, `groupBytes` in all) with `filter`, off the event loop; per path
   * records (-1 read as usual, -2 not tried), blocks, matched, scanned, skipped blocks, kept (records put in `rows`: with `top` only each
   * batch's best), and those records back to back.
   */
  scanRowsGroup(
    paths: string[],
    filter: ScanFilterHandle,
    top: TopPlanHandle | null,
    batchBytes: number,
    groupBytes: number,
  ): Promise<{ records: Float64Array; blocks: Float64Array; matched: Float64Array; scanned: Float64Array; skipped: Float64Array; kept: Float64Array; rows: Buffer }>;
  /** Compiles a `top` (best `k` by `field`, largest first when `desc`) against a schema and a field mask (one record, or null); throws ERR_QUERY with path. */
  scanTopCompile(schema: SchemaHandle, field: string, k: number, desc: boolean, fieldMask: Uint8Array | null): TopPlanHandle;
  /** The records of `records` (whole records) within the plan's best k, ties with the k-th kept, in order (this thread); RangeError when not whole records. */
  scanTopSelect(plan: TopPlanHandle, records: Uint8Array): Buffer;
  /** Zone fields for segments of a schema, 4 numbers each as `segmentWriterCreate` takes them. */
  scanZoneFields(schema: SchemaHandle): Uint32Array;
  /** Reads every byte of `buf` once (a benchmark baseline); returns a fold of them. */
  scanReadBaseline(buf: Uint8Array): number;

  // --- pg_text.rs ----------------------------------------------------------------------------
  /** DataRow messages (text format) for rows `from`..`to` of the described columns; throws HD_PG_TEXT_ROWS on a bad descriptor. */
  pgTextDataRows(columns: readonly NativePgTextColumn[], from: number, to: number): Buffer;
  /** `COPY ... TO STDOUT` text rows (one CopyData message a row) for rows `from`..`to`; throws HD_PG_TEXT_ROWS on a bad descriptor. */
  pgTextCopyRows(columns: readonly NativePgTextColumn[], from: number, to: number): Buffer;

  // --- policy.rs -----------------------------------------------------------------------------
  /** Compiles a Rego policy (package hd.authz) with optional data JSON; throws ERR_POLICY with the compiler's message. */
  policyCompile(rego: string, dataJson: string | null): PolicyHandle;
  /** The package's value for the input JSON, as JSON text; throws ERR_POLICY_EVAL. */
  policyEvaluate(handle: PolicyHandle, inputJson: string): string;
  /** ANDs every record of `records` with `mask` (one record long), in place; throws ERR_FIELD_MASK. */
  policyApplyFieldMask(records: Uint8Array, mask: Uint8Array): void;
}

/** Where the built addon lives: next to this file in the source tree, one level up from dist/. */
function addonPath(): string {
  const here = __dirname;
  const inDist = here.split(path.sep).includes('dist');
  return inDist ? path.resolve(here, '..', '..', 'engine-rs', 'index.node') : path.resolve(here, 'index.node');
}

/** The loaded addon. Loading fails with a message saying how to build it. */
export const native: Native = (() => {
  const file = addonPath();
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(file) as Native;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(`cannot load the HD engine addon at ${file} (${why}); build it with 'npm run build:native'`);
  }
})();
