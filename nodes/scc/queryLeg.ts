/**
 * One leg of a query on the SCC (docs/query.md, "What the SCC does", step 5): an HDWP connection to
 * one Storage Node's control port carrying the query with `batch_ids` narrowed to the leg's batches
 * (an idle connection from the SCC's {@link LegConnectionPool} when there is one, handed back once
 * every batch is answered).
 * The node answers one eob or bbn per batch (with the query block) once that batch's results went
 * to the client, or one eobs for several batches it completed together; the leg reports each
 * answer and, once every batch is answered or the connection fails, how it ended — and whether its
 * unanswered batches may go to another replica.
 */
import type tls from 'node:tls';
import { encodeFrame } from '../../engine-rs/hdwp';
import { FrameDecoder } from '../../engine-rs/hdwpDecoder';
import { HdwpError } from '../../engine-rs/hdwpError';
import { HDWP_ERROR_FRAME_CODES, HDWP_VERSION, type Frame } from '../../engine-rs/hdwpFrame';
import { parseBbnReason } from '../../query/batchNotice';
import { isQueryAlreadyRunning } from '../../hdwp/refusals';
import { serializeHdQuery, type HdQuery } from '../../query/hdQuery';
import { sameToken } from '../../query/token';
import { legConnectionKey, type LegConnection, type LegConnectionPool } from './legConnections';
import type { SnTarget } from './settings';
import { dial, dialTls } from '../../transport/processNic';

/** How a leg ended. */
export type LegOutcome =
  /** Every batch of the leg was answered. */
  | { readonly kind: 'done' }
  /**
   * The connection failed or the node refused the query. `retry`: its unanswered batches may go to
   * another replica; `busy`: the node still runs an earlier leg of this query (try it again shortly).
   */
  | { readonly kind: 'failed'; readonly retry: boolean; readonly busy: boolean; readonly code: number; readonly message: string };

/** A node's answer for one batch. */
export type BatchAnswer = { readonly kind: 'eob' } | { readonly kind: 'bbn'; readonly code: number; readonly message: string };

/** Told what a leg hears. */
export interface LegListener {
  answer(leg: QueryLeg, batchHex: string, answer: BatchAnswer): void;
  /** Called once, last. */
  end(leg: QueryLeg, outcome: LegOutcome): void;
}

const EOB: BatchAnswer = { kind: 'eob' };

/** Error frame codes that end a leg without re-routing: another replica would answer the same. */
const FINAL_CODES: readonly number[] = [HDWP_ERROR_FRAME_CODES.unknownQuery, HDWP_ERROR_FRAME_CODES.cancelled, HDWP_ERROR_FRAME_CODES.badQuery];

/** Options of one leg. */
export interface QueryLegOptions {
  readonly node: SnTarget;
  readonly query: HdQuery;
  /** The leg's batches (128 hex digits each). */
  readonly batchIds: readonly string[];
  /**
   * The query frame's JSON for some of its batches (the run's {@link LegQueryJson}, written once per
   * query); absent: `query` narrowed to them is serialised and checked whole.
   */
  readonly queryJson?: (batchIds: readonly string[]) => string;
  /** RECORD_SIZE, sent in hello. */
  readonly recordSize: number;
  readonly listener: LegListener;
  /** Time to connect; default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Mutual TLS to the node (the SCC's identity, linkTls.ts); default: plain TCP. */
  readonly tls?: tls.ConnectionOptions;
  /** Idle connections to take from and hand back to; without one, every leg connects and closes. */
  readonly pool?: LegConnectionPool;
}

/** One connection to one Storage Node for some batches of one query. */
export class QueryLeg {
  /** Batches not answered yet. */
  readonly pending: Set<string>;
  readonly node: SnTarget;
  private conn: LegConnection | undefined;
  /** Set while the leg runs on a pooled connection: connects afresh if that one turns out dead. */
  private retryFresh: (() => void) | undefined;
  /** Whether the node has answered anything of this query on the leg's connection. */
  private heard = false;
  private ended = false;

  /** Nothing happens until {@link start}. */
  constructor(private readonly opts: QueryLegOptions) {
    this.node = opts.node;
    this.pending = new Set(opts.batchIds);
  }

