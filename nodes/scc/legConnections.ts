/**
 * Idle query-leg connections the SCC keeps to each Storage Node's control port, so a query does
 * not open (and, under mutual TLS, handshake) a connection per node: a Storage Node takes any
 * number of queries, one after another, on one control connection (sources/queryListener.ts). A
 * leg that ended with every batch answered hands its connection back; the next leg to the same
 * node, for the same hello (dataset, record size) and the same TLS identity, sends only its query
 * frame. Connections that sit idle longer than `idleMs`, or that have lived `maxAgeMs`, are closed:
 * a revoked or renewed certificate on either side is thus met by a new handshake within
 * `maxAgeMs`, never later.
 */
import type net from 'node:net';
import type tls from 'node:tls';
import type { FrameDecoder } from '../../engine-rs/hdwpDecoder';
import { certKey } from '../../lib/tlsSessions';
import type { Frame } from '../../engine-rs/hdwpFrame';

/** Default time an unused connection stays open. */
export const DEFAULT_LEG_IDLE_MS = 10_000;
/** Default age after which a connection is not reused (a fresh handshake checks certificates again). */
export const DEFAULT_LEG_MAX_AGE_MS = 60_000;
/** Idle connections kept per key at most (one per leg running at once is plenty). */
const MAX_IDLE_PER_KEY = 8;

/** An open, hello-exchanged control connection and the decoder holding its partial frames. */
export interface LegConnection {
  readonly socket: net.Socket;
  readonly decoder: FrameDecoder;
  readonly key: string;
  /** When it was opened (ms since the epoch). */
  readonly openedAt: number;
  /** The query its last leg carried: the node may still be finishing it on this connection. */
  lastQueryId?: number;
}

/** Options of {@link LegConnectionPool}. */
export interface LegConnectionPoolOptions {
  /** Time an unused connection stays open; default {@link DEFAULT_LEG_IDLE_MS}; 0 keeps none (every leg connects). */
  readonly idleMs?: number;
  /** Age after which a connection is closed instead of reused; default {@link DEFAULT_LEG_MAX_AGE_MS}. */
  readonly maxAgeMs?: number;
}

interface Idle {
  readonly conn: LegConnection;
  readonly timer: NodeJS.Timeout;
  readonly onData: (chunk: Buffer) => void;
  readonly onGone: () => void;
}

/** What a pooled connection is for: the node's control port, the hello it sent, and the certificate it presented. */
export function legConnectionKey(node: { name: string; host: string; controlPort: number }, dataset: string, recordSize: number, link: tls.ConnectionOptions | undefined): string {
  const who = link === undefined ? 'plain' : `tls ${certKey(link.cert)}`;
  return `${node.name}|${node.host}|${node.controlPort}|${dataset}|${recordSize}|${who}`;
}

/** Keeps idle leg connections; see the module doc. */
export class LegConnectionPool {
  private readonly idle = new Map<string, Idle[]>();
  private readonly idleMs: number;
  private readonly maxAgeMs: number;
  private counts = { reused: 0, opened: 0, returned: 0, closedIdle: 0 };
  private closed = false;

  /** @param opts idle and age limits */
  constructor(opts: LegConnectionPoolOptions = {}) {
    this.idleMs = opts.idleMs ?? DEFAULT_LEG_IDLE_MS;
    this.maxAgeMs = opts.maxAgeMs ?? DEFAULT_LEG_MAX_AGE_MS;
  }

  /** Counters for /health and tests: connections reused, opened fresh, handed back, closed while idle. */
  get stats(): { reused: number; opened: number; returned: number; closedIdle: number; idle: number } {
    let idle = 0;
    for (const l of this.idle.values()) idle += l.length;
    return { ...this.counts, idle };
  }

  /**
   * An idle connection for `key`, taken out of the pool; undefined when none (the caller connects
   * and counts it with {@link opened}). A connection whose last leg was of `queryId` is left alone:
   * the node may not have let go of that query on it yet and would refuse the next leg as "already
   * running" (another leg of the same query goes on another connection, as before pooling).
   */
  take(key: string, queryId: number): LegConnection | undefined {
    const list = this.idle.get(key);
    while (list && list.length > 0) {
      let i = list.length - 1;
      while (i >= 0 && (list[i] as Idle).conn.lastQueryId === queryId) i--;
      if (i < 0) return undefined;
      const e = list.splice(i, 1)[0] as Idle;
      if (list.length === 0) this.idle.delete(key);
      this.detach(e);
      if (e.conn.socket.destroyed || !e.conn.socket.writable || Date.now() - e.conn.openedAt >= this.maxAgeMs) {
        e.conn.socket.destroy();
        continue;
      }
      this.counts.reused++;
      return e.conn;
    }
    return undefined;
  }

  /** Counts a connection a leg opened itself (no idle one was there). */
  opened(): void {
    this.counts.opened++;
  }

  /**
   * Takes a connection back once its leg ended with every batch answered. The caller has removed
   * its own listeners. While idle, hello and credit frames are read and dropped; anything else (an
   * error frame, a late answer), a malformed frame, an error or a close ends the connection.
   */
  give(conn: LegConnection): void {
    const { socket } = conn;
    const age = Date.now() - conn.openedAt;
    if (this.closed || this.idleMs <= 0 || socket.destroyed || !socket.writable || age >= this.maxAgeMs) {
      socket.end();
      return;
    }
    const list = this.idle.get(conn.key) ?? [];
    if (list.length >= MAX_IDLE_PER_KEY) {
      socket.end();
      return;
    }
    const drop = (): void => {
      const l = this.idle.get(conn.key);
      const i = l?.indexOf(e) ?? -1;
      if (l && i >= 0) {
        l.splice(i, 1);
        if (l.length === 0) this.idle.delete(conn.key);
      }
      this.detach(e);
    };
    const onData = (chunk: Buffer): void => {
      let frames: Frame[];
      try {
        frames = conn.decoder.push(chunk);
      } catch {
        drop();
        socket.destroy();
        return;
      }
      if (frames.some((f) => f.kind !== 'hello' && f.kind !== 'credit')) {
        drop();
        socket.end();
      }
    };
    const onGone = (): void => {
      drop();
      socket.destroy();
    };
    const timer = setTimeout(() => {
      this.counts.closedIdle++;
      drop();
      socket.end();
    }, Math.min(this.idleMs, this.maxAgeMs - age));
    timer.unref();
    const e: Idle = { conn, timer, onData, onGone };
    socket.on('data', onData);
    socket.on('error', onGone);
    socket.on('close', onGone);
    list.push(e);
    this.idle.set(conn.key, list);
    this.counts.returned++;
  }

  /** Closes every idle connection; later {@link give}s close theirs at once. */
  close(): void {
    this.closed = true;
    for (const list of this.idle.values()) {
      for (const e of list) {
        this.detach(e);
        e.conn.socket.end();
      }
    }
    this.idle.clear();
  }

  private detach(e: Idle): void {
    clearTimeout(e.timer);
    e.conn.socket.off('data', e.onData);
    e.conn.socket.off('error', e.onGone);
    e.conn.socket.off('close', e.onGone);
  }
}

