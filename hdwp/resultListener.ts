/**
 * The client side of the query data plane (docs/query.md, "Client listener"): an HDWP server (the
 * ingest server code, role 5 query client) where Storage Nodes — and the SCC, for batches it gives
 * up on — stream a query's results straight to the address the client advertised. A stream is kept
 * only while its hello and every frame carry the query block of an open query with the right token;
 * a batch's records are held until its eob on the same stream, so a stream that breaks mid-batch
 * leaves nothing of that batch behind (the SCC re-routes it to another replica). A node may start
 * its next query's stream on the same connection with that query's hello (docs/hdwp.md, "Reused
 * result streams"): the previous query's stream ends there exactly as on a clean close.
 */
import type tls from 'node:tls';
import { BatchID } from '../engine-rs/batchId';
import type { Frame, HdwpRole, QueryAuth } from '../engine-rs/hdwpFrame';
import { HDWP_ERROR_FRAME_CODES } from '../engine-rs/hdwpFrame';
import { parseAggregatePartial, type AggregatePartial } from '../query/aggregate';
import { parseBbnReason } from '../query/batchNotice';
import { traceContextOf, type BatchError } from '../query/hdQuery';
import { sameToken } from '../query/token';
import { contextFromTraceContext, failSpan, SpanKind, startSpan, type Span, type TraceContext } from '../lib/tracing/index';
import { HdwpServer, type ConnectionHandler, type HdwpConnection } from './hdwpServer';
import { HdwpStreamError } from './hdwpStreamError';

/** One complete batch of a query: its matching records, held until the batch's eob arrived. */
export interface BatchResult {
  readonly kind: 'batch';
  readonly queryId: number;
  readonly batchId: BatchID;
  /** Bytes per record (the stream's hello). */
  readonly recordSize: number;
  /** Records received for the batch. */
  readonly count: number;
  /** The record count the eob declared. */
  readonly declaredCount: number;
  /** The records, in arrival order, as views of the received frames (no copies). */
  readonly records: readonly Buffer[];
  /**
   * Columnar bodies (HDQuery `result_format: "columns"`, docs/hdwp.md "columns"), in arrival order,
   * as views of the received frames; `count` includes their rows. Absent when none came.
   */
  readonly columns?: readonly ColumnarPart[];
  /**
   * The batch's partial aggregate (HDQuery `aggregate`, docs/query.md "Aggregates"), decoded from its
   * aggregate frame and held until the eob like records; `count` is then 0 and `declaredCount` the
   * number of records that matched. Absent when the batch sent none.
   */
  readonly aggregate?: AggregatePartial;
  /** The sender, `ip:port`. */
  readonly node: string;
}

/** One columns frame's rows: `rows` rows as a columnar body (engine-rs/columnar.ts reads it). */
export interface ColumnarPart {
  readonly rows: number;
  readonly body: Buffer;
}

/** One batch a node (or the SCC) gave up on with a bbn. */
export interface BatchFailure {
  readonly kind: 'batchError';
  readonly queryId: number;
  readonly error: BatchError;
}

/** A result stream of the query that ended with an error frame from its sender (cancel: code 4). */
export interface StreamFailure {
  readonly kind: 'streamError';
  readonly queryId: number;
  readonly code: number;
  readonly message: string;
  readonly node: string;
}

/** What a query's handler is given. */
export type QueryResult = BatchResult | BatchFailure | StreamFailure;

/** Called for each result of a query, one stream at a time in order; the stream waits for a returned promise. */
export type QueryResultHandler = (result: QueryResult) => void | Promise<void>;

/** A query the listener accepts results for. */
export interface OpenQuery {
  readonly queryId: number;
  /** Batches completed so far (hex ids). */
  readonly completed: ReadonlySet<string>;
  /** One entry per batch that failed and has not completed since (a re-routed copy withdraws it). */
  batchErrors(): BatchError[];
  /** Stops accepting results for it: streams still sending get error 3. */
  close(): void;
}