  /** `name (host:port)` of the node's control port. */
  get where(): string {
    return `${this.node.name} (${this.node.host}:${this.node.controlPort})`;
  }

  /** Sends the query frame on an idle pooled connection to the node, or connects and sends hello and the query frame. */
  start(): void {
    const { query } = this.opts;
    let queryFrame: Buffer;
    try {
      const batchIds = [...this.pending];
      const json = this.opts.queryJson ? this.opts.queryJson(batchIds) : serializeHdQuery({ ...query, batchIds });
      queryFrame = encodeFrame({ kind: 'query', queryId: query.queryId, token: query.token, json });
    } catch (err) {
      this.failEncoding(err);
      return;
    }
    const link = this.opts.tls;
    const key = legConnectionKey(this.node, query.dataset, this.opts.recordSize, link);
    // The hello only for a new connection: a pooled one has had its hello.
    const connectFresh = (): void => {
      let hello: Buffer;
      try {
        hello = encodeFrame({ kind: 'hello', version: HDWP_VERSION, role: 'scc', datasetId: query.dataset, recordSize: this.opts.recordSize });
      } catch (err) {
        this.failEncoding(err);
        return;
      }
      this.connect(link, key, Buffer.concat([hello, queryFrame]));
    };
    const pooled = this.opts.pool?.take(key, query.queryId);
    if (!pooled) {
      connectFresh();
      return;
    }
    // A pooled connection the node closed just now fails before anything of this query came back:
    // then, and only then, the leg connects afresh instead of failing over to another replica.
    this.retryFresh = connectFresh;
    this.use(pooled);
    pooled.socket.write(queryFrame);
  }

  /** The query or hello frame could not be written: the leg fails, its batches not re-routed (another replica would fail the same). */
  private failEncoding(err: unknown): void {
    this.finish({ kind: 'failed', retry: false, busy: false, code: HDWP_ERROR_FRAME_CODES.internal, message: `cannot encode the query for ${this.where}: ${(err as Error).message}` });
  }

  /** Sends the cancel frame (the node stops reading) and closes; no outcome is reported after it. */
  cancel(): void {
    const s = this.conn?.socket;
    const wasOpen = !this.ended;
    this.ended = true;
    if (!s || s.destroyed) return;
    if (wasOpen && s.writable) s.end(encodeFrame({ kind: 'cancel', queryId: this.opts.query.queryId, token: this.opts.query.token }));
    else s.end();
    const t = setTimeout(() => s.destroy(), 2000);
    t.unref();
    s.once('close', () => clearTimeout(t));
  }

  /** Moves away from the node (it went down or was quarantined): cancel, then report a retryable failure. */
  abandon(reason: string): void {
    if (this.ended) return;
    this.cancel();
    this.opts.listener.end(this, { kind: 'failed', retry: true, busy: false, code: HDWP_ERROR_FRAME_CODES.internal, message: `${this.where}: ${reason}` });
  }

  /** Connects to the node's control port (mutual TLS when the SCC has an identity) and sends `bytes` (hello and query) once connected. */
  private connect(link: tls.ConnectionOptions | undefined, key: string, bytes: Buffer): void {
    const socket = link ? dialTls({ ...link, host: this.node.host, port: this.node.controlPort }) : dial(this.node.host, this.node.controlPort);
    this.opts.pool?.opened();
    socket.setNoDelay(true);
    socket.setTimeout(this.opts.connectTimeoutMs ?? 5000, () => this.fail(`no connection to ${this.where} within ${this.opts.connectTimeoutMs ?? 5000} ms`));
    // Over TLS the query goes out once the handshake has verified the node.
    socket.once(link ? 'secureConnect' : 'connect', () => {
      socket.setTimeout(0);
      socket.setKeepAlive(true, 30_000);
      socket.write(bytes);
    });
    this.use({ socket, decoder: new FrameDecoder(), key, openedAt: Date.now() });
  }

  /** Makes `conn` this leg's connection. */
  private use(conn: LegConnection): void {
    this.conn = conn;
    conn.lastQueryId = this.opts.query.queryId;
    conn.socket.on('data', this.onSocketData);
    conn.socket.on('error', this.onSocketError);
    conn.socket.on('close', this.onSocketClose);
  }

