/**
 * PlatformIngestClient: the reference's ingest client (docs/sdk.md), sending records to SCCs over HDWP.
 */
import type tls from 'node:tls';
import * as arrow from 'apache-arrow';
import { BatchID, generateBatchIdNumber, generateBatchIdString, generateBatchIdTime } from '../engine-rs/batchId';
import { RecordCodec } from '../engine-rs/codec';
import { decodeRecordsSync } from '../engine-rs/decode';
import { encodeArrowBatchAsync } from '../engine-rs/encodeArrow';
import { BatchDigest } from '../engine-rs/hashChain';
import type { Schema, SchemaJson } from '../engine-rs/schema';
import { HdwpClient } from '../hdwp/hdwpClient';
import { IngestCounters } from './ingestCounters';
import { registerClient } from './registration';
import { ControlHeaders } from './controlHeaders';
import { parseSccTargets, targetName, type SccTarget } from './sccTargets';
import { controlCallOptions, discoverTargets, type ControlTls } from './proxyClient';

/** Options beyond the reference's two interface arguments. */
export interface IngestClientOptions {
  /** TLS (mutual TLS in a registered cluster) for the data-plane connections. */
  readonly tls?: tls.ConnectionOptions;
  /**
   * Record bytes kept, over all batches whose eob is not acknowledged yet, so that a batch can be
   * re-sent whole after a reconnect; default {@link DEFAULT_MAX_UNACKED_BYTES} (256 MiB). A
   * `streamInsert` that would keep more resolves false without sending anything (`lastError`
   * says so); `sendEob` (acknowledged) and `sendBbn` release a batch's bytes.
   */
  readonly maxUnackedBytes?: number;
  /** Time to connect to an SCC and exchange hello; default 10 s. */
  readonly connectTimeoutMs?: number;
  /** The HD Proxy discoverSccTargets asks (default HD_PROXY_ENDPOINT). */
  readonly proxyUrl?: string;
  /** TLS of the Proxy calls (CA bundle, client certificate); registerWithDms fills in what is not given. */
  readonly controlTls?: ControlTls;
}

/**
 * What `streamInsert` takes: one record, several records, records back to back in one buffer, or an
 * Arrow record batch / table in the schema's column types (the columnar path, encoded natively).
 */
export type IngestRecords = Uint8Array | readonly Uint8Array[] | arrow.RecordBatch | arrow.Table;

/** Default of {@link IngestClientOptions.maxUnackedBytes}: 256 MiB. */
export const DEFAULT_MAX_UNACKED_BYTES = 256 * 1024 * 1024;

/** Reason of the bbn sent before a batch is re-sent whole on a new stream (batch replace, docs/scc.md). */
export const RESEND_REASON = 'ingest client: re-sending the batch whole after a reconnect; discard any partial copy';

const NO_HASH = new Uint8Array(0);

/** One open data-plane stream to one SCC. */
interface TargetStream {
  readonly client: HdwpClient;
}

/**
 * What one SCC target was sent of one batch whose eob is not acknowledged: the records, kept so the
 * batch can be re-sent whole from its first record when its stream is replaced (the SCC restarted
 * or the connection dropped), their count and their running batch digest (engine-rs).
 */
interface BatchLeg {
  readonly chunks: Buffer[];
  count: number;
  digest: BatchDigest;
  /** The digest once finished (at an eob), until more records come. */
  final: Buffer | undefined;
  /** The stream the batch's frames went on; another one means a re-send first. */
  sentOn: TargetStream | undefined;
  /** Something of the batch may have reached some stream (so a new stream starts with a bbn). */
  dirty: boolean;
  /** Serialises this leg's operations in call order. */
  queue: Promise<unknown>;
}

/** A batch not yet acknowledged: its legs by target and the record bytes it keeps. */
interface OpenBatch {
  readonly legs: Map<string, BatchLeg>;
  bytes: number;
}

/**
 * Sends records to SCCs. The send rules are the reference's: every send returns false at once with no
 * SCC targets; `streamInsert` returns false for an empty record; without `broadcast` data goes to the
 * first target only, with it to every target; records_ingested / bytes_ingested count the
 * non-broadcast path only. Sends resolve to false (never throw) on failure; `lastError` says why.
 *
 * @example
 * await using client = new PlatformIngestClient();
 * client.loadDatasetSchema(schemaJson);
 * client.setSccTargets(['127.0.0.1:6987']);
 * const id = client.generateBatchIdTime(t0, t0 + 60);
 * await client.streamInsert(id, client.convertRecordToBinary({ ts: String(t0), proto: 'tcp' }));
 * await client.sendEob(id); // true once every healthy replica has the batch durable
 */