/** Counters of the listener. */
export interface ResultListenerStats {
  /** Result streams accepted (one per query per connection: a reused connection's streams count each). */
  readonly acceptedStreams: number;
  /** Of those, streams that began on a connection an earlier query's stream had used (a node's reused connection). */
  readonly reusedStreams: number;
  /** Streams refused or closed with error 3: no query block, unknown query or wrong token. */
  readonly droppedStreams: number;
  /** Batches completed (first copy). */
  readonly batches: number;
  readonly records: number;
  /** Batches whose stream closed before their eob; their records were discarded. */
  readonly partialBatchesDropped: number;
  /** Complete copies of a batch that had already completed, discarded. */
  readonly duplicateBatches: number;
}

/** Options of {@link ResultListener}. */
export interface ResultListenerOptions {
  /** Address to bind; default `0.0.0.0`. */
  readonly host?: string;
  /** Port (the SQL server's is 6989); 0 picks a free one. */
  readonly port: number;
  /** Roles that may open result streams; default Storage Nodes and SCCs. */
  readonly roles?: readonly HdwpRole[];
  /** Record frame bytes in flight per stream; default 8 MiB. */
  readonly creditWindow?: number;
  /** Largest frame payload accepted; default 16 MiB. */
  readonly maxPayload?: number;
  /** Most bytes held for one batch before its eob; default 1 GiB. A batch past it fails with code 6. */
  readonly maxBatchBytes?: number;
  readonly handshakeTimeoutMs?: number;
  readonly tls?: tls.TlsOptions;
  /** With `tls`: undefined to accept a verified sender, else why it is refused (closed before hello). */
  readonly acceptPeer?: (socket: tls.TLSSocket) => string | undefined;
}

interface QueryState {
  readonly queryId: number;
  readonly token: Uint8Array;
  readonly handler: QueryResultHandler;
  readonly completed: Set<string>;
  readonly errors: Map<string, BatchError>;
  open: boolean;
}

interface HeldBatch {
  readonly batchId: BatchID;
  readonly records: Buffer[];
  columns?: ColumnarPart[];
  aggregate?: AggregatePartial;
  /** The batch's aggregate frame did not parse: its eob fails the batch instead. */
  aggregateError?: string;
  count: number;
  bytes: number;
}

/** One batch a merged frame ends, with its hex id. */
interface ListedBatch {
  readonly batchId: BatchID;
  readonly recordCount: number;
  readonly hex: string;
}

/** Default cap of one batch's held bytes. */
export const DEFAULT_MAX_BATCH_BYTES = 1024 ** 3;

/**
 * Accepts query result streams for the queries opened on it.
 *
 * @example
 * const listener = new ResultListener({ port: 6989 });
 * await listener.listen();
 * const q = listener.open({ queryId, token }, (r) => { if (r.kind === 'batch') decode(r.records); });
 * // … dispatch the query with return_address = this host:6989, wait for every batch …
 * q.close(); await listener.close();
 */
export class ResultListener {
  private readonly server: HdwpServer;
  private readonly queries = new Map<number, QueryState>();
  private readonly maxBatchBytes: number;
  /** Connections that have carried a stream, so a later hello on one counts as reused. */
  private readonly used = new WeakSet<HdwpConnection>();
  private counts = { acceptedStreams: 0, reusedStreams: 0, droppedStreams: 0, batches: 0, records: 0, partialBatchesDropped: 0, duplicateBatches: 0 };

  /** Validates the options; nothing listens until {@link listen}. */
  constructor(opts: ResultListenerOptions) {
    this.maxBatchBytes = opts.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
    this.server = new HdwpServer({
      host: opts.host,
      port: opts.port,
      role: 'queryClient',
      roles: opts.roles ?? ['storageNode', 'scc'],
      creditWindow: opts.creditWindow,
      maxPayload: opts.maxPayload,
      handshakeTimeoutMs: opts.handshakeTimeoutMs,
      // A node may start its next query's results on the same connection (no connect, no TLS handshake).
      rebind: true,
      tls: opts.tls,
      ...(opts.acceptPeer && { acceptPeer: opts.acceptPeer }),
      onConnection: (conn) => this.accept(conn),
    });
  }

  /** Replaces the TLS material of a mutual-TLS listener (a renewed certificate); new streams use it. */
  setSecureContext(options: tls.SecureContextOptions): void {
    this.server.setSecureContext(options);
  }

