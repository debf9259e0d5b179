/**
 * The `resultStream` sink of a Storage Node's query path (docs/query.md, "Storage Node scan and
 * result streams"): one HDWP stream per query to the query's return address — hello (role Storage
 * Node, with the query block), then per batch its records and one eob or bbn, every frame with the
 * query id and token, within the credit the client's listener grants. A listener that takes a later
 * hello on a connection gets the next query to its address on a connection an earlier query
 * finished with (sinks/resultConnections.ts; docs/hdwp.md, "Reused result streams"). Once a batch's
 * end is written, the same eob / bbn goes back to the SCC on the query's control connection
 * (progress); batches one frame ended together go back as one eobs.
 */
import type tls from 'node:tls';
import { Observable } from 'rxjs';
import { TlsSessionCache } from '../lib/tlsSessions';
import { HDWP_ERROR_FRAME_CODES as CODES, HDWP_MAX_EOBS_BATCHES } from '../engine-rs/hdwpFrame';
import type { BatchID } from '../engine-rs/batchId';
import type { Chunk } from '../stream/chunk';
import { isQueryResult, type QueryResultElement, type QueryResults, type QueryStop } from '../stream/queryElement';
import { StageCounters } from '../stream/stageCounters';
import { HdwpStreamError } from '../hdwp/hdwpStreamError';
import { HdwpClient } from '../hdwp/hdwpClient';
import { ResultConnectionPool, resultConnectionKey, type ResultConnection } from './resultConnections';

export { DEFAULT_RESULT_IDLE_MS, DEFAULT_RESULT_MAX_AGE_MS } from './resultConnections';

/** Default time to connect to a return address and exchange hello. */
export const DEFAULT_RESULT_CONNECT_TIMEOUT_MS = 5000;

/** Options of {@link resultStream}. */
export interface ResultStreamOptions {
  /** Time to connect to a return address and exchange hello; default {@link DEFAULT_RESULT_CONNECT_TIMEOUT_MS}. */
  readonly connectTimeoutMs?: number;
  /** Largest records frame written (header included); default the client's 1 MiB. */
  readonly maxFrameBytes?: number;
  /** Names this node in messages (`return address … is not reachable from node 'sn1'`). */
  readonly nodeName?: string;
  /** `received` / `sent` / `dropped`: records; `controls`: eob + bbn written; `errors`: result streams that failed. */
  readonly counters?: StageCounters;
  /** Result streams that could not be opened or broke. */
  readonly report?: (message: string) => void;
  /** Handed the closing of the streams still open when the sink is torn down. */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
  /**
   * The node's TLS client options (its DMS-CA certificate) for return addresses that ask for
   * mutual TLS (`return_address.tls`); undefined on a node without a certificate, whose queries
   * asking for it then fail naming why.
   */
  readonly tls?: () => tls.ConnectionOptions;
  /** TLS sessions to resume on those streams (one handshake per client listener, not per query); default one cache per sink. */
  readonly tlsSessions?: TlsSessionCache;
  /**
   * How long a finished query's connection is kept for the next query to the same return address
   * (a listener that allows it); default {@link DEFAULT_RESULT_IDLE_MS}; 0: a connection per query.
   */
  readonly idleMs?: number;
  /** Age after which a connection is not reused; default {@link DEFAULT_RESULT_MAX_AGE_MS}. */
  readonly maxAgeMs?: number;
}

/** One query's result stream. */
interface Stream {
  readonly results: QueryResults;
  client?: Promise<HdwpClient>;
  /** The connection under `client`, once it is ready: handed back to the pool when the query ends well. */
  conn?: ResultConnection;
  /** Writes of this query, in order. */
  chain: Promise<void>;
  /** Batch ends (eob / bbn) written. */
  ended: number;
  /** Set once the stream failed or the query stopped: what is still queued is dropped. */
  stopped?: QueryStop;
  done: boolean;
  closing?: Promise<void>;
}

/**
 * Writes each query's results to its return address. Queries are independent: each has its own
 * connection and its own queue of writes, so a slow or vanished client holds back only its own
 * query (through the query's `flow`, which the scan waits on). A stream that cannot be opened or
 * breaks stops its query and is reported to the SCC with an error frame; the node goes on.
 * Completes once its input completed and every stream closed.
 */
