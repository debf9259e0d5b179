/**
 * The `hdwpSource` pipeline source: an {@link HdwpServer} whose connections' frames become
 * `batched-records` elements, merged from every connection (docs/ingest-protocol.md). Credit goes
 * back to a sender only once the pipeline has taken its records, and eob / bbn elements carry an
 * `ack` hook through which the sink answers the sender.
 */
import type { TLSSocket } from 'node:tls';
import { Observable } from 'rxjs';
import type { BatchID } from '../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES, type BbnFrame, type EobFrame, type Frame, type HdwpRole } from '../engine-rs/hdwpFrame';
import { batchKey, cutRecords, recordChunk } from '../stream/chunk';
import type { AckHook, BatchedRecordChunk, ControlElement } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';
import type { ServerLink } from '../net/nodeLinks';
import { HdwpServer, type HdwpConnection } from '../hdwp/hdwpServer';
import { batchErrorFrame } from '../hdwp/hdwpStreamError';

/** Options of {@link hdwpSource}. */
export interface HdwpSourceOptions {
  /** Address to bind; default `0.0.0.0`. */
  readonly host?: string;
  /** Port to bind (0: a free one, told to `onListening`). */
  readonly port: number;
  /** The role answered in hello. */
  readonly role: 'scc' | 'storageNode';
  /** Client roles accepted; default by role (see HdwpServer). */
  readonly roles?: readonly HdwpRole[];
  /** Records frame bytes in flight per connection (HdwpServer's `creditWindow`). */
  readonly creditWindow?: number;
  /** Largest frame payload accepted. */
  readonly maxPayload?: number;
  readonly handshakeTimeoutMs?: number;
  readonly idleTimeoutMs?: number;
  /** The pipeline's pending-work accounting: a records frame's credit returns once at most `maxPending` units are pending. */
  readonly flow?: Flow;
  /** Units of downstream work allowed in flight before a connection's credit is returned (default 2). */
  readonly maxPending?: number;
  /** Counts records: received and sent as each frame's records are emitted; `controls` per eob / bbn; `errors` per broken connection. */
  readonly counters?: StageCounters;
  /** Told why a connection broke (the stream problem, not the data). */
  readonly report?: (message: string) => void;
  /** Told the bound address once listening. */
  readonly onListening?: (address: { host: string; port: number }) => void;
  /**
   * What becomes of the batches a connection had open (records sent, no eob / bbn yet) when it
   * ends, cleanly or not. `keep` (default): nothing is emitted; the batch stays open downstream
   * (on an SCC the batch timeout settles it, and the sender may resume it on a new connection).
   * `discard`: one bbn per such batch is emitted, without `ack` (nobody waits for it), so a
   * Storage Node drops the partial segment at once and a resend starts the batch afresh. A batch
   * another connection has taken over meanwhile (sent records or a close for it) is left alone.
   */
  readonly onDisconnect?: 'keep' | 'discard';
  /** Handed the server's closing (stop accepting, error 9 to every connection) when the source is torn down. */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
  /** Mutual TLS (the node's identity, net/nodeLinks.ts); absent: plain TCP. */
  readonly link?: ServerLink;
}

/** One element type of `batched-records`. */
export type HdwpSourceElement = BatchedRecordChunk | ControlElement;

/**
 * Listens for HDWP ingest streams and emits their records (chunks of at most
 * {@link MAX_CHUNK_BYTES}, each tagged with its batch and the hello's dataset), eob and bbn, in
 * each connection's order. It never completes by itself: unsubscribing (pipeline teardown on
 * SIGINT / SIGTERM) closes the server and its connections. A failure to listen is an error.
 *
 * The eob / bbn elements carry `ack`: `ack({ ok: true })` sends the sender its eob echo (with
 * `closingHash` when the sink gives one) or bbn echo; `ack({ ok: false, code, message })` refuses the
 * batch with an error frame, and the stream goes on. With `onDisconnect: 'discard'`, a connection
 * that ends with batches open is followed by a bbn (no `ack`) for each.
 */
