/**
 * The sending side of an HDWP ingest stream over TCP (docs/ingest-protocol.md): ingest clients,
 * ingesters and an SCC replicating to its Storage Nodes. It opens the stream with hello, sends
 * records frames only within the credit the server granted (and only as fast as the socket drains),
 * and matches the server's eob / bbn acknowledgements and batch refusals to the calls waiting on them.
 */
import type net from 'node:net';
import type { BatchID } from '../engine-rs/batchId';
import { encodeFrame, encodeRecords } from '../engine-rs/hdwp';
import { FrameDecoder } from '../engine-rs/hdwpDecoder';
import { HdwpError } from '../engine-rs/hdwpError';
import { clipUtf8, HDWP_DEFAULT_MAX_PAYLOAD, HDWP_EOBS_ENTRY_LEN, HDWP_HEADER_LEN, HDWP_MAX_EOBS_BATCHES, HDWP_VERSION } from '../engine-rs/hdwpFrame';
import type { BatchEnd, BbnFrame, EobFrame, EobsFrame, Frame, HelloFrame, QueryAuth, TraceContextFrame } from '../engine-rs/hdwpFrame';
import { AckWaiters } from './hdwpAcks';
import { DEFAULT_CLIENT_FRAME_BYTES, DEFAULT_CONNECT_TIMEOUT_MS, openSocket } from './hdwpClientOptions';
import type { HdwpClientOptions, HdwpClientStats } from './hdwpClientOptions';
import { HdwpStreamError, batchOfError } from './hdwpStreamError';
import { corkForTick } from './tickCork';

export { DEFAULT_CLIENT_FRAME_BYTES, DEFAULT_CONNECT_TIMEOUT_MS } from './hdwpClientOptions';
export type { HdwpClientOptions, HdwpClientStats } from './hdwpClientOptions';

/** Records encoded ahead of the socket per `sendRecords` step, so a huge buffer is not copied at once. */
const SLICE_BYTES = 4 * 1024 * 1024;

interface Outgoing {
  readonly bytes: Buffer;
  /** Credit the frame spends: its length for records frames, 0 for everything else. */
  readonly cost: number;
  /** Told when the bytes were handed to the socket, or why they never will be. */
  readonly done?: (err?: Error) => void;
}

/**
 * A connected HDWP ingest stream. Calls are sent in call order; frames of one batch stay in order.
 *
 * @example
 * const client = await HdwpClient.connect({ host, port, role: 'ingestClient', datasetId: 'flows', recordSize: 64 });
 * await client.sendRecords(batchId, records);             // waits for credit as needed
 * const ack = await client.sendEob(batchId, recordCount); // resolves once the batch is durable
 * await client.close();
 */