export class PlatformIngestClient {
  private readonly codec = new RecordCodec();
  private targets: SccTarget[] = [];
  private readonly streams = new Map<string, Promise<TargetStream>>();
  private readonly counters = new IngestCounters();
  private readonly arrowPending: Buffer[] = [];
  private readonly controlHeaders = new ControlHeaders();
  /** Batches whose eob is not acknowledged, by batch id (hex). */
  private readonly open = new Map<string, OpenBatch>();
  /** Record bytes kept by {@link open}. */
  private unackedBytes = 0;
  private error: Error | undefined;
  private stopped = false;
  /** Material from registerWithDms: the data-plane connections then run mutual TLS. */
  private registeredTls: tls.ConnectionOptions | undefined;

  /**
   * @param dataPlaneInterface local address for data-plane connections; empty: any
   * @param controlPlaneInterface local address for control-plane requests; empty: any
   */
  constructor(
    readonly dataPlaneInterface = '',
    readonly controlPlaneInterface = '',
    private readonly options: IngestClientOptions = {},
  ) {}

  /** Why the last send returned false (cleared by the next successful send). */
  get lastError(): Error | undefined {
    return this.error;
  }

  /** The SCC targets; the first is primary. */
  get sccTargets(): readonly SccTarget[] {
    return this.targets;
  }

  /** Headers added to every later control-plane request (they accumulate; none can be cleared). */
  get controlPlaneHeaders(): Readonly<Record<string, string>> {
    return this.controlHeaders.all;
  }

  /**
   * Registration v2 with the DMS (docs/control-plane.md): stores the signed certificate and key for
   * the data-plane connections (mutual TLS) and loads the SCC targets and schema of the answer.
   * Returns the client key PEM; empty means failure (`lastError` says why).
   */
  async registerWithDms(dmsUrl: string, nodeName: string, overrideKeyPem = ''): Promise<string> {
    const r = await registerClient(dmsUrl, nodeName, overrideKeyPem);
    if (!r.success) {
      this.error = new Error(r.error_message);
      return '';
    }
    this.registeredTls = { key: r.client_key_pem, cert: r.signed_cert_pem, ca: r.ca_cert_pem };
    if (r.scc_targets.length > 0) this.setSccTargets(r.scc_targets);
    if (r.schema_json) this.loadDatasetSchema(r.schema_json);
    return r.client_key_pem;
  }

  /**
   * Asks the HD Proxy for its topology (`GET {proxyUrl}/v1/topology`, docs/proxy.md) and replaces
   * the SCC targets with the primary cluster's. `proxyUrl` defaults to `options.proxyUrl`, then
   * HD_PROXY_ENDPOINT. The request carries the control headers and, once registered, the client's
   * certificate. False when the Proxy is unreachable, the answer does not parse or names no SCC
   * (`lastError` says which); the targets are then left empty, so every send fails.
   */
  async discoverSccTargets(proxyUrl = this.options.proxyUrl ?? process.env.HD_PROXY_ENDPOINT ?? ''): Promise<boolean> {
    const t = this.registeredTls;
    const registered: ControlTls | undefined = t && { ca: t.ca as string, cert: t.cert as string, key: t.key as string };
    try {
      const topo = await discoverTargets(proxyUrl, controlCallOptions(this.controlHeaders.all, this.options.controlTls, registered, this.controlPlaneInterface));
      this.setSccTargets(topo.targets);
      this.error = undefined;
      return true;
    } catch (err) {
      // The reference: after a failed discovery every send fails.
      this.setSccTargets([]);
      return this.refuse((err as Error).message);
    }
  }

  /** Adds an HTTP header to every later control-plane request. */
  addControlHeader(name: string, value: string): void {
    this.controlHeaders.add(name, value);
  }

  /** Replaces the SCC target list (`host:port` strings or {@link SccTarget}s); the first is primary. */
  setSccTargets(targets: ReadonlyArray<SccTarget | string>): void {
    const parsed = parseSccTargets(targets);
    void this.closeStreams();
    this.targets = parsed;
  }

