/**
 * The `queryListener` pipeline source of a Storage Node (docs/query.md, docs/storage-node.md
 * "Queries"): an HDWP server on the node's command port where SCCs open control connections
 * (hello role `scc`) and send `query` and `cancel` frames. Each valid query becomes one
 * {@link QueryElement}; the per-batch progress (eob / bbn echoes) and query-level errors go back on
 * the same connection, every frame with the query block.
 */
import type { TLSSocket } from 'node:tls';
import { Observable } from 'rxjs';
import type { ServerLink } from '../net/nodeLinks';
import { clipUtf8, HDWP_ERROR_FRAME_CODES as CODES } from '../engine-rs/hdwpFrame';
import type { BbnFrame, CancelFrame, EobFrame, EobsFrame, ErrorFrame, HdwpRole, QueryAuth, QueryFrame } from '../engine-rs/hdwpFrame';
import { querySpecOf } from '../stream/querySpec';
import type { QueryElement, QuerySpec, RunningQuery } from '../stream/queryElement';
import { QueryLifecycle } from '../operators/queryLifecycle';
import { StageCounters } from '../stream/stageCounters';
import { QueryError } from '../query/queryError';
import { sameToken } from '../query/token';
import { HdwpServer, type HdwpConnection } from '../hdwp/hdwpServer';
import { HdwpStreamError } from '../hdwp/hdwpStreamError';
import { queryAlreadyRunning } from '../hdwp/refusals';

/** Default most queries running on a node at once; more are refused with error 6 (overloaded). */
export const DEFAULT_MAX_QUERIES = 256;

/** Options of {@link queryListener}. */
export interface QueryListenerOptions {
  /** Address to bind; default `0.0.0.0`. */
  readonly host?: string;
  /** The command port (0: a free one, told to `onListening`). */
  readonly port: number;
  /** Client roles accepted in hello; default `scc`. */
  readonly roles?: readonly HdwpRole[];
  /** Most queries running at once over all connections; default {@link DEFAULT_MAX_QUERIES}. */
  readonly maxQueries?: number;
  readonly handshakeTimeoutMs?: number;
  /** `controls` counts queries accepted, `errors` queries refused and connections that broke. */
  readonly counters?: StageCounters;
  /** Told of refused queries and broken connections. */
  readonly report?: (message: string) => void;
  /** Told the bound address once listening. */
  readonly onListening?: (address: { host: string; port: number }) => void;
  /** Handed the server's closing when the source is torn down. */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
  /** Mutual TLS (the node's identity, net/nodeLinks.ts); absent: plain TCP. */
  readonly link?: ServerLink;
}

/**
 * Listens for query control connections and emits one {@link QueryElement} per valid query. A bad
 * query gets an error frame with code 11 naming the key (the connection stays open); a cancel stops
 * the query and is answered with error 4 (or 3 when no query matches its id and token). It never
 * completes on its own: unsubscribing stops every running query (code 9) and closes the server.
 */