  /** Starts listening; resolves with the bound address. */
  listen(): Promise<{ host: string; port: number }> {
    return this.server.listen();
  }

  /** What the listener has seen so far. */
  get stats(): ResultListenerStats {
    return { ...this.counts };
  }

  /** Result streams open now. */
  get streams(): number {
    return this.server.connections;
  }

  /** Accepts results for one query (before it is dispatched, so early results are not lost). */
  open(auth: QueryAuth, handler: QueryResultHandler): OpenQuery {
    if (this.queries.has(auth.queryId)) throw new RangeError(`query ${auth.queryId} is already open on this listener`);
    const state: QueryState = { queryId: auth.queryId, token: Buffer.from(auth.token), handler, completed: new Set(), errors: new Map(), open: true };
    this.queries.set(auth.queryId, state);
    return {
      queryId: auth.queryId,
      completed: state.completed,
      batchErrors: () => [...state.errors.values()],
      close: () => {
        state.open = false;
        if (this.queries.get(auth.queryId) === state) this.queries.delete(auth.queryId);
      },
    };
  }

  /** Stops listening and closes every stream (error 9). */
  close(): Promise<void> {
    return this.server.close();
  }

  /** The open query a query block names, if its token matches. */
  private lookup(auth: QueryAuth | undefined): QueryState | undefined {
    if (!auth) return undefined;
    const q = this.queries.get(auth.queryId);
    return q && q.open && sameToken(q.token, auth.token) ? q : undefined;
  }

