/**
 * One accepted HDWP ingest connection on the server side (docs/ingest-protocol.md): decodes the
 * socket's bytes, enforces the stream rules (hello first, the hello's record size, credit), hands
 * frames to the role's handler one at a time in order, and grants credit back as the handler
 * finishes with records frames. A broken stream gets an error frame and is closed; nothing here
 * touches any other connection.
 */
import { corkForTick } from './tickCork';
import type { Socket } from 'node:net';
import { FrameDecoder } from '../engine-rs/hdwpDecoder';
import { HdwpError } from '../engine-rs/hdwpError';
import { HDWP_HEADER_LEN, HDWP_VERSION } from '../engine-rs/hdwpFrame';
import type { AggregateFrame, ColumnsFrame, Frame, HdwpRole, HelloFrame, RecordsFrame } from '../engine-rs/hdwpFrame';
import { encodeFrame } from '../engine-rs/hdwp';
import { HdwpStreamError, STREAM_ERROR_CODES, batchOfError, streamErrorFrame } from './hdwpStreamError';

/** What a server role does with the frames of one connection. */
export interface ConnectionHandler {
  /**
   * Called for each records, eob and bbn frame (and query and cancel frames on a server that
   * accepts queries), in arrival order, never before the previous call
   * settled. The credit a records frame used is granted back only once its promise settles, so a
   * slow handler slows the sender. A throw or rejection closes the connection with error 7.
   */
  onFrame(frame: Frame): Promise<void> | void;
  /** Called once when the connection is over: `err` undefined after a clean close by the peer. */
  onClose?(err?: Error): void;
}

/** The server settings every connection follows. */
export interface ConnectionSettings {
  /** The role this server answers hello with. */
  readonly role: 'scc' | 'storageNode' | 'queryClient';
  /** Client roles accepted in hello. */
  readonly roles: readonly HdwpRole[];
  /** Frame bytes of records a client may have unacknowledged (the initial credit). */
  readonly creditWindow: number;
  /** Largest frame payload accepted. */
  readonly maxPayload: number;
  /** A connection must send hello within this long (0: no limit). */
  readonly handshakeTimeoutMs: number;
  /** A connection with nothing in flight is closed after this long without traffic (0: never). */
  readonly idleTimeoutMs: number;
  /** Query and cancel frames go to the handler (a Storage Node's query listener); otherwise they break the stream. */
  readonly acceptsQueries?: boolean;
  /**
   * A result listener's reusable streams (docs/hdwp.md, "Reused result streams"): the hello reply
   * carries the opener's query block, which tells the opener that a later hello on the same stream
   * starts the next query's results there (the previous query's stream ends, as on a clean close).
   */
  readonly rebind?: boolean;
  /** Builds the handler once hello is valid; throwing refuses the connection (an HdwpStreamError's frame code is sent). */
  onConnection(conn: HdwpConnection): ConnectionHandler;
  /** Told of every connection that ends with an error, whether or not its hello was accepted. */
  onError?(conn: HdwpConnection, err: HdwpStreamError): void;
}

/** Decoded frames waiting for the handler above this many: stop reading the socket. */
const MAX_QUEUED_FRAMES = 1024;
/** How long a closed connection's peer gets to read our error frame before the socket is destroyed. */
const LINGER_MS = 2000;

/**
 * How long an idle connection holds back a grant smaller than a quarter of the window (the sender
 * then still has three quarters of it): the next query's hello usually comes first and carries it.
 * Long enough to span the few statements between two queries of one node's connection (one-batch
 * statements go to one node or the other); at 2 ms the timer fired during the next statement,
 * waking both processes as the immediate grant did.
 */
export const IDLE_GRANT_MS = 20;

/** Frame bytes a records frame spends in credit: header, optional query block, fixed fields, records. */
export function recordsFrameCost(f: RecordsFrame): number {
  return HDWP_HEADER_LEN + (f.auth ? 20 : 0) + 70 + f.payload.length;
}

/** Frame bytes a columns frame spends in credit, as a records frame does: its whole length. */
export function columnsFrameCost(f: ColumnsFrame): number {
  return HDWP_HEADER_LEN + (f.auth ? 20 : 0) + 68 + f.body.length;
}