  /** Loads the dataset schema (a Schema, schema JSON text or object); required before encoding. */
  loadDatasetSchema(schema: Schema | SchemaJson | string): void {
    this.codec.loadDatasetSchema(schema);
    // Streams carry the dataset id and record size in hello: a new schema needs new streams.
    void this.closeStreams();
  }

  /** The loaded schema, or null. */
  get schema(): Schema | null {
    return this.codec.schema;
  }

  /**
   * Writes each value (text, as docs/schema.md says per type) into its field. Keys absent from the
   * schema are skipped; an empty buffer when no schema is loaded. Unlike the reference, the buffer
   * is the caller's to keep.
   */
  convertRecordToBinary(values: Readonly<Record<string, string>> | ReadonlyMap<string, string>): Buffer {
    return this.codec.convertRecordToBinary(values);
  }

  /** Encodes one record and keeps it for {@link flushArrowBatch}; false when no schema is loaded. */
  appendRecordToArrow(values: Readonly<Record<string, string>> | ReadonlyMap<string, string>): boolean {
    if (!this.codec.schema) return false;
    this.arrowPending.push(this.codec.convertRecordToBinary(values));
    return true;
  }

  /** The records appended since the last flush as one Arrow record batch in the schema's types; null when none. */
  flushArrowBatch(): arrow.RecordBatch | null {
    const schema = this.codec.schema;
    if (!schema || this.arrowPending.length === 0) return null;
    const records = Buffer.concat(this.arrowPending.splice(0));
    return decodeRecordsSync(schema, records);
  }

  /** Batch id from a string (first 64 UTF-8 bytes, right-aligned). */
  generateBatchIdString(s: string): BatchID {
    return generateBatchIdString(s);
  }

  /** Batch id from an unsigned 64-bit number (big-endian in the last 8 bytes). */
  generateBatchIdNumber(n: bigint | number): BatchID {
    return generateBatchIdNumber(n);
  }

  /** Batch id of a time window; the interval is the schema's time_index_interval unless overridden. */
  generateBatchIdTime(startTime: number, endTime: number, intervalOverride = 0): BatchID {
    return generateBatchIdTime(startTime, endTime, intervalOverride || (this.codec.schema?.timeIndexInterval ?? 0));
  }

  /**
   * Submits records under `batchId`: one record, an array of records, or whole records back to back
   * in one buffer. Resolves true once the records are handed to every addressed SCC's connection.
   * The records are kept (a copy) until the batch's eob is acknowledged: when a batch's stream is
   * replaced (SCC restart, dropped connection), the next send of the batch first sends a bbn and
   * the kept records again, so the batch reaches the SCC whole. On false the records of this call
   * are not part of the batch (send them again to add them).
   */
  async streamInsert(batchId: BatchID, records: IngestRecords, broadcast = false): Promise<boolean> {
    if (this.targets.length === 0) return this.refuse('no SCC targets are set (setSccTargets or discoverSccTargets)');
    const schema = this.codec.schema;
    if (!schema) return this.refuse('no dataset schema is loaded (loadDatasetSchema)');
    let buf: Buffer;
    if (records instanceof arrow.RecordBatch || records instanceof arrow.Table) {
      if (records.numRows === 0) return this.refuse('empty record batch');
      try {
        buf = await encodeArrowBatchAsync(schema, records);
      } catch (err) {
        return this.refuse(`Arrow batch does not fit dataset ${schema.id}: ${(err as Error).message}`);
      }
    } else if (Array.isArray(records)) {
      buf = Buffer.concat(records as readonly Uint8Array[]);
    } else {
      // A copy: the caller may reuse its buffer, and the batch may have to be re-sent.
      buf = Buffer.from(records as Uint8Array);
    }
    if (buf.length === 0) return this.refuse('empty record');
    if (buf.length % schema.recordSize !== 0) {
      return this.refuse(`records must be whole ${schema.recordSize}-byte records of dataset ${schema.id}, got ${buf.length} bytes`);
    }
    const max = this.options.maxUnackedBytes ?? DEFAULT_MAX_UNACKED_BYTES;
    if (this.unackedBytes + buf.length > max) {
      return this.refuse(
        `batch ${batchId.toHex()}: refused ${buf.length} bytes of records: batches not yet acknowledged already keep ${this.unackedBytes} bytes ` +
          `(kept for a re-send after a reconnect) and the limit is maxUnackedBytes=${max}; close batches (sendEob) or discard them (sendBbn) first, or raise the option`,
      );
    }
    const count = buf.length / schema.recordSize;
    const batch = this.batchOf(batchId);
    batch.bytes += buf.length;
    this.unackedBytes += buf.length;
    let kept = 0;
    const ok = await this.onLegs(batchId, broadcast, async (leg, s) => {
      await this.resume(leg, s, batchId);
      leg.dirty = true;
      await s.client.sendRecords(batchId, buf);
      leg.chunks.push(buf);
      leg.count += count;
      if (leg.final) leg.digest = this.digestOf(leg.chunks.slice(0, -1));
      leg.final = undefined;
      void leg.digest.update(buf);
      kept++;
    });
    if (kept === 0) this.release(batchId.toHex(), buf.length);
    if (ok && !broadcast) this.counters.add(count, buf.length);
    return ok;
  }