  private accept(conn: HdwpConnection): ConnectionHandler {
    const auth = conn.hello.auth;
    if (!this.lookup(auth)) {
      this.counts.droppedStreams++;
      const what = auth ? `query ${auth.queryId} is not open here or its token does not match` : 'a result stream must carry the query block (query id and token)';
      throw new HdwpStreamError('ERR_HDWP_REFUSED', what, { frameCode: HDWP_ERROR_FRAME_CODES.unknownQuery });
    }
    this.counts.acceptedStreams++;
    if (this.used.has(conn)) this.counts.reusedStreams++;
    else this.used.add(conn);
    const held = new Map<string, HeldBatch>();
    const recordSize = conn.hello.recordSize;
    let dropped = false;
    // The node's scan span, when it sent one (HDWP trace_context): this stream's transfer is its child.
    // `last`: when its last frame came, the span's end (a reused connection's stream ends at the next hello, later).
    let transfer: { span: Span; frames: number; bytes: number; last: number } | undefined;
    const drop = (message: string): void => {
      dropped = true;
      this.counts.droppedStreams++;
      conn.close(new HdwpStreamError('ERR_HDWP_REFUSED', message, { frameCode: HDWP_ERROR_FRAME_CODES.unknownQuery }));
    };
    return {
      onFrame: async (f: Frame) => {
        if (f.kind === 'traceContext' && !dropped && transfer === undefined) {
          const tc = traceContextFromJson(f.json);
          const span = tc && startSpan('hd.results.stream', { parent: contextFromTraceContext(tc), kind: SpanKind.CONSUMER, attributes: { 'hd.node': conn.remote, 'hd.dataset': conn.hello.datasetId } });
          if (span?.isRecording()) transfer = { span, frames: 0, bytes: 0, last: Date.now() };
          return;
        }
        if (dropped || (f.kind !== 'records' && f.kind !== 'columns' && f.kind !== 'aggregate' && f.kind !== 'eob' && f.kind !== 'eobs' && f.kind !== 'bbn')) return;
        if (transfer) {
          transfer.last = Date.now();
          transfer.frames++;
          if (f.kind === 'records') transfer.bytes += f.payload.byteLength;
          else if (f.kind === 'columns') transfer.bytes += f.body.byteLength;
        }
        const q = this.lookup(f.auth);
        if (!q) {
          drop(f.auth ? `${f.kind} frame for query ${f.auth.queryId}, which is not open here or whose token does not match` : `${f.kind} frame without the query block`);
          return;
        }
        if (f.kind === 'eobs') {
          await this.completeMany(q, f.batches, held, recordSize, conn.remote);
          return;
        }
        const hex = f.batchId.toHex();
        const key = `${q.queryId}:${hex}`;
        if (f.kind === 'aggregate') {
          let partial: AggregatePartial | undefined;
          let error: string | undefined;
          try {
            partial = parseAggregatePartial(f.json);
          } catch (err) {
            error = `batch ${hex}: ${(err as Error).message}`;
          }
          if (partial?.batches !== undefined) {
            await this.completeMerged(q, partial, partial.batches, f.batchId, hex, held, recordSize, conn.remote);
            return;
          }
          const b = held.get(key) ?? { batchId: f.batchId, records: [], count: 0, bytes: 0 };
          held.set(key, b);
          if (partial) b.aggregate = partial;
          else b.aggregateError = error;
          return;
        }
        if (f.kind === 'records' || f.kind === 'columns') {
          const b = held.get(key) ?? { batchId: f.batchId, records: [], count: 0, bytes: 0 };
          held.set(key, b);
          if (f.kind === 'records') {
            b.records.push(Buffer.from(f.payload.buffer, f.payload.byteOffset, f.payload.byteLength));
            b.count += f.count;
            b.bytes += f.payload.byteLength;
          } else {
            (b.columns ??= []).push({ rows: f.rows, body: Buffer.from(f.body.buffer, f.body.byteOffset, f.body.byteLength) });
            b.count += f.rows;
            b.bytes += f.body.byteLength;
          }
          if (b.bytes > this.maxBatchBytes) {
            held.delete(key);
            const message = `batch ${hex} holds more than ${this.maxBatchBytes} bytes before its eob, the listener's limit`;
            await this.fail(q, { batchId: hex, code: HDWP_ERROR_FRAME_CODES.overloaded, message, node: conn.remote });
            conn.close(new HdwpStreamError('ERR_HDWP_REFUSED', message, { frameCode: HDWP_ERROR_FRAME_CODES.overloaded }));
          }
          return;
        }
        const b = held.get(key);
        held.delete(key);
        if (q.completed.has(hex)) {
          if (f.kind === 'eob') this.counts.duplicateBatches++;
          return;
        }
        if (f.kind === 'bbn') {
          const { code, message } = parseBbnReason(f.reason);
          await this.fail(q, { batchId: hex, code, message, node: conn.remote });
          return;
        }
        if (b?.aggregateError !== undefined) {
          await this.fail(q, { batchId: hex, code: HDWP_ERROR_FRAME_CODES.protocol, message: b.aggregateError, node: conn.remote });
          return;
        }
        q.completed.add(hex);
        q.errors.delete(hex);
        this.counts.batches++;
        this.counts.records += b?.count ?? 0;
        const handled = q.handler({ kind: 'batch', queryId: q.queryId, batchId: f.batchId, recordSize, count: b?.count ?? 0, declaredCount: f.recordCount, records: b?.records ?? [], ...(b?.columns ? { columns: b.columns } : {}), ...(b?.aggregate ? { aggregate: b.aggregate } : {}), node: conn.remote });
        if (handled) await handled;
      },
      onClose: (err) => {
        if (transfer) {
          transfer.span.setAttributes({ 'hd.frames': transfer.frames, 'hd.bytes': transfer.bytes, 'hd.batches_held_at_close': held.size });
          if (err) failSpan(transfer.span, err);
          transfer.span.end(err ? undefined : transfer.last);
        }
        this.counts.partialBatchesDropped += held.size;
        held.clear();
        const q = this.lookup(auth);
        if (q && err instanceof HdwpStreamError && err.code === 'ERR_HDWP_PEER_ERROR' && err.frameCode !== undefined) {
          void Promise.resolve(q.handler({ kind: 'streamError', queryId: q.queryId, code: err.frameCode, message: err.message, node: conn.remote })).catch(() => undefined);
        }
      },
    };
  }