export function queryListener(opts: QueryListenerOptions): Observable<QueryElement> {
  const counters = opts.counters ?? new StageCounters('records');
  const maxQueries = opts.maxQueries ?? DEFAULT_MAX_QUERIES;
  return new Observable<QueryElement>((subscriber) => {
    let active = true;
    /**
     * Running queries by `<connection>:<id>:<token hex>`. The SCC runs one leg at a time on a control connection,
     * so a second leg of the same query (batches re-routed from another replica) runs beside the first.
     */
    const running = new Map<string, ControlQuery>();
    const connIds = new WeakMap<HdwpConnection, number>();
    let nextConn = 0;
    const keyOf = (conn: HdwpConnection, queryId: number, token: Uint8Array): string => {
      let id = connIds.get(conn);
      if (id === undefined) connIds.set(conn, (id = nextConn++));
      return `${id}:${queryKey(queryId, token)}`;
    };

    const refuse = (conn: HdwpConnection, auth: QueryAuth, code: number, message: string): undefined => {
      counters.errors++;
      opts.report?.(`query ${auth.queryId} from ${conn.remote} refused: ${message}`);
      void conn.send({ kind: 'error', code, message: clipUtf8(message), auth });
      return undefined;
    };

    const onQuery = (conn: HdwpConnection, f: QueryFrame): ControlQuery | undefined => {
      const auth: QueryAuth = { queryId: f.queryId, token: Buffer.from(f.token) };
      let spec: QuerySpec;
      try {
        spec = querySpecOf(f);
      } catch (err) {
        if (!(err instanceof QueryError)) throw err;
        return refuse(conn, auth, CODES.badQuery, err.message);
      }
      const key = keyOf(conn, f.queryId, f.token);
      if (running.has(key)) {
        const r = queryAlreadyRunning(f.queryId);
        return refuse(conn, auth, r.code, r.message);
      }
      if (running.size >= maxQueries) return refuse(conn, auth, CODES.overloaded, `${running.size} queries are running on this node, the limit is ${maxQueries}`);
      const q = new ControlQuery(spec, auth, conn, () => running.delete(key));
      running.set(key, q);
      counters.controls++;
      subscriber.next({ kind: 'query', query: q });
      return q;
    };

    const onCancel = (conn: HdwpConnection, f: CancelFrame): undefined => {
      const q = running.get(keyOf(conn, f.queryId, f.token));
      const auth: QueryAuth = { queryId: f.queryId, token: Buffer.from(f.token) };
      if (!q || !sameToken(q.auth.token, f.token)) return refuse(conn, auth, CODES.unknownQuery, `cancel: no query ${f.queryId} with that token is running on this node`);
      const message = `query ${f.queryId} cancelled`;
      // Acknowledged at once: reading stops within one block step, and no progress follows.
      q.reply({ kind: 'error', code: CODES.cancelled, message });
      q.stop({ code: CODES.cancelled, message });
      return undefined;
    };

    const server = new HdwpServer({
      host: opts.host,
      port: opts.port,
      role: 'storageNode',
      roles: opts.roles ?? ['scc'],
      acceptsQueries: true,
      ...(opts.link && { tls: opts.link.tls, acceptPeer: (s: TLSSocket) => opts.link?.acceptPeer(s), onTlsRefused: (e: Error, s: TLSSocket) => opts.link?.refused(e, s) }),
      handshakeTimeoutMs: opts.handshakeTimeoutMs,
      onConnection: (conn) => {
        const mine = new Set<ControlQuery>();
        return {
          onFrame: (f) => {
            if (!active) return;
            if (f.kind === 'query') {
              const q = onQuery(conn, f);
              if (q) {
                mine.add(q);
                void q.finished.then(() => mine.delete(q));
              }
            } else if (f.kind === 'cancel') {
              onCancel(conn, f);
            } else {
              conn.close(new HdwpStreamError('ERR_HDWP_REFUSED', `${f.kind} frames are not taken on the query port (command_port); ingest goes to production_port`, { frameCode: CODES.protocol }));
            }
          },
          onClose: () => {
            // Nobody could cancel or follow these any more: stop them.
            for (const q of mine) q.stop({ code: CODES.cancelled, message: `the control connection from ${conn.remote} closed` });
          },
        };
      },
      onError: (_conn, err) => {
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
      for (const q of running.values()) q.stop({ code: CODES.shuttingDown, message: 'the storage node is shutting down' });
      const closing = server.close();
      opts.trackTeardown?.(closing);
    };
  });
}

function queryKey(queryId: number, token: Uint8Array): string {
  return `${queryId}:${Buffer.from(token).toString('hex')}`;
}

/** A query that arrived on a control connection. */
class ControlQuery extends QueryLifecycle implements RunningQuery {
  readonly helloRecordSize: number;
  readonly from: string;

  constructor(
    readonly spec: QuerySpec,
    readonly auth: QueryAuth,
    private readonly conn: HdwpConnection,
    private readonly whenEnded: () => void,
  ) {
    super();
    this.helloRecordSize = conn.hello.recordSize;
    this.from = conn.remote;
  }

  reply(frame: EobFrame | EobsFrame | BbnFrame | ErrorFrame): void {
    // After a stop only the error that says why goes out: progress of a stopped query would mislead.
    if (this.ended || (frame.kind !== 'error' && this.signal.aborted)) return;
    const f = frame.kind === 'error' ? { ...frame, message: clipUtf8(frame.message) } : frame;
    void this.conn.send({ ...f, auth: this.auth });
  }

  protected override onEnd(): void {
    this.whenEnded();
  }
}
