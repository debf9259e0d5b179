/**
 * PlatformQueryClient: the reference's query client (docs/sdk.md). Dispatches HDQueries to an SCC
 * (direct mode) or places them at the HD Proxy (Proxy mode, sdk/proxyClient.ts), receives the Storage Nodes' result streams on its own data-plane listener and decodes them into
 * Arrow — incrementally: each batch is decoded (and handed to `executeStream`'s callback) as it arrives.
 */
import net from 'node:net';
import * as arrow from 'apache-arrow';
import { BatchID, generateBatchIdsTime } from '../engine-rs/batchId';
import { RecordCodec } from '../engine-rs/codec';
import { arrowSchemaFor } from '../engine-rs/decode';
import type { Schema, SchemaJson } from '../engine-rs/schema';
import { DEFAULT_QUERY_GRPC_PORT } from '../query/dispatch/dispatchService';
import { serializeHdQuery, type AggregatePartial, type BatchError, type HdQuery } from '../query/hdQuery';
import type { RegistrationResult } from '../net/registerWithDms';
import { ResultListener } from '../hdwp/resultListener';
import { runGraph } from '../local/graph';
import type { GraphArgsJson } from '../local/graphArgs';
import { LocalAggregations, type LocalAggregationConfig } from '../local/localAggregations';
import { LocalSql } from '../local/localSql';
import { vectorSearch } from '../local/vectorSearch';
import { registerClient } from './registration';
import { QueryAccounting, verdictFromJson, type VerdictMismatch } from './queryAccounting';
import { buildQueryInput } from './queryInput';
import { pushableSubQueries } from './pushableFilters';
import { ControlHeaders, counterText } from './controlHeaders';
import { parseSccTargets, type SccTarget } from './sccTargets';
import { checkProxyUrl, controlCallOptions, discoverTargets, postCancel, postQuery, type ControlTls, type ProxyCallOptions, type ProxyResultEvent } from './proxyClient';
import { runQuery, type BatchCallback, type ExecuteStreamOptions, type QueryCounters, type QueryRoute, type RunOutcome } from './queryRun';
import { inSpan, SpanKind, traceContextOf, type Span } from '../lib/tracing/index';
import type { TLSSocket } from 'node:tls';
import { DispatchChannels } from '../query/dispatch/dispatchChannels';
import { resultListenerTls } from './resultTls';
import { directRoute, dispatchAddressOf, proxyQueryBody, proxyRoute, recordMissing } from './queryRoutes';
import { sccDispatchCredentials } from './grpcCredentials';
import { localAddressToward, urlHostPort } from './returnHost';

export type { BatchCallback, ExecuteStreamOptions } from './queryRun';
export { ProxyError, type ControlTls, type ProxyResultEvent } from './proxyClient';

/** Options beyond the reference's three constructor arguments. */
export interface QueryClientOptions {
  /** Port of the result listener (default 6987, the reference's; 0 picks a free one). */
  readonly listenPort?: number;
  /** Address advertised to Storage Nodes as the return address; default: the interface, or the local address toward the SCC. */
  readonly returnHost?: string;
  /** Log lines (a batch refused, a filter not pushed...); default stderr. */
  readonly log?: (line: string) => void;
  /** TLS of the Proxy calls (CA bundle, client certificate); registerWithDms fills in what is not given. */
  readonly controlTls?: ControlTls;
  /**
   * Mutual TLS toward the SCCs' gRPC port (QueryDispatch): CA bundle, certificate and key. Default:
   * the registerWithDms material; without either, plain gRPC (docs/control-plane.md).
   */
  readonly dispatchTls?: ControlTls;
  /**
   * Listen for results with mutual TLS (sdk/resultTls.ts), presenting `dispatchTls`: Storage
   * Nodes and SCCs then send them with their DMS-CA certificates (`return_address.tls` in every
   * query). Only for a registered cluster: a node without a certificate fails such a query, naming
   * why. Default false (plain result streams).
   */
  readonly resultTls?: boolean;
  /**
   * Receive results on this other client's listener instead of opening one (`listenPort` is then
   * not used). The listener tells queries apart by id and token, so clients sharing it run their
   * queries at the same time, each with its own accounting, on one port. The owner closes it.
   */
  readonly shareListenerOf?: PlatformQueryClient;
}