  /**
   * A merged partial (v2, docs/query.md "Merged partials"): one frame completes every batch it lists,
   * the partial going with the first. It must list its own frame's batch first. A batch listed that
   * is already complete here (another replica answered it) cannot be taken out of the sum: all its
   * batches are then duplicates (dropped, as a second eob is) or, when only some are, the others fail
   * (code 1) so the query reports them instead of counting a batch twice.
   */
  private async completeMerged(q: QueryState, partial: AggregatePartial, batches: readonly (readonly [string, number])[], frameId: BatchID, frameHex: string, held: Map<string, HeldBatch>, recordSize: number, node: string): Promise<void> {
    const protocol = HDWP_ERROR_FRAME_CODES.protocol;
    if (batches[0]?.[0] !== frameHex) {
      await this.fail(q, { batchId: frameHex, code: protocol, message: `batch ${frameHex}: a merged partial must list its frame's batch first`, node });
      return;
    }
    // The ids were checked as lower-case hex by parseAggregatePartial: each is its own hex form.
    const listed = batches.map(([hex, recordCount], i): ListedBatch => ({ batchId: i === 0 ? frameId : new BatchID(Buffer.from(hex, 'hex')), recordCount, hex }));
    await this.completeMany(q, listed, held, recordSize, node, partial);
  }

  /**
   * An `eobs` frame (merged rows, docs/query.md "Merged results"): ends every batch it lists, each
   * with what is held under it (the rows of all of them came under the first that matched). Rows
   * held for one batch may be several batches' rows, so the frame counts whole or not at all: when
   * some listed batches are already complete here (another replica answered them), the others fail
   * (code 1) instead of being completed without their rows; when all are, they are duplicates.
   */
  private async completeMany(q: QueryState, batches: readonly { readonly batchId: BatchID; readonly recordCount: number; readonly hex?: string }[], held: Map<string, HeldBatch>, recordSize: number, node: string, partial?: AggregatePartial): Promise<void> {
    const listed: ListedBatch[] = new Array<ListedBatch>(batches.length);
    let answered = 0;
    for (let i = 0; i < batches.length; i++) {
      const b = batches[i] as (typeof batches)[number];
      const hex = b.hex ?? b.batchId.toHex();
      listed[i] = { batchId: b.batchId, recordCount: b.recordCount, hex };
      if (q.completed.has(hex)) answered++;
    }
    // A merged partial carries no rows: anything held under its batches is dropped.
    if (partial && held.size > 0) for (const b of listed) held.delete(`${q.queryId}:${b.hex}`);
    if (answered > 0) {
      this.counts.duplicateBatches += answered;
      for (const b of listed) {
        this.counts.partialBatchesDropped += held.delete(`${q.queryId}:${b.hex}`) ? 1 : 0;
        if (answered === listed.length || q.completed.has(b.hex)) continue;
        await this.fail(q, { batchId: b.hex, code: HDWP_ERROR_FRAME_CODES.protocol, message: `batch ${b.hex}: its merged ${partial ? 'partial' : 'rows'} from ${node} also ${partial ? 'covers' : 'end'} ${answered} batch(es) already answered, so ${partial ? 'it' : 'they'} cannot be counted exactly`, node });
      }
      return;
    }
    for (let i = 0; i < listed.length; i++) {
      const b = listed[i] as ListedBatch;
      let h: HeldBatch | undefined;
      if (held.size > 0) {
        const key = `${q.queryId}:${b.hex}`;
        h = held.get(key);
        held.delete(key);
      }
      q.completed.add(b.hex);
      q.errors.delete(b.hex);
      this.counts.batches++;
      this.counts.records += h?.count ?? 0;
      const handled = q.handler({ kind: 'batch', queryId: q.queryId, batchId: b.batchId, recordSize, count: h?.count ?? 0, declaredCount: b.recordCount, records: h?.records ?? [], ...(h?.columns ? { columns: h.columns } : {}), ...(partial && i === 0 ? { aggregate: partial } : {}), node });
      // A handler that finished at once is not waited for (a tick per batch of a merged frame).
      if (handled) await handled;
    }
  }

  private async fail(q: QueryState, error: BatchError): Promise<void> {
    q.errors.set(error.batchId, error);
    await q.handler({ kind: 'batchError', queryId: q.queryId, error });
  }
}

/** The W3C context of an HDWP trace_context frame, checked as HDQuery's `trace_context`; undefined when it is not (then no span is made). */
function traceContextFromJson(json: string): TraceContext | undefined {
  try {
    return traceContextOf(JSON.parse(json));
  } catch {
    return undefined;
  }
}