export class HdwpClient {
  /** Resolves once the stream is over: undefined after `close()`, the cause otherwise. */
  readonly closed: Promise<Error | undefined>;
  /** The server's hello. */
  serverHello!: HelloFrame;
  private resolveClosed!: (err: Error | undefined) => void;
  private readonly decoder: FrameDecoder;
  private readonly outgoing: Outgoing[] = [];
  private credit = 0;
  private granted = 0;
  private sentBytes = 0;
  private sentFrames = 0;
  private waitingDrain = false;
  private frameBytes = 0;
  /** The stream is over (closed or failed): calls reject, with {@link failure}. */
  private over = false;
  /** Why the stream is over; a function until something asks, so a normal close builds no Error (nobody is told). */
  private cause: Error | (() => Error) | undefined;
  private handshake: { resolve(): void; reject(err: Error): void } | undefined;
  /** A {@link rebind} waits for the server's hello (no credit frame follows it). */
  private rebinding = false;
  private readonly acks = new AckWaiters();
  /** Serialises the send calls so their frames enter the queue in call order. */
  private order: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly socket: net.Socket,
    /** The options, with the hello of the stream's current query ({@link rebind} replaces it). */
    private opts: HdwpClientOptions,
  ) {
    this.decoder = new FrameDecoder({ maxPayload: opts.maxPayload ?? HDWP_DEFAULT_MAX_PAYLOAD });
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => {
      this.waitingDrain = false;
      this.pump();
    });
    socket.on('error', (err) => this.fail(() => new HdwpStreamError('ERR_HDWP_DISCONNECTED', `${this.where}: ${err.message}`, { cause: err })));
    socket.on('close', () => this.fail(() => new HdwpStreamError('ERR_HDWP_DISCONNECTED', `${this.where}: connection closed by the server`)));
  }

  /** Connects, sends hello and waits for the server's hello and initial credit. */
  static connect(opts: HdwpClientOptions): Promise<HdwpClient> {
    if (!Number.isInteger(opts.recordSize) || opts.recordSize < 1 || opts.recordSize > 65535) {
      return Promise.reject(new RangeError(`recordSize must be an integer 1..65535, got ${opts.recordSize}`));
    }
    const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    let hello: Buffer;
    try {
      hello = encodeFrame({ kind: 'hello', version: HDWP_VERSION, role: opts.role, datasetId: opts.datasetId, recordSize: opts.recordSize, auth: opts.auth });
    } catch (err) {
      return Promise.reject(err);
    }
    const client = new HdwpClient(openSocket(opts), opts);
    return client.awaitHello(hello, timeoutMs).then(() => client);
  }

  /** Writes `hello` and resolves once the server's answer completed the handshake (or fails the stream after `timeoutMs`). */
  private awaitHello(hello: Buffer, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(new HdwpStreamError('ERR_HDWP_TIMEOUT', `${this.where}: no HDWP handshake within ${timeoutMs} ms`));
      }, timeoutMs);
      this.handshake = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      this.socket.write(hello);
    });
  }

  /**
   * True when the server said it takes a later hello on this stream (a result listener's hello
   * answer carrying the query block, docs/hdwp.md "Reused result streams"); an older listener's does not.
   */
  get reusable(): boolean {
    return this.serverHello?.auth !== undefined && this.opts.auth !== undefined;
  }

  /** True while the stream is open with nothing queued or in a handshake: it may be handed to the next query. */
  get idle(): boolean {
    return !this.over && !this.handshake && this.outgoing.length === 0 && this.socket.writable && !this.socket.destroyed;
  }

  /**
   * Starts the next query's results on this idle, {@link reusable} stream: sends that query's hello
   * and resolves once the server answered with its hello (the previous query's stream ended there;
   * credit goes on). Every frame sent after it carries `next.auth`. Rejects, and the stream is over,
   * when the server refuses (an error frame: the query is not open there, code 3), closes, or does
   * not answer within `timeoutMs`; nothing but the hello was sent then, so the caller may try a new connection.
   */
  rebind(next: { readonly auth: QueryAuth; readonly datasetId: string; readonly recordSize: number }, timeoutMs = DEFAULT_CONNECT_TIMEOUT_MS): Promise<void> {
    if (this.over) return Promise.reject(this.failure);
    if (!this.reusable || !this.idle) return Promise.reject(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: the stream is not idle and reusable`));
    let hello: Buffer;
    try {
      hello = encodeFrame({ kind: 'hello', version: HDWP_VERSION, role: this.opts.role, datasetId: next.datasetId, recordSize: next.recordSize, auth: next.auth });
    } catch (err) {
      return Promise.reject(err);
    }
    const oneRecord = HDWP_HEADER_LEN + 20 + 70 + next.recordSize;
    if (this.frameBytes < oneRecord) return Promise.reject(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: frames of ${this.frameBytes} bytes cannot hold one ${next.recordSize}-byte record`));
    this.opts = { ...this.opts, auth: next.auth, datasetId: next.datasetId, recordSize: next.recordSize };
    this.rebinding = true;
    return this.awaitHello(hello, timeoutMs);
  }

  /** Credit left: records frame bytes the client may still write before the server grants more. */
  get creditAvailable(): number {
    return this.credit;
  }

  /** What the client has sent and been granted so far. */
  get stats(): HdwpClientStats {
    return { recordsBytesSent: this.sentBytes, recordsFramesSent: this.sentFrames, creditGranted: this.granted };
  }

  /**
   * Sends whole records of one batch as records frames of at most the frame size, each written
   * only once credit allows. Resolves once every frame is handed to the socket; rejects when the
   * stream fails first. `records.length` must be a multiple of the record size.
   */
  sendRecords(batchId: BatchID, records: Uint8Array): Promise<void> {
    const size = this.opts.recordSize;
    if (records.length % size !== 0) {
      return Promise.reject(new RangeError(`records must be whole ${size}-byte records, got ${records.length} bytes`));
    }
    if (records.length === 0) return this.over ? Promise.reject(this.failure) : Promise.resolve();
    const step = Math.max(size, Math.floor(SLICE_BYTES / size) * size);
    return this.serial(async () => {
      let last: Promise<void> = Promise.resolve();
      for (let at = 0; at < records.length; at += step) {
        // One slice encoded ahead of the socket at most: memory stays bounded for any input size.
        await last;
        const bytes = encodeRecords(batchId, size, records.subarray(at, at + step), { maxFrameBytes: this.frameBytes, auth: this.opts.auth });
        last = this.enqueueFrames(bytes);
      }
      return { done: last };
    });
  }

  /**
   * Sends `rows` rows of one batch as one columns frame (`body`: a columnar body, engine-rs/columnar.ts),
   * written once credit allows (it is charged like records frames, its full length). Resolves once
   * handed to the socket; rejects when the stream fails first.
   */
  sendColumns(batchId: BatchID, rows: number, body: Uint8Array): Promise<void> {
    if (rows === 0) return this.over ? Promise.reject(this.failure) : Promise.resolve();
    return this.serial(async () => ({ done: this.enqueueFrames(encodeFrame({ kind: 'columns', batchId, rows, body, auth: this.opts.auth })) }));
  }

  /**
   * Sends one batch's partial aggregate (an aggregate frame, `json`: `{ "v": 1, "groups": [...] }`),
   * in order with the batch's other frames and charged like them. Resolves once handed to the socket.
   */
  sendAggregate(batchId: BatchID, json: string): Promise<void> {
    return this.serial(async () => ({ done: this.enqueueFrames(encodeFrame({ kind: 'aggregate', batchId, json, auth: this.opts.auth })) }));
  }

  /**
   * Closes a batch: sends eob with the record count (and the closing hash, when the sender has
   * one, and the sender's batch digest of every record of the batch, `BatchDigest`) and resolves with
   * the server's acknowledging eob once the batch is durable. Rejects with an HdwpStreamError on an
   * error frame naming the batch (error 14 when what the server holds differs from the count or
   * digest) or when the stream fails.
   */
  sendEob(batchId: BatchID, recordCount: number, closingHash: Uint8Array = new Uint8Array(0), digest?: Uint8Array): Promise<EobFrame> {
    return this.serial(async () => {
      const frame: EobFrame = { kind: 'eob', batchId, recordCount, closingHash, ...(digest && digest.length > 0 ? { digest } : {}), auth: this.opts.auth };
      const bytes = encodeFrame(frame);
      if (this.opts.acks === false) return { done: this.enqueueControl(bytes, frame) };
      const ack = this.acks.waitFor('eob', batchId);
      this.enqueue({ bytes, cost: 0 });
      return { done: ack as Promise<EobFrame> };
    });
  }

  /**
   * Ends several batches at once (result streams, docs/hdwp.md "eobs"): sends eobs frames of at most
   * 65 535 entries each and within the client's frame size, in order with the other frames, uncharged
   * like eob. Resolves once the last frame is handed to the socket (nothing acknowledges eobs); rejects
   * when the stream fails first. A batch named twice, a bad record count, or a frame size too small for
   * one entry is refused before anything is sent. No batches: nothing is sent.
   */
  sendEobs(batches: readonly BatchEnd[]): Promise<void> {
    if (batches.length === 0) return this.over ? Promise.reject(this.failure) : Promise.resolve();
    const seen = new Set<string>();
    for (const b of batches) {
      const hex = b.batchId.toHex();
      if (seen.has(hex)) return Promise.reject(new HdwpError('ERR_HDWP_INVALID_VALUE', `invalid batch id: ${hex} is named twice in one sendEobs`));
      seen.add(hex);
    }
    return this.serial(async () => {
      // Besides its entries a frame holds the header, the query block and the count.
      const overhead = HDWP_HEADER_LEN + (this.opts.auth ? 20 : 0) + 4;
      const perFrame = Math.min(HDWP_MAX_EOBS_BATCHES, Math.floor((this.frameBytes - overhead) / HDWP_EOBS_ENTRY_LEN));
      if (perFrame < 1) {
        throw new HdwpError('ERR_HDWP_TOO_LARGE', `an eobs frame with one batch is ${overhead + HDWP_EOBS_ENTRY_LEN} bytes, over the frame limit of ${this.frameBytes}`);
      }
      // Every frame is encoded (and so checked) before the first is queued: a refusal sends nothing.
      const frames: [Buffer, EobsFrame][] = [];
      for (let at = 0; at < batches.length; at += perFrame) {
        const frame: EobsFrame = { kind: 'eobs', batches: batches.slice(at, at + perFrame), auth: this.opts.auth };
        frames.push([encodeFrame(frame), frame]);
      }
      return { done: Promise.all(frames.map(([bytes, frame]) => this.enqueueControl(bytes, frame))).then(() => undefined) };
    });
  }

  /**
   * Sends the W3C trace context of the sender's span (a trace_context frame, `json`:
   * `{"traceparent": "00-…", "tracestate"?: "…"}`; result streams, right after hello), uncharged, in
   * order with the other frames. Resolves once handed to the socket.
   */
  sendTraceContext(json: string): Promise<void> {
    return this.serial(async () => {
      const frame: TraceContextFrame = { kind: 'traceContext', json, auth: this.opts.auth };
      return { done: this.enqueueControl(encodeFrame(frame), frame).then(() => undefined) };
    });
  }

  /** Voids a batch: sends bbn with the reason and resolves once the server echoes it (or, without acks, once written). */
  sendBbn(batchId: BatchID, reason: string): Promise<void> {
    return this.serial(async () => {
      const frame: BbnFrame = { kind: 'bbn', batchId, reason, auth: this.opts.auth };
      const bytes = encodeFrame(frame);
      if (this.opts.acks === false) return { done: this.enqueueControl(bytes, frame).then(() => undefined) };
      const ack = this.acks.waitFor('bbn', batchId).then(() => undefined);
      this.enqueue({ bytes, cost: 0 });
      return { done: ack };
    });
  }

  /**
   * Ends the stream with an error frame (with the query block on a result stream), e.g. code 4 when
   * a query is cancelled: frames already written stay written, queued ones are dropped and their
   * calls rejected. Resolves once closed.
   */
  async abort(code: number, message: string): Promise<void> {
    if (!this.over && this.socket.writable) this.socket.write(encodeFrame({ kind: 'error', code, message: clipUtf8(message), auth: this.opts.auth }));
    await this.close();
  }

  /**
   * Closes the stream: frames already handed to the socket are flushed, anything still waiting
   * (for credit, for an acknowledgement) is rejected with ERR_HDWP_CLOSED. Resolves once closed.
   */
  async close(): Promise<void> {
    if (!this.over) this.fail(() => new HdwpStreamError('ERR_HDWP_CLOSED', `${this.where}: closed by the client`), true);
    await this.closed;
  }

  /** Why the stream is over (built on first use); undefined while it is open. */
  private get failure(): Error | undefined {
    if (typeof this.cause === 'function') this.cause = this.cause();
    return this.cause;
  }

  private get where(): string {
    return `hdwp ${this.opts.host}:${this.opts.port}`;
  }

  /** Runs `fn` after the previous send call has queued its frames; resolves with what it waits for. */
  private serial<T>(fn: () => Promise<{ done: Promise<T> }>): Promise<T> {
    if (this.over) return Promise.reject(this.failure);
    const queued = this.order.then(() => {
      if (this.over) throw this.failure;
      return fn();
    });
    this.order = queued.catch(() => undefined);
    return queued.then((q) => q.done);
  }

  /** Queues the concatenated records frames of `bytes`; resolves when the last one is written. */
  private enqueueFrames(bytes: Buffer): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      for (let at = 0; at < bytes.length; ) {
        // One step per frame (never per record): each frame's payload length is in its header.
        const len = HDWP_HEADER_LEN + bytes.readUInt32BE(at + 8);
        const last = at + len >= bytes.length;
        this.enqueue({ bytes: bytes.subarray(at, at + len), cost: len, done: last ? (err) => (err ? reject(err) : resolve()) : undefined });
        at += len;
      }
    });
  }

  /** Queues an uncharged frame nobody acknowledges; resolves with it once written. */
  private enqueueControl<F extends Frame>(bytes: Buffer, frame: F): Promise<F> {
    return new Promise<F>((resolve, reject) => this.enqueue({ bytes, cost: 0, done: (err) => (err ? reject(err) : resolve(frame)) }));
  }

  private enqueue(o: Outgoing): void {
    if (this.over) {
      o.done?.(this.failure);
      return;
    }
    this.outgoing.push(o);
    this.pump();
  }

  /** Writes queued frames while credit and the socket allow. */
  private pump(): void {
    if (!this.over && !this.waitingDrain && this.outgoing.length > 0) corkForTick(this.socket);
    while (!this.over && !this.waitingDrain && this.outgoing.length > 0) {
      const o = this.outgoing[0];
      if (o.cost > this.credit) return;
      this.outgoing.shift();
      this.credit -= o.cost;
      if (o.cost > 0) {
        this.sentBytes += o.cost;
        this.sentFrames++;
      }
      const more = this.socket.write(o.bytes);
      if (!more) this.waitingDrain = true;
      // Handed to the socket: the caller goes on (the next frames of this tick leave in the same write);
      // a write that fails later fails the stream, and every call after it rejects.
      o.done?.(undefined);
    }
  }

  private onData(chunk: Buffer): void {
    if (this.over) return;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      if (!(err instanceof HdwpError)) throw err;
      for (const f of err.frames) this.onFrame(f);
      this.fail(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: malformed frame from the server: ${err.code}: ${err.message}`));
      return;
    }
    for (const f of frames) {
      if (this.over) return;
      this.onFrame(f);
    }
  }

  private onFrame(f: Frame): void {
    if (this.rebinding && f.kind === 'hello') {
      const auth = this.opts.auth;
      if (f.datasetId !== this.opts.datasetId || f.recordSize !== this.opts.recordSize || f.auth?.queryId !== auth?.queryId) {
        this.fail(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: expected hello for query ${auth?.queryId ?? '?'} of '${this.opts.datasetId}' (${this.opts.recordSize}-byte records), got query ${f.auth?.queryId ?? 'none'} of '${f.datasetId}' (${f.recordSize}-byte records)`));
        return;
      }
      this.serverHello = f;
      this.rebinding = false;
      const h = this.handshake;
      this.handshake = undefined;
      h?.resolve();
      return;
    }
    if (this.handshake && !this.serverHello) {
      if (f.kind === 'error') {
        this.fail(new HdwpStreamError('ERR_HDWP_PEER_ERROR', `${this.where}: refused: error ${f.code}: ${f.message}`, { frameCode: f.code }));
      } else if (f.kind !== 'hello' || f.datasetId !== this.opts.datasetId || f.recordSize !== this.opts.recordSize) {
        const got = f.kind === 'hello' ? `hello for '${f.datasetId}' (${f.recordSize}-byte records)` : f.kind;
        this.fail(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: expected hello for '${this.opts.datasetId}' (${this.opts.recordSize}-byte records), got ${got}`));
      } else {
        this.serverHello = f;
      }
      return;
    }
    switch (f.kind) {
      case 'credit':
        this.credit += f.bytes;
        this.granted += f.bytes;
        if (this.handshake && !this.rebinding) this.finishHandshake(f.bytes);
        this.pump();
        return;
      case 'eob':
      case 'bbn':
        this.acks.acknowledge(f);
        return;
      case 'error': {
        const batchId = batchOfError(f);
        const err = new HdwpStreamError('ERR_HDWP_PEER_ERROR', `${this.where}: error ${f.code}: ${f.message}`, { frameCode: f.code, batchId });
        if (batchId === undefined) this.fail(err);
        else this.acks.refuse(batchId, err);
        return;
      }
      default:
        this.fail(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: unexpected ${f.kind} frame from the server`));
    }
  }

  private finishHandshake(window: number): void {
    // A frame never exceeds the window, or it could never be sent.
    this.frameBytes = Math.min(this.opts.maxFrameBytes ?? DEFAULT_CLIENT_FRAME_BYTES, window);
    const oneRecord = HDWP_HEADER_LEN + (this.opts.auth ? 20 : 0) + 70 + this.opts.recordSize;
    if (this.frameBytes < oneRecord) {
      // fail() rejects the pending handshake.
      this.fail(new HdwpStreamError('ERR_HDWP_REFUSED', `${this.where}: frames of ${this.frameBytes} bytes cannot hold one ${this.opts.recordSize}-byte record (${oneRecord} bytes)`));
      return;
    }
    const h = this.handshake;
    this.handshake = undefined;
    h?.resolve();
  }

  /**
   * Ends the stream once: everything pending is rejected with `err`; `graceful` ends rather than
   * destroys the socket. `err` may be a function that builds it: then it is built only when
   * someone is told (a graceful close with nothing pending builds no Error, nor its stack).
   */
  private fail(err: Error | (() => Error), graceful = false): void {
    if (this.over) return;
    this.over = true;
    this.cause = err;
    const h = this.handshake;
    this.handshake = undefined;
    if (h) h.reject(this.failure as Error);
    for (const o of this.outgoing.splice(0)) o.done?.(this.failure);
    // Without acks (result streams) nobody waits for an echo.
    if (this.opts.acks !== false) this.acks.rejectAll(this.failure as Error);
    if (graceful) {
      this.socket.end();
      // The server closes its side on our FIN; if it never does, stop waiting.
      const t = setTimeout(() => this.socket.destroy(), 2000);
      t.unref();
      this.socket.once('close', () => clearTimeout(t));
    } else {
      this.socket.destroy();
    }
    if (this.socket.destroyed) this.resolveClosed(graceful ? undefined : this.failure);
    else this.socket.once('close', () => this.resolveClosed(graceful ? undefined : this.failure));
  }
}