interface Running {
  readonly query: HdQuery;
  release(reason: 'cancelled' | 'timeout'): void;
}

/**
 * Queries HD: in direct SCC mode (empty `proxyUrl`; targets from `setSccTargets`) queries go to an
 * SCC; in Proxy mode they go to the Proxy, which applies the policy and dispatches (docs/sdk.md).
 * Results stream to this client's listener in both.
 *
 * @example
 * await using q = new PlatformQueryClient('', '', '', { listenPort: 0 });
 * q.loadDatasetSchema(schemaJson);
 * q.setSccTargets([{ host: '127.0.20.1', port: 6987, grpcPort: 6990 }]);
 * const table = await q.executeDataset({ start_time: t0, end_time: t1, sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] });
 * if (q.hadErrors()) console.warn(q.getBatchErrors());
 */
export class PlatformQueryClient {
  private readonly codec = new RecordCodec();
  private targets: SccTarget[] = [];
  private readonly listener: ResultListener;
  private readonly listening: Promise<{ host: string; port: number }>;
  /** Whether the listener speaks mutual TLS (queries then ask for it: `return_address.tls`). */
  private readonly listenerTls: boolean;
  /** The certificate the owned TLS listener presents; a renewed one in `dispatchTls` is swapped in before the next query. */
  private listenerCert: string | undefined;
  /** False when the listener is another client's (shareListenerOf). */
  private readonly ownsListener: boolean;
  private readonly accounting = new QueryAccounting();
  /** gRPC channels to the SCCs, kept open across queries (direct mode). */
  private readonly channels = new DispatchChannels();
  private readonly controlHeaders = new ControlHeaders();
  private readonly log: (line: string) => void;
  private timeoutMs = 0;
  private preparedId: number | undefined;
  private running: Running | undefined;
  private readonly counters: QueryCounters = { queries: 0, batches: 0, records: 0, bytes: 0, batchErrors: 0 };
  /** Node names of the targets, when the Proxy's topology gave them. */
  private targetNames: string[] = [];
  /** Registration material (mutual TLS toward the Proxy). */
  private registered: ControlTls | undefined;
  private error: Error | undefined;
  private stopped = false;
  private local: LocalSql | undefined;
  private aggregations: LocalAggregations | undefined;

  /**
   * @param proxyUrl the HD Proxy; empty selects direct SCC mode (targets from setSccTargets)
   * @param dataPlaneInterface address the result listener binds (and advertises); empty: all
   * @param controlPlaneInterface local address for control-plane requests; empty: any
   */
  constructor(
    readonly proxyUrl = '',
    readonly dataPlaneInterface = '',
    readonly controlPlaneInterface = '',
    private readonly options: QueryClientOptions = {},
  ) {
    if (proxyUrl) checkProxyUrl(proxyUrl);
    this.log = options.log ?? ((l) => process.stderr.write(`hd query client: ${l}\n`));
    const owner = options.shareListenerOf;
    this.ownsListener = owner === undefined;
    if (options.resultTls === true && !owner && !options.dispatchTls) throw new Error('resultTls needs dispatchTls (the CA bundle, certificate and key the listener presents)');
    const listenTls = !owner && options.resultTls === true && options.dispatchTls ? resultListenerTls(options.dispatchTls) : undefined;
    this.listenerTls = owner ? owner.listenerTls : listenTls !== undefined;
    this.listenerCert = listenTls ? options.dispatchTls?.cert : undefined;
    this.listener = owner ? owner.listener : new ResultListener({ host: dataPlaneInterface || '0.0.0.0', port: options.listenPort ?? 6987, ...(listenTls && { tls: listenTls.tls, acceptPeer: (s: TLSSocket) => listenTls.acceptPeer(s) }) });
    this.listening = owner ? owner.listening : this.listener.listen();
    // Surfaces at the first call that needs the listener; here it would be an unhandled rejection.
    this.listening.catch(() => undefined);
  }