  /**
   * Closes a batch; resolves true once the SCC acknowledged it: every healthy replica has the
   * whole batch, as sent, durable. The eob carries the record count and the batch digest of every
   * record sent under `batchId` (on whichever streams), and the SCC refuses it (error 14, batch
   * mismatch) when it holds anything else. A batch whose stream was replaced since its last send
   * is re-sent whole first. On false the batch's records stay kept, so calling `sendEob` again
   * re-sends the batch whole; `sendBbn` discards it.
   */
  async sendEob(batchId: BatchID, broadcast = false): Promise<boolean> {
    if (this.targets.length === 0) return this.refuse('no SCC targets are set');
    const key = batchId.toHex();
    const done: string[] = [];
    const ok = await this.onLegs(batchId, broadcast, async (leg, s, name) => {
      await this.resume(leg, s, batchId);
      leg.dirty = true;
      leg.final ??= await leg.digest.finish();
      await s.client.sendEob(batchId, leg.count, NO_HASH, leg.final);
      done.push(name);
    });
    // Acknowledged legs are done with; a leg that failed keeps its records for a retry.
    const batch = this.open.get(key);
    if (batch) for (const name of done) batch.legs.delete(name);
    this.closeIfDone(key);
    return ok;
  }

  /** Bad Batch Notice: the batch is to be discarded; resolves true once the SCC echoed it. Releases the batch's kept records. */
  async sendBbn(batchId: BatchID, broadcast = false, reason = 'discarded by the ingest client'): Promise<boolean> {
    if (this.targets.length === 0) return this.refuse('no SCC targets are set');
    const key = batchId.toHex();
    const names: string[] = [];
    const ok = await this.onLegs(batchId, broadcast, async (leg, s, name) => {
      names.push(name);
      leg.sentOn = s;
      await s.client.sendBbn(batchId, reason);
    });
    // Discarded either way: a batch the caller gave up on is not re-sent.
    const batch = this.open.get(key);
    if (batch) for (const name of names) batch.legs.delete(name);
    this.closeIfDone(key);
    return ok;
  }

  /** Record bytes kept for batches whose eob is not acknowledged yet (bounded by `maxUnackedBytes`). */
  get unacknowledgedBytes(): number {
    return this.unackedBytes;
  }

  /** `{"status":"ok"|"stopped","timestamp":"<ISO 8601>"}`; the engine is ready once constructed. */
  getHealthStatus(): string {
    return JSON.stringify({ status: this.stopped ? 'stopped' : 'ok', timestamp: new Date().toISOString() });
  }

  /** records_ingested and bytes_ingested in the Prometheus text format. */
  getMetrics(): string {
    return this.counters.text();
  }

  /** Closes every data-plane connection (batches not ended stay open at the SCC until its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.open.clear();
    this.unackedBytes = 0;
    await this.closeStreams();
  }

  /** `await using client = new PlatformIngestClient()` stops it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  private refuse(message: string): false {
    this.error = new Error(message);
    return false;
  }

  private batchOf(batchId: BatchID): OpenBatch {
    const key = batchId.toHex();
    let b = this.open.get(key);
    if (!b) {
      b = { legs: new Map(), bytes: 0 };
      this.open.set(key, b);
    }
    return b;
  }

  /** Gives back `bytes` of a batch's kept records. */
  private release(key: string, bytes: number): void {
    const b = this.open.get(key);
    if (!b) return;
    b.bytes -= bytes;
    this.unackedBytes -= bytes;
    this.closeIfDone(key);
  }

