/**
 * A wire session's transaction block, as PostgreSQL reports it in ReadyForQuery: 'I' idle, 'T'
 * inside BEGIN ... COMMIT, 'E' inside a block that failed (every statement but ROLLBACK / COMMIT
 * is refused with 25P02 until it ends). hd_sql is read-only and each statement reads its own
 * snapshot, so a block changes no data: it exists so that drivers with autocommit off (pgjdbc,
 * psycopg's default mode) see the states they expect, keep their portals open across Sync, and
 * roll back the SETs made inside it as PostgreSQL would. Savepoints nest the same way.
 */
import type { PgErrorFields } from './backend';
import { PG_STATE, PgSessionError } from './pgErrors';
import type { SessionSettings, SettingsSnapshot } from './sessionQueries';

/** ReadyForQuery's transaction status byte. */
export type TransactionStatus = 'I' | 'T' | 'E';

interface Savepoint {
  readonly name: string;
  readonly settings: SettingsSnapshot;
}

/** The outcome of ending a block: its tag and any warning. */
export interface BlockEnd {
  readonly tag: string;
  readonly warnings: readonly PgErrorFields[];
  /** True when a block ended (its portals close). */
  readonly ended: boolean;
}

const warning = (code: string, message: string): PgErrorFields => ({ severity: 'WARNING', code, message });

/** The transaction block of one connection. */
export class TransactionBlock {
  private state: TransactionStatus = 'I';
  /** The settings at BEGIN, then at each savepoint (innermost last). */
  private atBegin: SettingsSnapshot | undefined;
  private readonly savepoints: Savepoint[] = [];

  constructor(private readonly settings: SessionSettings) {}

  /** The status ReadyForQuery reports. */
  get status(): TransactionStatus {
    return this.state;
  }

  /** BEGIN / START TRANSACTION: a warning (25001) inside a block, as PostgreSQL gives. */
  begin(): readonly PgErrorFields[] {
    if (this.state !== 'I') return [warning(PG_STATE.activeTransaction, 'there is already a transaction in progress')];
    this.state = 'T';
    this.atBegin = this.settings.snapshot();
    return [];
  }

  /** COMMIT / END: a failed block rolls back instead (tag ROLLBACK); outside a block a warning (25P01). */
  commit(): BlockEnd {
    if (this.state === 'I') return { tag: 'COMMIT', warnings: [warning(PG_STATE.noActiveTransaction, 'there is no transaction in progress')], ended: false };
    if (this.state === 'E') return this.rollback();
    this.finish();
    return { tag: 'COMMIT', warnings: [], ended: true };
  }

  /** ROLLBACK / ABORT: the block's SETs are undone. */
  rollback(): BlockEnd {
    if (this.state === 'I') return { tag: 'ROLLBACK', warnings: [warning(PG_STATE.noActiveTransaction, 'there is no transaction in progress')], ended: false };
    if (this.atBegin) this.settings.restore(this.atBegin);
    this.finish();
    return { tag: 'ROLLBACK', warnings: [], ended: true };
  }

  /** A statement failed: a block becomes failed ('E'); outside one nothing changes. */
  fail(): void {
    if (this.state === 'T') this.state = 'E';
  }

  /** SAVEPOINT name. @throws PgSessionError 25P01 outside a block, 25P02 in a failed one */
  savepoint(name: string): void {
    this.inBlock('SAVEPOINT');
    this.savepoints.push({ name: name.toLowerCase(), settings: this.settings.snapshot() });
  }

  /** RELEASE [SAVEPOINT] name: it and the savepoints after it go. @throws PgSessionError 3B001 when there is none */
  release(name: string): void {
    this.inBlock('RELEASE SAVEPOINT');
    this.savepoints.length = this.find(name);
  }

  /** ROLLBACK TO [SAVEPOINT] name: back to the savepoint (which stays), the block usable again. */
  rollbackTo(name: string): void {
    if (this.state === 'I') throw new PgSessionError(PG_STATE.noActiveTransaction, 'ROLLBACK TO SAVEPOINT can only be used in transaction blocks');
    const at = this.find(name);
    const sp = this.savepoints[at] as Savepoint;
    this.savepoints.length = at + 1;
    this.settings.restore(sp.settings);
    this.state = 'T';
  }

  /** 25P02 in a failed block: what every statement but ROLLBACK / COMMIT gets there. */
  refuseWhenFailed(): void {
    if (this.state === 'E') throw new PgSessionError(PG_STATE.inFailedTransaction, 'current transaction is aborted, commands ignored until end of transaction block', 'ROLLBACK (or COMMIT) ends the block');
  }

  private inBlock(what: string): void {
    if (this.state === 'I') throw new PgSessionError(PG_STATE.noActiveTransaction, `${what} can only be used in transaction blocks`);
    this.refuseWhenFailed();
  }

  private find(name: string): number {
    const key = name.toLowerCase();
    for (let i = this.savepoints.length - 1; i >= 0; i--) if (this.savepoints[i]?.name === key) return i;
    throw new PgSessionError(PG_STATE.invalidSavepoint, `savepoint "${name}" does not exist`);
  }

  private finish(): void {
    this.state = 'I';
    this.atBegin = undefined;
    this.savepoints.length = 0;
    this.settings.endTransaction();
  }
}
