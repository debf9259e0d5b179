/**
 * DuckDB sessions reused across statements (issue #10): opening a connection, creating a dataset's
 * table and its alias view cost more than a small statement's whole evaluation. A statement takes
 * an idle session (or opens one); afterwards every table it used is parked — emptied, or dropped
 * when it held many rows — so no row of one statement is visible to the next, and the session goes
 * back for the next statement. A failed statement's session is closed, never reused.
 */
import type { LocalSql } from '../local/localSql';
import type { LocalSqlSession } from '../local/localSqlSession';

/** Bounds of the pool. */
export interface SessionPoolOptions {
  /** Idle sessions kept (default 4); more are closed when released. */
  readonly maxIdle?: number;
  /**
   * Rows a session may have emptied from kept tables before it is closed instead of reused
   * (default 1 000 000): DuckDB need not give an emptied table's memory back before the
   * connection closes.
   */
  readonly maxParkedRows?: number;
  /** A table that held more rows than this is dropped, not kept (default 65 536). */
  readonly dropAbove?: number;
}

/** Idle DuckDB sessions of one LocalSql. */
export class SessionPool {
  private readonly idle: LocalSqlSession[] = [];

  constructor(
    private readonly local: LocalSql,
    private readonly opts: SessionPoolOptions = {},
  ) {}

  /** Sessions waiting for a statement (for tests). */
  get idleCount(): number {
    return this.idle.length;
  }

  /** An idle session, or a new one. The caller owns it until `release` or `discard`. */
  async take(): Promise<LocalSqlSession> {
    for (let s = this.idle.pop(); s; s = this.idle.pop()) if (!s.isClosed) return s;
    return this.local.openSession();
  }

  /**
   * Takes back a session whose statement succeeded: parks every table it has, then keeps it idle
   * (or closes it past the bounds, or when parking fails). Never rejects.
   */
  async release(session: LocalSqlSession): Promise<void> {
    try {
      // The statement's fetched rows were loaded in a transaction: rolling it back discards them.
      // A statement that loaded nothing opened none (sql/statementRun.ts beforeLoading).
      if (session.inTransaction) await session.rollback();
      const dropAbove = this.opts.dropAbove ?? 65_536;
      for (const t of session.tableNames) await session.park(t, { dropAbove });
      if (!session.isClosed && this.idle.length < (this.opts.maxIdle ?? 4) && session.parkedRows <= (this.opts.maxParkedRows ?? 1_000_000)) {
        this.idle.push(session);
        return;
      }
    } catch {
      // A session that cannot be cleaned is not reused.
    }
    await this.discard(session);
  }

  /** Closes a session that must not be reused (its statement failed or was cancelled). Never rejects. */
  async discard(session: LocalSqlSession): Promise<void> {
    await session.close().catch(() => undefined);
  }
}