  /** Forgets a batch once no target has anything of it pending. */
  private closeIfDone(key: string): void {
    const b = this.open.get(key);
    if (!b || [...b.legs.values()].some((l) => l.dirty || l.count > 0)) return;
    this.unackedBytes -= b.bytes;
    this.open.delete(key);
  }

  /** A digest of `chunks` (one native call per chunk, never per record). */
  private digestOf(chunks: readonly Buffer[]): BatchDigest {
    const d = new BatchDigest();
    for (const c of chunks) void d.update(c);
    return d;
  }

  /**
   * Before a batch's next frame on stream `s`: when its earlier frames went on another stream (now
   * gone), whatever reached the SCC of it is discarded with a bbn (batch replace, docs/scc.md) and
   * the kept records are sent again from the first, so the batch continues whole on `s`.
   */
  private async resume(leg: BatchLeg, s: TargetStream, batchId: BatchID): Promise<void> {
    if (leg.sentOn === s) return;
    if (leg.dirty) {
      await s.client.sendBbn(batchId, RESEND_REASON);
      for (const c of leg.chunks) await s.client.sendRecords(batchId, c);
    }
    leg.sentOn = s;
  }

  /**
   * Runs `op` for `batchId` on the primary (or every target), each target's in call order after
   * the batch's earlier operations there; resolves true when all succeeded.
   */
  private onLegs(batchId: BatchID, broadcast: boolean, op: (leg: BatchLeg, s: TargetStream, target: string) => Promise<void>): Promise<boolean> {
    const batch = this.batchOf(batchId);
    return this.toTargets(broadcast, (t) => {
      const name = targetName(t);
      let leg = batch.legs.get(name);
      if (!leg) {
        leg = { chunks: [], count: 0, digest: new BatchDigest(), final: undefined, sentOn: undefined, dirty: false, queue: Promise.resolve() };
        batch.legs.set(name, leg);
      }
      const l = leg;
      const run = l.queue.then(async () => {
        const s = await this.stream(t);
        try {
          await op(l, s, name);
        } catch (err) {
          // Whatever the stream got of this operation is unknown: the next one starts afresh.
          l.sentOn = undefined;
          throw err;
        }
      });
      l.queue = run.catch(() => undefined);
      return run;
    });
  }

  /** Runs `send` on the primary (or every target) and resolves true when all succeeded. */
  private async toTargets(broadcast: boolean, send: (t: SccTarget) => Promise<void>): Promise<boolean> {
    if (this.stopped) return this.refuse('the client is stopped');
    const chosen = broadcast ? this.targets : this.targets.slice(0, 1);
    const results = await Promise.allSettled(chosen.map((t) => send(t)));
    const failed = results.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) {
      const t = chosen[failed] as SccTarget;
      const reason = (results[failed] as PromiseRejectedResult).reason as Error;
      this.drop(t);
      return this.refuse(`SCC ${targetName(t)}: ${reason.message}`);
    }
    this.error = undefined;
    return true;
  }

  private stream(t: SccTarget): Promise<TargetStream> {
    const key = targetName(t);
    let s = this.streams.get(key);
    if (!s) {
      const schema = this.codec.schema as Schema;
      s = HdwpClient.connect({
        host: t.host,
        port: t.port,
        role: 'ingestClient',
        datasetId: schema.id,
        recordSize: schema.recordSize,
        ...(this.options.tls ?? this.registeredTls ? { tls: this.options.tls ?? this.registeredTls } : {}),
        ...(this.options.connectTimeoutMs ? { connectTimeoutMs: this.options.connectTimeoutMs } : {}),
      }).then((client) => {
        // A stream that ends (SCC restart, error frame) is replaced on the next send.
        void client.closed.then(() => this.streams.get(key) === s && this.streams.delete(key));
        return { client };
      });
      s.catch(() => this.streams.get(key) === s && this.streams.delete(key));
      this.streams.set(key, s);
    }
    return s;
  }

  private drop(t: SccTarget): void {
    const key = targetName(t);
    const s = this.streams.get(key);
    this.streams.delete(key);
    void s?.then((x) => x.client.close()).catch(() => undefined);
  }

  private async closeStreams(): Promise<void> {
    const all = [...this.streams.values()];
    this.streams.clear();
    await Promise.allSettled(all.map(async (s) => (await s).client.close()));
  }
}