/** Frame bytes an aggregate frame spends in credit (the sender charges it like records): its whole length. */
export function aggregateFrameCost(f: AggregateFrame): number {
  return HDWP_HEADER_LEN + (f.auth ? 20 : 0) + 64 + Buffer.byteLength(f.json);
}

/** Server side of one HDWP ingest connection. */
export class HdwpConnection {
  /** Hello the peer opened the stream with, or the latest one on a reused result stream (set before the server's `onConnection` runs). */
  hello!: HelloFrame;
  /** Record size of the latest hello admitted (records frames decoded after it must use it; `hello` moves only once it is handled). */
  private recordSize = 0;
  private readonly decoder: FrameDecoder;
  private handler: ConnectionHandler | undefined;
  private readonly queue: Frame[] = [];
  private queuedBytes = 0;
  private busy = false;
  private state: 'hello' | 'open' | 'closed' = 'hello';
  /** Set when the stream broke; reported once the frames before the break were handled. */
  private failure: HdwpStreamError | undefined;
  /** The peer ended its side cleanly. */
  private ended = false;
  private granted = 0;
  private spent = 0;
  private toGrant = 0;
  /** eob / bbn handed to the handler and not yet answered: the sender is waiting, so no idle timeout. */
  private awaitingAnswers = 0;
  private handshakeTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** A small grant held back while the connection is idle ({@link IDLE_GRANT_MS}). */
  private grantTimer: NodeJS.Timeout | undefined;
  private lastActivity = Date.now();
  private closeReason: HdwpStreamError | undefined;
  private socketShut = false;
  /** Resolves once the socket is closed. */
  readonly done: Promise<void>;