export function resultStream(opts: ResultStreamOptions = {}): (input: Observable<Chunk>) => Observable<never> {
  const counters = opts.counters ?? new StageCounters('records');
  const report = opts.report ?? (() => undefined);
  const tlsSessions = opts.tlsSessions ?? new TlsSessionCache();
  const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_RESULT_CONNECT_TIMEOUT_MS;
  const where = opts.nodeName ? ` from node '${opts.nodeName}'` : '';
  return (input) =>
    new Observable<never>((subscriber) => {
      const streams = new Map<QueryResults, Stream>();
      const pool = new ResultConnectionPool({ idleMs: opts.idleMs, maxAgeMs: opts.maxAgeMs });
      let inputDone = false;

      const settle = (): void => {
        if (inputDone && streams.size === 0) subscriber.complete();
      };

      const finish = (s: Stream): void => {
        if (s.done) return;
        s.done = true;
        streams.delete(s.results);
        s.results.query.end();
        // After the write in hand has released its flow unit (its chain's finally runs in later microtasks).
        setImmediate(settle);
      };

      /** Closes a stream that stopped: the client is told why (error frame), the SCC too when the fault is the stream's. */
      const stop = (s: Stream, why: QueryStop, tellScc: boolean): void => {
        // A query that ended has handed its connection on: nothing of it is left to stop.
        if (s.stopped || s.done) return;
        s.stopped = why;
        const q = s.results.query;
        if (tellScc) q.reply({ kind: 'error', code: why.code, message: why.message });
        q.stop(why);
        s.closing = (async () => {
          const client = await s.client?.catch(() => undefined);
          await client?.abort(why.code, why.message).catch(() => undefined);
        })();
        void s.closing.then(() => finish(s));
      };

      const connect = (s: Stream): Promise<HdwpClient> => {
        const q = s.results.query;
        const { host, port, tls: wantsTls } = q.spec.returnAddress;
        if (wantsTls && !opts.tls) {
          return Promise.reject(new StreamFailure(`query ${q.spec.queryId} asks for a mutual-TLS result stream (return_address.tls), and node '${opts.nodeName ?? '?'}' has no certificate: register it with the DMS (DMS_URL)`, undefined));
        }
        if (s.client) return s.client;
        const link = wantsTls && opts.tls ? opts.tls() : undefined;
        const key = resultConnectionKey(q.spec.returnAddress, link);
        const fresh = (): Promise<ResultConnection> =>
          HdwpClient.connect({
            host,
            port,
            role: 'storageNode',
            datasetId: q.spec.dataset,
            recordSize: s.results.recordSize,
            auth: q.auth,
            acks: false,
            connectTimeoutMs,
            maxFrameBytes: opts.maxFrameBytes,
            ...(link && { tls: link, tlsSessions }),
          }).then((client) => ({ client, key, openedAt: Date.now() }));
        const pooled = pool.take(key);
        // A reused connection that fails before the listener answered the hello carried nothing
        // else of this query: it is tried once on a new connection (a listener that refused the
        // query refuses it there too, and that is what the query reports).
        const ready = pooled ? pooled.client.rebind({ auth: q.auth, datasetId: q.spec.dataset, recordSize: s.results.recordSize }, connectTimeoutMs).then(() => pooled, fresh) : fresh();
        s.client = ready.then(async (c) => {
          s.conn = c;
          // A traced query: the client's transfer span becomes a child of this node's scan span.
          const tc = s.results.traceContext;
          if (tc) await c.client.sendTraceContext(JSON.stringify(tc));
          return c.client;
        });
        return s.client;
      };

      /**
       * The query ended with every batch's end written: its connection goes back to the pool (or
       * closes). A query stopped meanwhile is aborting it (the error frame carries this query's
       * block), so that one never goes back.
       */
      const release = (s: Stream, client: HdwpClient): void => {
        if (s.conn && s.conn.client === client && !s.stopped) pool.give(s.conn);
        else void client.close();
      };

      const write = async (s: Stream, el: QueryResultElement): Promise<void> => {
        const q = s.results.query;
        if (s.stopped) {
          if (el.kind === 'records') counters.dropped += el.count;
          if (el.kind === 'columns') counters.dropped += el.rows;
          return;
        }
        if (el.kind === 'bbn' && el.code === CODES.batchUnreadable && !s.client) {
          // "Batch unreadable here" (13) goes to the SCC only (see below): a node that has nothing
          // else for this client yet opens no result stream for it (an absent batch costs no
          // connection to the client; the replica that has the batch, or the SCC, tells the client).
          counters.controls++;
          q.reply({ kind: 'bbn', batchId: el.batchId, reason: el.reason });
          if (++s.ended >= s.results.batches) finish(s);
          return;
        }
        let client: HdwpClient;
        try {
          client = await connect(s);
        } catch (err) {
          if (err instanceof StreamFailure) throw err;
          const { host, port } = q.spec.returnAddress;
          throw new StreamFailure(`return address ${host}:${port} is not reachable${where}: ${(err as Error).message}`, err);
        }
        if (s.stopped) {
          if (el.kind === 'records') counters.dropped += el.count;
          if (el.kind === 'columns') counters.dropped += el.rows;
          return;
        }
        switch (el.kind) {
          case 'records':
            await client.sendRecords(el.batchId, el.buf);
            counters.sent += el.count;
            return;
          case 'columns':
            await client.sendColumns(el.batchId, el.rows, el.body);
            counters.sent += el.rows;
            return;
          case 'aggregate':
            await client.sendAggregate(el.batchId, el.json);
            // A merged partial completes its batches.
            if (el.completes !== undefined) endMany(s, client, el.completes);
            return;
          case 'eobs':
            // Merged rows: one frame ends the batches.
            await client.sendEobs(el.completes);
            endMany(s, client, el.completes);
            return;
          case 'eob':
            await client.sendEob(el.batchId, el.recordCount);
            counters.controls++;
            q.reply({ kind: 'eob', batchId: el.batchId, recordCount: el.recordCount, closingHash: new Uint8Array(0) });
            break;
          case 'bbn':
            // "Batch unreadable here" (13) goes to the SCC only: it asks the next replica, and tells the
            // client itself once none is left, so a client never closes a batch another replica will send.
            if (el.code !== CODES.batchUnreadable) await client.sendBbn(el.batchId, el.reason);
            counters.controls++;
            q.reply({ kind: 'bbn', batchId: el.batchId, reason: el.reason });
            break;
        }
        if (++s.ended >= s.results.batches) {
          release(s, client);
          finish(s);
        }
      };

      /**
       * Batches a frame just handed on ended: they go to the SCC as one eobs (one eob for a single
       * batch), each batch once, exactly as their eobs would; the stream is done after the last.
       */
      const endMany = (s: Stream, client: HdwpClient, completes: readonly { readonly batchId: BatchID; readonly recordCount: number }[]): void => {
        const q = s.results.query;
        counters.controls += completes.length;
        if (completes.length === 1) {
          const c = completes[0] as (typeof completes)[number];
          q.reply({ kind: 'eob', batchId: c.batchId, recordCount: c.recordCount, closingHash: new Uint8Array(0) });
        } else {
          for (let at = 0; at < completes.length; at += HDWP_MAX_EOBS_BATCHES) {
            const part = completes.slice(at, at + HDWP_MAX_EOBS_BATCHES).map((c) => ({ batchId: c.batchId, recordCount: c.recordCount }));
            q.reply({ kind: 'eobs', batches: part });
          }
        }
        s.ended += completes.length;
        if (s.ended >= s.results.batches) {
          release(s, client);
          finish(s);
        }
      };

      const open = (results: QueryResults): Stream => {
        const s: Stream = { results, chain: Promise.resolve(), ended: 0, done: false };
        streams.set(results, s);
        const signal = results.query.signal;
        const onStop = (): void => stop(s, signal.reason as QueryStop, false);
        if (signal.aborted) onStop();
        else signal.addEventListener('abort', onStop, { once: true });
        return s;
      };

      const sub = input.subscribe({
        next: (el) => {
          if (!isQueryResult(el)) {
            subscriber.error(new TypeError(`resultStream takes query results, got a '${el.kind}' element`));
            return;
          }
          const s = streams.get(el.results) ?? open(el.results);
          const flow = el.results.flow;
          flow.begin();
          if (el.kind === 'records') counters.received += el.count;
          if (el.kind === 'columns') counters.received += el.rows;
          s.chain = s.chain
            .then(() => write(s, el))
            .catch((err: unknown) => {
              if (el.kind === 'records') counters.dropped += el.count;
              if (el.kind === 'columns') counters.dropped += el.rows;
              if (s.stopped) return;
              counters.errors++;
              const message = err instanceof StreamFailure ? err.message : `query ${s.results.query.spec.queryId}: the result stream failed: ${(err as Error).message}`;
              report(message);
              const code = err instanceof HdwpStreamError && err.frameCode !== undefined ? err.frameCode : (err as StreamFailure).frameCode ?? CODES.internal;
              stop(s, { code, message }, true);
            })
            .finally(() => flow.end());
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          inputDone = true;
          settle();
        },
      });

      return () => {
        sub.unsubscribe();
        const closing: Promise<void>[] = [];
        for (const s of streams.values()) {
          stop(s, { code: CODES.shuttingDown, message: 'the storage node is shutting down' }, false);
          if (s.closing) closing.push(s.closing);
        }
        closing.push(pool.close());
        opts.trackTeardown?.(Promise.all(closing));
      };
    });
}

/** A result stream could not be opened; carries the error frame code the client sent, if any. */
class StreamFailure extends Error {
  readonly frameCode?: number;

  constructor(message: string, cause: unknown) {
    super(message);
    this.name = 'StreamFailure';
    if (cause instanceof HdwpStreamError && cause.frameCode !== undefined) this.frameCode = cause.frameCode;
  }
}