export function hdwpSource(opts: HdwpSourceOptions): Observable<HdwpSourceElement> {
  const flow = opts.flow ?? new Flow();
  const maxPending = opts.maxPending ?? 2;
  const counters = opts.counters ?? new StageCounters('records');
  const discardOnDisconnect = opts.onDisconnect === 'discard';
  return new Observable<HdwpSourceElement>((subscriber) => {
    let active = true;
    /** Which connection last carried each open batch (dataset + batch id), for `onDisconnect: discard`. */
    const owner = new Map<string, number>();

    const ackFor = (conn: HdwpConnection, f: EobFrame | BbnFrame): AckHook => {
      let answered = false;
      return (result) => {
        if (answered) return;
        answered = true;
        let frame: Frame;
        if (!result.ok) frame = batchErrorFrame(f.batchId, result.code, result.message);
        else if (f.kind === 'eob') frame = { kind: 'eob', batchId: f.batchId, recordCount: f.recordCount, closingHash: result.closingHash ?? f.closingHash };
        else frame = { kind: 'bbn', batchId: f.batchId, reason: f.reason };
        conn.send(frame).catch((err: unknown) => {
          // The ack itself could not be encoded (say, a hash over 64 bytes): refuse the batch instead.
          opts.report?.(`connection ${conn.remote}: acknowledging batch ${f.batchId.toHex()} failed: ${String(err)}`);
          void conn.send(batchErrorFrame(f.batchId, HDWP_ERROR_FRAME_CODES.internal, `acknowledgement failed: ${err instanceof Error ? err.message : String(err)}`));
        });
      };
    };

    const emitRecords = (dataset: string, batchId: BatchID, recordSize: number, payload: Uint8Array): void => {
      const all = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
      // Frames may be larger than a pipeline chunk (up to the payload limit): cut at whole records.
      for (const buf of cutRecords(all, recordSize)) {
        if (!active) break;
        const n = buf.length / recordSize;
        counters.received += n;
        counters.sent += n;
        subscriber.next(recordChunk(dataset, recordSize, n, buf, batchId) as BatchedRecordChunk);
      }
    };

    const server = new HdwpServer({
      host: opts.host,
      port: opts.port,
      role: opts.role,
      roles: opts.roles,
      creditWindow: opts.creditWindow,
      maxPayload: opts.maxPayload,
      handshakeTimeoutMs: opts.handshakeTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      ...(opts.link && { tls: opts.link.tls, acceptPeer: (s: TLSSocket) => opts.link?.acceptPeer(s), onTlsRefused: (e: Error, s: TLSSocket) => opts.link?.refused(e, s) }),
      onConnection: (conn) => {
        const dataset = conn.hello.datasetId;
        /** Batches this connection sent records for and has not closed: key → batch id. */
        const open = new Map<string, BatchID>();
        const track = (batchId: BatchID, isOpen: boolean): void => {
          if (!discardOnDisconnect) return;
          const key = batchKey(dataset, batchId);
          if (isOpen) {
            open.set(key, batchId);
            owner.set(key, conn.id);
          } else {
            open.delete(key);
            if (owner.get(key) === conn.id) owner.delete(key);
          }
        };
        return {
          onFrame: async (f) => {
            if (!active) return;
            switch (f.kind) {
              case 'records':
                track(f.batchId, true);
                emitRecords(dataset, f.batchId, f.recordSize, f.payload);
                break;
              case 'eob': {
                track(f.batchId, false);
                const closingHash = f.closingHash.length > 0 ? { closingHash: f.closingHash } : {};
                const digest = f.digest && f.digest.length > 0 ? { digest: f.digest } : {};
                counters.controls++;
                subscriber.next({ kind: 'eob', dataset, batchId: f.batchId, recordCount: f.recordCount, ...closingHash, ...digest, ack: ackFor(conn, f) });
                break;
              }
              case 'bbn':
                track(f.batchId, false);
                counters.controls++;
                subscriber.next({ kind: 'bbn', dataset, batchId: f.batchId, reason: f.reason, cause: 'sender', ack: ackFor(conn, f) });
                break;
              default:
                return;
            }
            // Returning settles the frame: its credit goes back to the sender only once the pipeline has room.
            await flow.whenAtMost(maxPending);
          },
          onClose: (err) => {
            // Called after every frame the connection delivered was handled, so the bbn follows them.
            for (const [key, batchId] of open) {
              if (owner.get(key) !== conn.id) continue;
              owner.delete(key);
              if (!active) continue;
              const why = err ? `: ${err.message}` : ' (closed by the sender)';
              counters.controls++;
              subscriber.next({ kind: 'bbn', dataset, batchId, reason: `connection ${conn.remote} ended with the batch open (on_disconnect: discard)${why}`, cause: 'disconnect' });
            }
            open.clear();
          },
        };
      },
      onError: (_conn, err) => {
        // Our own shutdown is no error of the stream; everything else (a broken peer, a timeout) is.
        if (!active || err.code === 'ERR_HDWP_CLOSED') return;
        counters.errors++;
        opts.report?.(err.message);
      },
    });
    server.listen().then(
      (address) => {
        if (active) opts.onListening?.(address);
      },
      (err: unknown) => {
        if (active) subscriber.error(err);
      },
    );
    return () => {
      active = false;
      const closing = server.close();
      if (opts.trackTeardown) opts.trackTeardown(closing);
      else void closing;
    };
  });
}