  /** Takes over an accepted socket; `id` numbers the server's connections. */
  constructor(
    readonly id: number,
    private readonly socket: Socket,
    private readonly settings: ConnectionSettings,
  ) {
    this.decoder = new FrameDecoder({ maxPayload: settings.maxPayload });
    this.remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    this.done = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.onEnd());
    // A reset or write failure: the peer is gone; frames already decoded are still handled.
    socket.on('error', (err) => this.breakWith(new HdwpStreamError('ERR_HDWP_DISCONNECTED', `connection ${this.remote}: ${err.message}`, { cause: err })));
    socket.on('close', () => {
      // After a clean end the close is expected; frames still queued are handled all the same.
      if (this.state !== 'closed' && !this.ended) this.breakWith(new HdwpStreamError('ERR_HDWP_DISCONNECTED', `connection ${this.remote} closed by the peer`));
    });
    if (settings.handshakeTimeoutMs > 0) {
      this.handshakeTimer = setTimeout(() => {
        const msg = `no hello within ${settings.handshakeTimeoutMs} ms`;
        this.breakWith(new HdwpStreamError('ERR_HDWP_TIMEOUT', msg, { frameCode: STREAM_ERROR_CODES.timeout }));
      }, settings.handshakeTimeoutMs);
    }
  }

  /** The peer's address as `ip:port`. */
  readonly remote: string;

  /** True once the connection is closed (or closing). */
  get closed(): boolean {
    return this.state === 'closed';
  }

  /**
   * Sends a frame to the peer (an eob or bbn acknowledgement, an error frame refusing a batch).
   * Resolves once the bytes are handed to the socket; a frame sent after the connection closed is
   * dropped (the handler's `onClose` has said so) and resolves too. Rejects only for a frame that
   * cannot be encoded (HdwpError).
   */
  send(frame: Frame): Promise<void> {
    if (frame.kind === 'eob' || frame.kind === 'bbn' || (frame.kind === 'error' && batchOfError(frame))) {
      this.awaitingAnswers = Math.max(0, this.awaitingAnswers - 1);
    }
    let bytes: Buffer;
    try {
      bytes = encodeFrame(frame);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.write(bytes);
  }

  /**
   * Closes the connection now, dropping frames not yet handled. With `err`, the peer is sent an
   * error frame first: an HdwpStreamError's `frameCode`, else 7 (internal).
   */
  close(err?: Error): void {
    if (err === undefined) {
      this.finish(undefined, false);
      return;
    }
    const frameCode = err instanceof HdwpStreamError && err.frameCode !== undefined ? err.frameCode : STREAM_ERROR_CODES.internal;
    this.finish(err instanceof HdwpStreamError ? err : new HdwpStreamError('ERR_HDWP_REFUSED', err.message, { frameCode, cause: err }), true);
  }

  private write(bytes: Buffer): Promise<void> {
    if (this.socketShut || this.socket.destroyed || !this.socket.writable) return Promise.resolve();
    this.lastActivity = Date.now();
    corkForTick(this.socket);
    // Resolves on the write callback either way: a failed write also fails the socket, which closes us.
    return new Promise((resolve) => this.socket.write(bytes, () => resolve()));
  }

  private onData(chunk: Buffer): void {
    if (this.state === 'closed' || this.failure) return;
    this.lastActivity = Date.now();
    let frames: Frame[];
    let broken: HdwpError | undefined;
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      if (!(err instanceof HdwpError)) throw err;
      frames = err.frames;
      broken = err;
    }
    for (const f of frames) {
      if (!this.admit(f)) break;
    }
    if (broken && !this.failure) this.refuse(STREAM_ERROR_CODES.protocol, `${broken.code}: ${broken.message}`);
    if (this.failure || this.queuedBytes > this.settings.creditWindow || this.queue.length > MAX_QUEUED_FRAMES) this.socket.pause();
    void this.pump();
  }

  private onEnd(): void {
    if (this.state === 'closed' || this.failure) return;
    try {
      this.decoder.end();
      this.ended = true;
    } catch (err) {
      if (!(err instanceof HdwpError)) throw err;
      // Dropped mid-frame: the frames before it still count; the partial one is reported.
      this.refuse(STREAM_ERROR_CODES.protocol, `${err.code}: ${err.message}`);
    }
    void this.pump();
  }

  /** Queues a frame that spends `cost` bytes of credit; false (the stream broke) when the peer overspent. */
  private charge(f: Frame, cost: number): boolean {
    this.spent += cost;
    if (this.spent > this.granted) {
      return this.refuse(STREAM_ERROR_CODES.creditExceeded, `sent ${this.spent} bytes of records frames, granted ${this.granted}`);
    }
    this.queue.push(f);
    this.queuedBytes += cost;
    return true;
  }

  /** Checks one decoded frame against the stream rules and queues it; false when the stream broke. */
  private admit(f: Frame): boolean {
    if (this.state === 'hello') return this.onHello(f);
    switch (f.kind) {
      case 'records': {
        if (f.recordSize !== this.recordSize) {
          return this.refuse(STREAM_ERROR_CODES.protocol, `records of ${f.recordSize} bytes on a stream opened for ${this.recordSize}-byte records`);
        }
        return this.charge(f, recordsFrameCost(f));
      }
      case 'columns': {
        // Query results only: a columns frame on an ingest stream is a protocol error.
        if (this.settings.role !== 'queryClient') return this.refuse(STREAM_ERROR_CODES.protocol, `unexpected ${f.kind} frame on an ingest stream`);
        return this.charge(f, columnsFrameCost(f));
      }
      case 'aggregate': {
        // Query results only (a batch's partial aggregate), charged like records frames.
        if (this.settings.role !== 'queryClient') return this.refuse(STREAM_ERROR_CODES.protocol, `unexpected ${f.kind} frame on an ingest stream`);
        return this.charge(f, aggregateFrameCost(f));
      }
      case 'eobs':
      case 'traceContext': {
        // Query results only (several batches ended at once; the sender's trace context), uncharged like eob.
        if (this.settings.role !== 'queryClient') return this.refuse(STREAM_ERROR_CODES.protocol, `unexpected ${f.kind} frame on an ingest stream`);
        this.queue.push(f);
        return true;
      }
      case 'eob':
      case 'bbn':
        this.queue.push(f);
        return true;
      case 'query':
      case 'cancel':
        if (!this.settings.acceptsQueries) return this.refuse(STREAM_ERROR_CODES.protocol, `unexpected ${f.kind} frame on an ingest stream`);
        this.queue.push(f);
        return true;
      case 'hello':
        // A reused result stream: the next query's hello, handled in order after the previous query's frames.
        if (!this.settings.rebind) return this.refuse(STREAM_ERROR_CODES.protocol, 'unexpected hello frame on an open stream');
        if (!this.settings.roles.includes(f.role)) {
          return this.refuse(STREAM_ERROR_CODES.unsupported, `role ${f.role} is not accepted by this ${this.settings.role} (accepted: ${this.settings.roles.join(', ')})`);
        }
        this.recordSize = f.recordSize;
        this.queue.push(f);
        return true;
      case 'error': {
        // The peer gives up on the stream: nothing after this is trusted; frames before it are handled.
        this.breakWith(new HdwpStreamError('ERR_HDWP_PEER_ERROR', `peer ${this.remote} sent error ${f.code}: ${f.message}`, { frameCode: f.code }));
        return false;
      }
      default:
        return this.refuse(STREAM_ERROR_CODES.protocol, `unexpected ${f.kind} frame on an ingest stream`);
    }
  }

  private onHello(f: Frame): boolean {
    if (f.kind !== 'hello') return this.refuse(STREAM_ERROR_CODES.protocol, `expected hello first, got ${f.kind}`);
    if (!this.settings.roles.includes(f.role)) {
      return this.refuse(STREAM_ERROR_CODES.unsupported, `role ${f.role} is not accepted by this ${this.settings.role} (accepted: ${this.settings.roles.join(', ')})`);
    }
    clearTimeout(this.handshakeTimer);
    this.hello = f;
    this.recordSize = f.recordSize;
    try {
      this.handler = this.settings.onConnection(this);
    } catch (err) {
      const frameCode = err instanceof HdwpStreamError && err.frameCode !== undefined ? err.frameCode : STREAM_ERROR_CODES.unsupported;
      return this.refuse(frameCode, err instanceof Error ? err.message : String(err));
    }
    this.state = 'open';
    this.granted = this.settings.creditWindow;
    void this.write(Buffer.concat([encodeFrame(this.helloReply(f)), encodeFrame({ kind: 'credit', bytes: this.granted })]));
    this.armIdle();
    return true;
  }

  /** Our hello answering `f`; on a reusable result stream it carries `f`'s query block (the marker, docs/hdwp.md). */
  private helloReply(f: HelloFrame): HelloFrame {
    const reply: HelloFrame = { kind: 'hello', version: HDWP_VERSION, role: this.settings.role, datasetId: f.datasetId, recordSize: f.recordSize };
    if (this.settings.rebind && f.auth) reply.auth = f.auth;
    return reply;
  }

  /**
   * The next query's hello on a reused result stream, in order after every frame before it: the
   * previous query's stream ends (its handler is told as on a clean close) and the new one is
   * accepted or refused like a new connection's hello. Credit goes on across the boundary (what
   * the previous query still has in flight is granted back as it is handled); the answer is our
   * hello alone.
   */
  private rebindTo(f: HelloFrame): void {
    const previous = this.handler;
    this.handler = undefined;
    previous?.onClose?.(undefined);
    this.hello = f;
    try {
      this.handler = this.settings.onConnection(this);
    } catch (err) {
      const frameCode = err instanceof HdwpStreamError && err.frameCode !== undefined ? err.frameCode : STREAM_ERROR_CODES.unsupported;
      const message = `connection ${this.remote}: ${err instanceof Error ? err.message : String(err)}`;
      this.finish(new HdwpStreamError('ERR_HDWP_REFUSED', message, { frameCode }), true);
      return;
    }
    void this.write(encodeFrame(this.helloReply(f)));
  }

  /** The peer broke the stream: it gets the error frame now; frames before the break are still handled. */
  private refuse(frameCode: number, message: string): false {
    this.breakWith(new HdwpStreamError('ERR_HDWP_REFUSED', `connection ${this.remote}: ${message}`, { frameCode }));
    return false;
  }

  /**
   * The stream is broken (by the peer, a timeout or the network): nothing more is read, the socket is
   * shut at once (with an error frame when the fault is the peer's), and the frames decoded before
   * the break still go to the handler; `onClose` follows them.
   */
  private breakWith(err: HdwpStreamError): void {
    if (this.state === 'closed' || this.failure) return;
    this.failure = err;
    this.shut(err, err.code === 'ERR_HDWP_REFUSED' || err.code === 'ERR_HDWP_TIMEOUT');
    void this.pump();
  }

  /** Hands queued frames to the handler one at a time; grants credit as records frames settle. */
  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    while (this.queue.length > 0 && this.state === 'open' && this.handler) {
      const f = this.queue.shift() as Frame;
      if (f.kind === 'hello') {
        this.rebindTo(f);
        // What the previous query's last frames freed is granted now, in the hello reply's write.
        if (this.state !== 'open') break;
        this.grantNow();
        continue;
      }
      const cost = f.kind === 'records' ? recordsFrameCost(f) : f.kind === 'columns' ? columnsFrameCost(f) : f.kind === 'aggregate' ? aggregateFrameCost(f) : 0;
      this.queuedBytes -= cost;
      if (!this.failure && this.socket.isPaused() && this.queuedBytes <= this.settings.creditWindow && this.queue.length <= MAX_QUEUED_FRAMES) this.socket.resume();
      if (f.kind === 'eob' || f.kind === 'bbn') this.awaitingAnswers++;
      try {
        await this.handler.onFrame(f);
      } catch (err) {
        this.busy = false;
        const msg = `handling a ${f.kind} frame failed: ${err instanceof Error ? err.message : String(err)}`;
        this.finish(new HdwpStreamError('ERR_HDWP_REFUSED', msg, { frameCode: STREAM_ERROR_CODES.internal, cause: err }), true);
        return;
      }
      if (this.state !== 'open') break;
      this.toGrant += cost;
      this.grant();
    }
    this.busy = false;
    if (this.state === 'closed' || this.queue.length > 0) return;
    if (this.failure) this.finish(this.failure, false);
    else if (this.ended) this.finish(undefined, false);
  }

  /**
   * Grants what handled frames freed, in a few large steps rather than one credit frame per records
   * frame. Once idle, what is left is granted after {@link IDLE_GRANT_MS}, or at once with the
   * next hello: a query's small result frames would otherwise cost a credit frame each query, a
   * write here and a wake-up of the sender, which still holds at least three quarters of the window.
   */
  private grant(): void {
    if (this.toGrant <= 0 || this.failure) return;
    if (this.toGrant >= this.settings.creditWindow / 4) this.grantNow();
    else if (this.queue.length === 0) {
      this.grantTimer ??= setTimeout(() => {
        this.grantTimer = undefined;
        if (this.state === 'open') this.grantNow();
      }, IDLE_GRANT_MS);
    }
  }

  /** Sends what handled frames freed now, if anything. */
  private grantNow(): void {
    clearTimeout(this.grantTimer);
    this.grantTimer = undefined;
    if (this.toGrant <= 0 || this.failure) return;
    this.granted += this.toGrant;
    const bytes = this.toGrant;
    this.toGrant = 0;
    void this.write(encodeFrame({ kind: 'credit', bytes }));
  }

  private armIdle(): void {
    const ms = this.settings.idleTimeoutMs;
    if (ms <= 0 || this.state !== 'open') return;
    this.idleTimer = setTimeout(() => {
      const quiet = Date.now() - this.lastActivity;
      const inFlight = this.busy || this.queue.length > 0 || this.awaitingAnswers > 0;
      if (inFlight || quiet < ms) {
        this.armIdle();
        return;
      }
      this.breakWith(new HdwpStreamError('ERR_HDWP_TIMEOUT', `idle for ${ms} ms`, { frameCode: STREAM_ERROR_CODES.timeout }));
    }, ms);
    this.idleTimer.unref();
  }

  /** Shuts the socket once: optional error frame, end, and destroy if the peer lingers. */
  private shut(err: HdwpStreamError | undefined, sendError: boolean): void {
    if (this.socketShut) return;
    this.socketShut = true;
    clearTimeout(this.handshakeTimer);
    clearTimeout(this.idleTimer);
    clearTimeout(this.grantTimer);
    const s = this.socket;
    if (s.destroyed) return;
    if (sendError && err && err.frameCode !== undefined && s.writable) s.write(encodeFrame(streamErrorFrame(err.frameCode, err.message)));
    s.end();
    // Keep reading (and dropping) so the peer's FIN arrives; destroy if it never does.
    s.resume();
    const t = setTimeout(() => s.destroy(), LINGER_MS);
    t.unref();
    s.once('close', () => clearTimeout(t));
  }

  /** Ends the connection once: frames not yet handled are dropped, the socket shut, the handler told. */
  private finish(err: HdwpStreamError | undefined, sendError: boolean): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeReason = err;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.shut(err, sendError);
    const h = this.handler;
    this.handler = undefined;
    h?.onClose?.(err);
    if (err) this.settings.onError?.(this, err);
  }

  /** Why the connection closed (undefined: still open, or closed cleanly). */
  get error(): HdwpStreamError | undefined {
    return this.closeReason;
  }
}