  /** Why the last discoverSccTargets returned false. */
  get lastError(): Error | undefined {
    return this.error;
  }

  /** The SCC targets (set, registered or discovered). */
  get sccTargets(): readonly SccTarget[] {
    return this.targets;
  }

  /** Resolves with the listener's address once it listens (rejects if the port is taken). */
  ready(): Promise<{ host: string; port: number }> {
    return this.listening;
  }

  /**
   * Registration v2 with the DMS (docs/control-plane.md): on success the SCC targets and the dataset
   * schema of the answer are loaded. Credentials and CA bundle come from the reference's variables.
   */
  async registerWithDms(dmsUrl: string, nodeName: string, overrideKeyPem = ''): Promise<RegistrationResult> {
    const r = await registerClient(dmsUrl, nodeName, overrideKeyPem);
    if (r.success) {
      this.registered = { ca: r.ca_cert_pem, cert: r.signed_cert_pem, key: r.client_key_pem };
      if (r.scc_targets.length > 0) this.setSccTargets(r.scc_targets);
      if (r.schema_json) this.loadDatasetSchema(r.schema_json);
    }
    return r;
  }

  /** Adds an HTTP header to every later control-plane request (they accumulate). */
  addControlHeader(name: string, value: string): void {
    this.controlHeaders.add(name, value);
  }

  /** Replaces the SCC targets; queries go to the first. */
  setSccTargets(targets: ReadonlyArray<SccTarget | string>): void {
    this.targets = parseSccTargets(targets);
    this.targetNames = [];
  }

  /**
   * Asks the Proxy (`proxyUrl`, default this client's, else HD_PROXY_ENDPOINT) for its topology and
   * takes the primary cluster's SCCs as targets (ours: the reference has it on the ingest client;
   * here it also tells a cancel in Proxy mode where to go). False, with `lastError`, when the Proxy is
   * unreachable, the answer does not parse or names no SCC.
   */
  async discoverSccTargets(proxyUrl = this.proxyUrl || (process.env.HD_PROXY_ENDPOINT ?? '')): Promise<boolean> {
    try {
      const topo = await discoverTargets(proxyUrl, this.proxyCall());
      this.targets = [...topo.targets];
      this.targetNames = [...topo.names];
      this.error = undefined;
      return true;
    } catch (err) {
      this.error = err as Error;
      return false;
    }
  }