  /** Lets go of the connection: back to the pool once every batch is answered (`reuse`), else closed. */
  private release(reuse: boolean): void {
    const conn = this.conn;
    if (!conn) return;
    this.conn = undefined;
    conn.socket.off('data', this.onSocketData);
    conn.socket.off('error', this.onSocketError);
    conn.socket.off('close', this.onSocketClose);
    conn.socket.setTimeout(0);
    if (reuse && this.opts.pool) this.opts.pool.give(conn);
    else conn.socket.end();
  }

  private readonly onSocketData = (chunk: Buffer): void => this.onData(chunk);
  private readonly onSocketError = (err: NodeJS.ErrnoException): void => this.lost(`connection to ${this.where} failed: ${err.code ?? err.message}`);
  private readonly onSocketClose = (): void => this.lost(`connection to ${this.where} closed by the node`);

  /** The connection broke: a reused one that carried nothing of this query yet is replaced by a fresh one; otherwise the leg fails. */
  private lost(message: string): void {
    const retry = this.retryFresh;
    if (retry && !this.heard && !this.ended) {
      this.retryFresh = undefined;
      const conn = this.conn;
      this.release(false);
      conn?.socket.destroy();
      retry();
      return;
    }
    this.fail(message);
  }

  private onData(chunk: Buffer): void {
    const conn = this.conn;
    if (this.ended || !conn) return;
    let frames: Frame[];
    try {
      frames = conn.decoder.push(chunk);
    } catch (err) {
      if (!(err instanceof HdwpError)) throw err;
      for (const f of err.frames) this.onFrame(f);
      this.fail(`malformed frame from ${this.where}: ${err.code}: ${err.message}`);
      return;
    }
    for (const f of frames) this.onFrame(f);
  }

  private onFrame(f: Frame): void {
    if (this.ended) return;
    const { query } = this.opts;
    switch (f.kind) {
      case 'hello':
      case 'credit':
        return; // the node's side of the handshake: the SCC sends no records on a query leg
      case 'eob':
      case 'bbn':
      case 'eobs': {
        this.heard = true;
        if (!f.auth || f.auth.queryId !== query.queryId || !sameToken(f.auth.token, query.token)) {
          this.fail(`${f.kind} from ${this.where} without this query's block`);
          return;
        }
        if (f.kind === 'eobs') {
          // Several batches answered at once (a node that completed them together): each as its eob.
          for (const b of f.batches) if (!this.answered(b.batchId.toHex(), EOB)) return;
          return;
        }
        this.answered(f.batchId.toHex(), f.kind === 'eob' ? EOB : { kind: 'bbn', ...parseBbnReason(f.reason) });
        return;
      }
      case 'error': {
        this.heard = true;
        // The node's refusal of a second leg of a query it still runs (hdwp/refusals.ts).
        const busy = isQueryAlreadyRunning(f);
        const retry = busy || !FINAL_CODES.includes(f.code);
        this.release(false);
        this.finish({ kind: 'failed', retry, busy, code: f.code, message: `${this.where}: error ${f.code}: ${f.message}` });
        return;
      }
      default:
        this.fail(`unexpected ${f.kind} frame from ${this.where}`);
    }
  }

  /** Reports one batch's answer (once; a repeat or a batch not on this leg is ignored); false once the leg is done with its last. */
  private answered(hex: string, answer: BatchAnswer): boolean {
    if (this.ended) return false;
    if (!this.pending.delete(hex)) return true;
    this.opts.listener.answer(this, hex, answer);
    if (this.pending.size > 0) return true;
    this.release(true);
    this.finish({ kind: 'done' });
    return false;
  }

  private fail(message: string): void {
    this.conn?.socket.destroy();
    this.finish({ kind: 'failed', retry: true, busy: false, code: HDWP_ERROR_FRAME_CODES.internal, message });
  }

  private finish(outcome: LegOutcome): void {
    if (this.ended) return;
    this.ended = true;
    this.opts.listener.end(this, outcome);
  }
}
