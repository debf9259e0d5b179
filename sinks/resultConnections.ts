/**
 * Idle result connections a Storage Node keeps to its clients' result listeners, so a query does
 * not connect (and, under mutual TLS, handshake) to the return address again: a listener that says
 * it takes a later hello on a stream (docs/hdwp.md, "Reused result streams") gets the next query to
 * the same address as that query's hello on a connection an earlier query finished with. The ideas
 * are the SCC's idle query legs (nodes/scc/legConnections.ts): keyed by the address and the
 * certificate the node presents, closed after `idleMs` unused or once `maxAgeMs` old (a revoked or
 * renewed certificate on either side meets a fresh handshake within that), dropped on any error.
 */
import type tls from 'node:tls';
import { certKey } from '../lib/tlsSessions';
import type { HdwpClient } from '../hdwp/hdwpClient';

/** Default time an unused result connection stays open (RESULT_CONN_IDLE_MS). */
export const DEFAULT_RESULT_IDLE_MS = 10_000;
/** Default age after which a result connection is not reused (a fresh handshake checks certificates again). */
export const DEFAULT_RESULT_MAX_AGE_MS = 60_000;
/** Idle connections kept per return address at most (one per query running at once to it is plenty). */
const MAX_IDLE_PER_KEY = 8;

/** Options of {@link ResultConnectionPool}. */
export interface ResultConnectionPoolOptions {
  /** Time an unused connection stays open; default {@link DEFAULT_RESULT_IDLE_MS}; 0 keeps none (a connection per query, as before). */
  readonly idleMs?: number;
  /** Age after which a connection is closed instead of reused; default {@link DEFAULT_RESULT_MAX_AGE_MS}. */
  readonly maxAgeMs?: number;
}

/** A connection and when it was opened. */
export interface ResultConnection {
  readonly client: HdwpClient;
  readonly key: string;
  /** When it was opened (ms since the epoch). */
  readonly openedAt: number;
}

interface Idle {
  readonly conn: ResultConnection;
  readonly timer: NodeJS.Timeout;
}

/** What a pooled connection is for: the return address, plain or TLS, and the certificate the node presented. */
export function resultConnectionKey(address: { readonly host: string; readonly port: number }, link: tls.ConnectionOptions | undefined): string {
  return `${address.host}|${address.port}|${link === undefined ? 'plain' : `tls ${certKey(link.cert)}`}`;
}

/** Keeps idle result connections; see the module doc. */
export class ResultConnectionPool {
  private readonly idle = new Map<string, Idle[]>();
  private readonly idleMs: number;
  private readonly maxAgeMs: number;
  /** The pool entry of each idle client, and the clients whose close is watched (once each, however often reused). */
  private readonly entries = new WeakMap<HdwpClient, Idle>();
  private readonly watched = new WeakSet<HdwpClient>();
  private counts = { reused: 0, returned: 0, closedIdle: 0 };
  private closed = false;

  /** @param opts idle and age limits */
  constructor(opts: ResultConnectionPoolOptions = {}) {
    this.idleMs = opts.idleMs ?? DEFAULT_RESULT_IDLE_MS;
    this.maxAgeMs = opts.maxAgeMs ?? DEFAULT_RESULT_MAX_AGE_MS;
    if (!Number.isSafeInteger(this.idleMs) || this.idleMs < 0) throw new RangeError(`idleMs must be a whole number of ms >= 0, got ${this.idleMs}`);
    if (!Number.isSafeInteger(this.maxAgeMs) || this.maxAgeMs < 1) throw new RangeError(`maxAgeMs must be a whole number of ms >= 1, got ${this.maxAgeMs}`);
  }

  /** Counters for tests and /health: connections taken for a query, handed back, closed while idle; idle now. */
  get stats(): { reused: number; returned: number; closedIdle: number; idle: number } {
    let idle = 0;
    for (const l of this.idle.values()) idle += l.length;
    return { ...this.counts, idle };
  }

  /**
   * An idle connection for `key`, taken out of the pool (the newest first); undefined when none.
   * One the listener closed meanwhile was dropped when it closed; one past its age is closed here.
   */
  take(key: string): ResultConnection | undefined {
    const list = this.idle.get(key);
    while (list && list.length > 0) {
      const e = list.pop() as Idle;
      if (list.length === 0) this.idle.delete(key);
      clearTimeout(e.timer);
      this.entries.delete(e.conn.client);
      if (!e.conn.client.idle || Date.now() - e.conn.openedAt >= this.maxAgeMs) {
        void e.conn.client.close();
        continue;
      }
      this.counts.reused++;
      return e.conn;
    }
    return undefined;
  }

  /**
   * Takes a connection back once its query ended with every batch's end written. Closed instead
   * when it cannot carry another query (an older listener, something still queued, broken, old, or
   * the pool is full or closed). While idle, the listener's late credit frames are read as usual;
   * an error frame, a malformed frame or a close ends it and drops it from the pool.
   */
  give(conn: ResultConnection): void {
    const { client } = conn;
    const age = Date.now() - conn.openedAt;
    const list = this.idle.get(conn.key) ?? [];
    if (this.closed || this.idleMs <= 0 || !client.reusable || !client.idle || age >= this.maxAgeMs || list.length >= MAX_IDLE_PER_KEY) {
      void client.close();
      return;
    }
    const timer = setTimeout(
      () => {
        if (this.remove(e)) {
          this.entries.delete(client);
          this.counts.closedIdle++;
          void client.close();
        }
      },
      Math.min(this.idleMs, this.maxAgeMs - age),
    );
    timer.unref();
    const e: Idle = { conn, timer };
    list.push(e);
    this.idle.set(conn.key, list);
    this.counts.returned++;
    this.entries.set(client, e);
    if (this.watched.has(client)) return;
    this.watched.add(client);
    // Closed by the listener (or broken) while idle: out of the pool at once.
    void client.closed.then(() => {
      const idle = this.entries.get(client);
      if (idle && this.remove(idle)) clearTimeout(idle.timer);
    });
  }

  /** Closes every idle connection; later {@link give}s close theirs at once. */
  close(): Promise<void> {
    this.closed = true;
    const closing: Promise<void>[] = [];
    for (const list of this.idle.values()) {
      for (const e of list) {
        clearTimeout(e.timer);
        closing.push(e.conn.client.close());
      }
    }
    this.idle.clear();
    return Promise.all(closing).then(() => undefined);
  }

  /** Takes `e` out of the pool; false when it was not there (taken, closed). */
  private remove(e: Idle): boolean {
    const l = this.idle.get(e.conn.key);
    const i = l ? l.indexOf(e) : -1;
    if (!l || i < 0) return false;
    l.splice(i, 1);
    if (l.length === 0) this.idle.delete(e.conn.key);
    return true;
  }
}