  /**
   * Places a query at the Proxy (`POST /v1/query`) and records its verdict (setFilterVerdictJson)
   * and the batches it names (setExpectedBatches). `query` is the HDQuery wire form with the return
   * address and token (generateHdQuery's); a `start`/`end` window may replace `batch_ids`. Rejects
   * with a ProxyError saying what to do when the Proxy refuses. The execute calls do this themselves
   * in Proxy mode; this is for a caller that waits for results by its own route.
   */
  async submitQueryToProxy(query: string | Record<string, unknown>): Promise<ProxyResultEvent> {
    if (!this.proxyUrl) throw new Error('this client is in direct SCC mode (no proxyUrl given to the constructor)');
    let body: Record<string, unknown>;
    try {
      body = (typeof query === 'string' ? JSON.parse(query) : query) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`submitQueryToProxy takes HDQuery JSON (generateHdQuery's): ${(err as Error).message}`);
    }
    const { event, json } = await postQuery(this.proxyUrl, body, this.proxyCall());
    this.setFilterVerdictJson(json);
    this.setExpectedBatches(event.batch_ids);
    recordMissing(this.accounting, event);
    return event;
  }

  /** Loads the dataset schema the results decode with. */
  loadDatasetSchema(schema: Schema | SchemaJson | string): void {
    this.codec.loadDatasetSchema(schema);
  }

  /** The loaded schema, or null. */
  get schema(): Schema | null {
    return this.codec.schema;
  }

  /** One batch id per interval (the schema's unless overridden) covering [start, end], as the reference says. */
  generateBatchIdsTime(startTime: number, endTime: number, intervalOverride = 0): BatchID[] {
    return generateBatchIdsTime(startTime, endTime, intervalOverride || (this.codec.schema?.timeIndexInterval ?? 0));
  }

  /** The HDQuery JSON wire form of `input` (QoS clamped), with this client's return address filled in. */
  async generateHdQuery(input: string | Record<string, unknown>): Promise<string> {
    return serializeHdQuery((await this.build(input)).query);
  }

  /** Resets the accounting (and the verdict) and fixes the next query's id. */
  prepareQuery(queryId: string | number): void {
    const id = typeof queryId === 'number' ? queryId : Number(queryId);
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new RangeError(`query id must be a uint32, got ${JSON.stringify(queryId)}`);
    this.accounting.reset();
    this.preparedId = id;
  }

  /** The batches the query waits for (after a dispatch by your own route returned them). */
  setExpectedBatches(batchIds: readonly string[]): void {
    this.accounting.expect(batchIds);
  }

  /** Records the Proxy's verdict, compared with the batches that delivered records when the query completes. */
  setFilterVerdict(wouldExcludeBatches: readonly string[], bloomrfMode: string): void {
    this.accounting.setVerdict({ wouldExcludeBatches, bloomrfMode });
  }

  /** Takes the Proxy's result event JSON as received; false when it holds no verdict. */
  setFilterVerdictJson(verdictJson: string): boolean {
    const v = verdictFromJson(verdictJson);
    if (v) this.accounting.setVerdict(v);
    return v !== undefined;
  }

  /** Batches excluded by the verdict that delivered records anyway (checked after each query). */
  getVerdictMismatches(): VerdictMismatch[] {
    return this.accounting.verdictMismatches();
  }

  /** Longest wait for a query's batches; 0 (default) waits without limit. On expiry: an empty table, and a cancel at every SCC. */
  setQueryTimeoutMs(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`query timeout must be a whole number of ms ≥ 0, got ${ms}`);
    this.timeoutMs = ms;
  }

  /** Batches that arrived in the last query. */
  getFoundBatchIds(): BatchID[] {
    return this.accounting.foundBatchIds().map((h) => BatchID.fromHex(h));
  }

  /** Expected batches that did not arrive. */
  getMissingBatchIds(): BatchID[] {
    return this.accounting.missingBatchIds().map((h) => BatchID.fromHex(h));
  }

  /**
   * True when the last result is incomplete: a batch failed (bad batch notice, damage, no healthy
   * replica). A batch no node stores — an interval nobody ingested — is missing but not an error.
   */
  hadErrors(): boolean {
    return this.accounting.batchErrors().length > 0;
  }

  /** One entry per failed batch of the last query. */
  getBatchErrors(): BatchError[] {
    return this.accounting.batchErrors();
  }

  /** Cancels the running query (from anywhere): its execute call resolves at once, the SCCs are told to stop. */
  cancelQuery(queryId?: number): boolean {
    const r = this.running;
    if (!r || (queryId !== undefined && r.query.queryId !== queryId)) return false;
    r.release('cancelled');
    return true;
  }

  /** Runs a query and resolves with every batch in one table (empty on timeout or cancel). */
  async executeDataset(query: string | Record<string, unknown>): Promise<arrow.Table> {
    const batches: arrow.RecordBatch[] = [];
    const done = await this.execute(query, (b) => {
      batches.push(b);
    });
    const schema = this.codec.schema as Schema;
    if (done !== 'complete') return new arrow.Table(arrowSchemaFor(schema));
    return batches.length > 0 ? new arrow.Table(batches) : new arrow.Table(arrowSchemaFor(schema));
  }

  /**
   * Runs a query and calls `onBatch` with each batch as it arrives (not after the last one, unlike the reference).
   * `opts.columns` (ours): decode only these fields (schema names, in that order) — the others are
   * never decoded, which is most of a large read's client-side cost; absent: every field. An unknown
   * name rejects with RecordDecodeError `ERR_DECODE_SCHEMA` before the query is placed.
   */
  async executeStream(query: string | Record<string, unknown>, onBatch: BatchCallback, opts: ExecuteStreamOptions = {}): Promise<void> {
    await this.execute(query, onBatch, opts);
  }

  /**
   * Runs the HD query, decodes its records into typed columns and applies `duckdbSql` locally
   * (DuckDB; the dataset is the table named by its id or its name). Empty SQL returns the dataset.
   * A SQL error rejects with DuckDB's message (the reference returns null).
   */
  async executeToSql(query: string | Record<string, unknown>, duckdbSql: string, nativeArgs = '{}'): Promise<arrow.Table> {
    void nativeArgs;
    const table = await this.executeDataset(query);
    return this.aggregate(duckdbSql.trim() === '' ? table : await this.applySql(table, duckdbSql));
  }

  /** Applies SQL to a table already in hand (the second half of executeToSql). */
  applySql(table: arrow.Table, sql: string): Promise<arrow.Table> {
    const schema = this.needSchema();
    return this.localSql().applySql(table, sql, { tableName: schema.id, aliases: schema.name && schema.name !== schema.id ? [schema.name] : [] });
  }

  /** Runs SQL over a zero-record dataset typed by the loaded schema (`count(*)` answers 0). */
  executeSqlOnEmpty(sql: string): Promise<arrow.Table> {
    const schema = this.needSchema();
    return this.localSql().executeSqlOnEmpty(schema, sql, { tableName: schema.id, aliases: schema.name && schema.name !== schema.id ? [schema.name] : [] });
  }

  /** Runs the query and returns the `topK` rows nearest `target` by cosine distance (exact; docs/sdk-local.md). */
  async executeVectorSearch(query: string | Record<string, unknown>, vectorColumn: string, target: readonly number[], topK: number, nativeArgs = '{}'): Promise<arrow.Table> {
    void nativeArgs;
    return vectorSearch(await this.executeDataset(query), vectorColumn, target, topK);
  }

  /** Runs the query and the graph algorithm of `args` over the edges `srcCol → dstCol` of its rows (docs/sdk-local.md). */
  async executeGraph(query: string | Record<string, unknown>, srcCol: string, dstCol: string, args: string | GraphArgsJson = '{}'): Promise<arrow.Table> {
    return runGraph(await this.executeDataset(query), srcCol, dstCol, args);
  }

  /** Group keys and aggregates applied to every later executeToSql result (docs/sdk-local.md); null or '' turns it off. */
  setLocalAggregations(config: string | LocalAggregationConfig | null): void {
    this.aggregations ??= new LocalAggregations(this.localSql());
    this.aggregations.set(config);
  }

  /** `{"status":"ok"|"initializing"|"stopped","timestamp":...}`: initializing until the listener is bound. */
  async getHealthStatus(): Promise<string> {
    const ok = await Promise.race([this.listening.then(() => true, () => false), new Promise<boolean>((r) => setImmediate(() => r(false)))]);
    return JSON.stringify({ status: this.stopped ? 'stopped' : ok ? 'ok' : 'initializing', timestamp: new Date().toISOString() });
  }

  /** Query counters in the Prometheus text format. */
  getMetrics(): string {
    const c = this.counters;
    const rows: [string, string, number][] = [
      ['queries_executed', 'Queries dispatched.', c.queries],
      ['batches_received', 'Batches received complete.', c.batches],
      ['records_received', 'Records received.', c.records],
      ['bytes_received', 'Record bytes received.', c.bytes],
      ['batch_errors', 'Batches that failed delivery.', c.batchErrors],
    ];
    return counterText(rows);
  }

  /** Closes the listener (streams still arriving get an error frame). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.running?.release('cancelled');
    this.channels.close();
    if (this.ownsListener) await this.listening.then(() => this.listener.close(), () => undefined);
    await this.local?.close();
  }

  /** `await using q = new PlatformQueryClient()` stops it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  private needSchema(): Schema {
    const schema = this.codec.schema;
    if (!schema) throw new Error('no dataset schema is loaded (loadDatasetSchema)');
    return schema;
  }

  /** The client's DuckDB (started on first use). */
  private localSql(): LocalSql {
    this.local ??= new LocalSql();
    return this.local;
  }

  private aggregate(table: arrow.Table): Promise<arrow.Table> {
    return this.aggregations?.config ? this.aggregations.apply(table) : Promise.resolve(table);
  }

  private proxyCall(): ProxyCallOptions {
    return controlCallOptions(this.controlHeaders.all, this.options.controlTls, this.registered, this.controlPlaneInterface);
  }

  /** A renewed certificate in `dispatchTls` (its fields may be live views, as hd_sql's are): the owned listener presents it from now on. */
  private refreshListenerTls(): void {
    const m = this.options.dispatchTls;
    if (this.listenerCert === undefined || !m?.cert || m.cert === this.listenerCert) return;
    this.listener.setSecureContext(resultListenerTls(m).tls);
    this.listenerCert = m.cert;
  }

  private async build(input: string | Record<string, unknown>, schema = this.needSchema(), upstreamNamesBatches = false): Promise<{ query: HdQuery; window: { start: number; end: number } | undefined }> {
    if (!this.proxyUrl && this.targets.length === 0) throw new Error('no SCC targets are set (setSccTargets), and no proxyUrl was given');
    const bound = await this.listening;
    this.refreshListenerTls();
    const host = await this.returnHost();
    const built = buildQueryInput(input, { schema, returnAddress: { host, port: bound.port, ...(this.listenerTls && { tls: true }) }, targets: this.targets, upstreamNamesBatches, ...(this.preparedId !== undefined ? { queryId: this.preparedId } : {}) });
    const pushed = pushableSubQueries(schema, built.query.subQueries);
    for (const note of pushed.notes) this.log(`query ${built.query.queryId}: ${note}`);
    return pushed.notes.length === 0 ? built : { ...built, query: { ...built.query, subQueries: pushed.subQueries } };
  }

  /** The address Storage Nodes can reach this listener at. */
  private returnHost(): Promise<string> {
    if (this.options.returnHost) return Promise.resolve(this.options.returnHost);
    if (this.dataPlaneInterface && net.isIP(this.dataPlaneInterface)) return Promise.resolve(this.dataPlaneInterface);
    const t = this.targets[0] as SccTarget;
    const to = this.proxyUrl ? urlHostPort(this.proxyUrl) : { host: t.host, port: t.grpcPort ?? DEFAULT_QUERY_GRPC_PORT };
    return localAddressToward(to.host, to.port);
  }

  /** Where a cancel goes in Proxy mode: the SCC the Proxy named, else every target (the topology's when none are set). */
  private async cancelTargets(scc: string | undefined): Promise<SccTarget[]> {
    if (this.targets.length === 0 && !(await this.discoverSccTargets())) throw new Error(`no SCC to cancel at: ${this.error?.message ?? ''}`);
    const i = scc === undefined ? -1 : this.targetNames.indexOf(scc);
    return i >= 0 ? [this.targets[i] as SccTarget] : [...this.targets];
  }

  /** Direct SCC mode toward `target`, over the channel kept for it (made anew when the certificate changes). */
  private directRoute(target: SccTarget): QueryRoute {
    const tls = this.options.dispatchTls ?? this.registered;
    const identity = tls ? `${tls.cert ?? ''}|${tls.key ? 'key' : ''}|${tls.ca ?? ''}` : '';
    return directRoute(target, this.accounting, this.channels.client(dispatchAddressOf(target), identity, () => {
      const credentials = sccDispatchCredentials(tls);
      return credentials ? { credentials } : {};
    }));
  }

  /** Places the query (at the first SCC, or the Proxy), feeds each arriving batch to `onBatch` and waits for every expected batch. */
  private async execute(input: string | Record<string, unknown>, onBatch: BatchCallback, opts: ExecuteStreamOptions = {}): Promise<RunOutcome> {
    const { columns, aggregate, top, onStreamError } = opts;
    const columnar = opts.columnar === true;
    if (this.stopped) throw new Error('the query client is stopped');
    if (this.running) throw new Error(`query ${this.running.query.queryId} is still running on this client; one query at a time`);
    const prepared = this.preparedId !== undefined;
    // Captured before the first await: a loadDatasetSchema after this call does not change this query.
    const schema = this.needSchema();
    // A bad column list fails here, before anything is placed, not on the first batch.
    if (columns !== undefined) arrowSchemaFor(schema, { fields: columns });
    // In Proxy mode a window goes to the Proxy as it is: the Proxy names the batches that exist in it.
    const { query: built, window } = await this.build(input, schema, this.proxyUrl !== '');
    // Columnar results (ours): the nodes decode and send only the asked columns.
    const shaped: HdQuery = columnar ? { ...built, resultFormat: 'columns', ...(columns !== undefined && { columns }) } : built;
    // Pushed aggregates (ours): partials instead of records; top records (ours): each batch's best only.
    const reduced: HdQuery = aggregate ? { ...shaped, aggregate } : top ? { ...shaped, top } : shaped;
    const query: HdQuery = opts.mergeBatches === true ? { ...reduced, mergeBatches: true } : reduced;
    this.preparedId = undefined;
    if (!prepared) this.accounting.reset();
    const route = this.proxyUrl
      ? proxyRoute({
          submit: (q) => this.submitQueryToProxy(proxyQueryBody(q, window)),
          cancelAtProxy: async (q, scc) => (await postCancel(this.proxyUrl, { query_id: q.queryId, token: Buffer.from(q.token).toString('hex'), ...(scc !== undefined && { scc }) }, this.proxyCall())).scc,
          cancelTargets: (scc) => this.cancelTargets(scc),
          credentials: sccDispatchCredentials(this.options.dispatchTls ?? this.registered),
        })
      : this.directRoute(this.targets[0] as SccTarget);
    // The query's `hd.query` span (docs/observability.md, "Traces"), when the caller registered a tracer provider (startTracing).
    return inSpan('hd.query', (span) => this.runTraced(span, query, route, schema, onBatch, columns, aggregate ? opts.onPartial : undefined, onStreamError), {
      kind: SpanKind.CLIENT,
      attributes: { 'hd.query_id': query.queryId, 'hd.dataset': query.dataset, 'hd.batches': query.batchIds.length, 'hd.route': this.proxyUrl ? 'proxy' : 'scc' },
    });
  }

  /** Runs `untraced` with the active span's trace context in its `trace_context` (none when nothing records). */
  private async runTraced(
    span: Span,
    untraced: HdQuery,
    route: QueryRoute,
    schema: Schema,
    onBatch: BatchCallback,
    columns: readonly string[] | undefined,
    onPartial: ((partial: AggregatePartial, batchId: string) => void | Promise<void>) | undefined,
    onStreamError: ((code: number, message: string, node: string) => void) | undefined,
  ): Promise<RunOutcome> {
    const traceContext = span.isRecording() ? traceContextOf() : undefined;
    const query: HdQuery = traceContext ? { ...untraced, traceContext } : untraced;
    try {
      return await runQuery(
        {
          listener: this.listener,
          accounting: this.accounting,
          counters: this.counters,
          schema,
          ...(columns !== undefined ? { columns } : {}),
          ...(onPartial && { onPartial }),
          ...(onStreamError && { onStreamError }),
          timeoutMs: this.timeoutMs,
          log: this.log,
          onStart: (release) => (this.running = { query, release }),
        },
        query,
        route,
        onBatch,
      );
    } finally {
      this.running = undefined;
    }
  }
}
