/**
 * Resource limits of hd_sql's doors (security issue #14, item 6): what a client may hold before it
 * has authenticated and once it has — connections per door, time to log in, prepared statements,
 * Flight SQL DoPut bytes, bytes queued toward a client that reads slowly. The settings come from the
 * `sqlServer` stage (HD_SQL_LOGIN_TIMEOUT_MS, HD_SQL_MAX_CONNECTIONS, HD_SQL_MAX_PREPARED_STATEMENTS,
 * HD_SQL_FLIGHT_MAX_PUT_BYTES, HD_SQL_SEND_BUFFER_BYTES); each door keeps its own counters.
 */

/** The limits every door applies. */
export interface DoorLimits {
  /** HD_SQL_LOGIN_TIMEOUT_MS: a connection not logged in by then is closed (PostgreSQL's authentication_timeout). */
  readonly loginTimeoutMs: number;
  /** HD_SQL_MAX_CONNECTIONS: connections (Flight SQL: calls) open at once, per door, authenticated or not. */
  readonly maxConnections: number;
  /** HD_SQL_MAX_PREPARED_STATEMENTS: prepared statements (and portals) open per connection (Flight SQL: per peer). */
  readonly maxPreparedStatements: number;
  /** HD_SQL_FLIGHT_MAX_PUT_BYTES: bytes one Flight SQL DoPut may send (parameters of a prepared statement). */
  readonly maxPutBytes: number;
  /** HD_SQL_SEND_BUFFER_BYTES: a result stops being produced while this much waits to be sent to its client. */
  readonly sendBufferBytes: number;
}

/** The defaults (documented in docs/security.md and docs/sql.md). */
export const DEFAULT_DOOR_LIMITS: DoorLimits = {
  loginTimeoutMs: 10_000,
  maxConnections: 100,
  maxPreparedStatements: 1000,
  maxPutBytes: 4 * 1024 * 1024,
  sendBufferBytes: 1024 * 1024,
};

/** Each limit's setting, for messages. */
export const DOOR_LIMIT_SETTINGS: Readonly<Record<keyof DoorLimits, string>> = {
  loginTimeoutMs: 'HD_SQL_LOGIN_TIMEOUT_MS',
  maxConnections: 'HD_SQL_MAX_CONNECTIONS',
  maxPreparedStatements: 'HD_SQL_MAX_PREPARED_STATEMENTS',
  maxPutBytes: 'HD_SQL_FLIGHT_MAX_PUT_BYTES',
  sendBufferBytes: 'HD_SQL_SEND_BUFFER_BYTES',
};

/** `partial` over the defaults; every value a positive integer, else a RangeError naming the setting. */
export function doorLimitsOf(partial: Partial<DoorLimits> = {}): DoorLimits {
  const out = { ...DEFAULT_DOOR_LIMITS, ...partial };
  for (const k of Object.keys(DOOR_LIMIT_SETTINGS) as (keyof DoorLimits)[]) {
    const v = out[k];
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${DOOR_LIMIT_SETTINGS[k]} must be a positive integer, got ${String(v)}`);
  }
  return out;
}

/**
 * Counts what is open at one door against a cap: `admit` says whether one more fits (and counts it),
 * the returned release function uncounts it (idempotent).
 */
export class ConnectionGate {
  private open = 0;

  /** @param max the cap; `what` names the door in messages. */
  constructor(
    readonly max: number,
    readonly what: string,
  ) {}

  /** Open right now. */
  get count(): number {
    return this.open;
  }

  /** Counts one more when it fits: its release, or undefined when the door is full. */
  admit(): (() => void) | undefined {
    if (this.open >= this.max) return undefined;
    this.open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
    };
  }

  /** The refusal's text. */
  refusal(): string {
    return `sorry, too many clients already: the ${this.what} door serves at most ${this.max} connections at once (HD_SQL_MAX_CONNECTIONS)`;
  }
}

/**
 * Bytes queued toward clients: the largest backlog one connection's socket has reached (with
 * backpressure it stays near HD_SQL_SEND_BUFFER_BYTES however large the result) and the sum queued
 * now over the open connections; both are on /metrics.
 */
export class SendBacklog {
  private readonly sources = new Set<() => number>();
  private most = 0;

  /** The largest backlog one connection has had. */
  get peak(): number {
    return this.most;
  }

  /** Notes a connection's backlog after a write. */
  note(bytes: number): void {
    if (bytes > this.most) this.most = bytes;
  }

  /** Adds a source (a socket's writableLength); returns its removal. */
  add(source: () => number): () => void {
    this.sources.add(source);
    return () => void this.sources.delete(source);
  }

  /** Bytes queued now over every source. */
  now(): number {
    let n = 0;
    for (const s of this.sources) n += s();
    return n;
  }
}
