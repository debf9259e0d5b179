/**
 * The statements a PostgreSQL session sends that change the session, not the data — SET / RESET,
 * BEGIN / START TRANSACTION / COMMIT / END / ROLLBACK / ABORT, SAVEPOINT / RELEASE / ROLLBACK TO,
 * DISCARD, DEALLOCATE, CLOSE, UNLISTEN — answered by the door with PostgreSQL's command tags,
 * warnings and SQLSTATEs. None reaches DuckDB (whose configuration the sandbox locks).
 */
import type { PgErrorFields } from './backend';
import { PG_STATE, PgSessionError } from './pgErrors';
import { checkedValue } from './sessionParameters';
import type { SessionSettings } from './sessionQueries';
import { parseSet, transactionModes, type Assignment } from './setStatement';
import type { TransactionBlock } from './transactionBlock';

/** Statements the door answers itself (COMMIT / ROLLBACK PREPARED, two-phase commit, are not among them). */
export const SESSION_STATEMENT = /^\s*(SET|RESET|BEGIN|START\s+TRANSACTION|COMMIT(?!\s+PREPARED\b)|END|ROLLBACK(?!\s+PREPARED\b)|ABORT|SAVEPOINT|RELEASE|DISCARD|DEALLOCATE|UNLISTEN|CLOSE)\b/i;

/** What the session needs to answer one. */
export interface SessionContext {
  readonly settings: SessionSettings;
  readonly tx: TransactionBlock;
  /** The logged-in user (SET ROLE / SESSION AUTHORIZATION may name only them). */
  readonly user: string;
  /** Whether a prepared statement of that name exists (DEALLOCATE). */
  hasStatement(name: string): boolean;
}

/** What the door does after such a statement. */
export interface SessionOutcome {
  readonly tag: string;
  /** Warnings to send before CommandComplete. */
  readonly notices: readonly PgErrorFields[];
  /** A transaction block ended: every portal closes. */
  readonly endedBlock?: boolean;
  /** DEALLOCATE: the prepared statement to drop (null: all of them). */
  readonly deallocate?: string | null;
  /** DISCARD ALL: prepared statements and portals go, parameters reset. */
  readonly discardAll?: boolean;
}

const IDENT = String.raw`("(?:[^"]|"")+"|[A-Za-z_][\w$]*)`;
const identOf = (s: string): string => (s.startsWith('"') ? s.slice(1, -1).replace(/""/g, '"') : s.toLowerCase());
const warning = (code: string, message: string): PgErrorFields => ({ severity: 'WARNING', code, message });

/** Answers one session statement. @throws PgSessionError with PostgreSQL's SQLSTATE */
export function runSessionStatement(sql: string, ctx: SessionContext): SessionOutcome {
  const text = sql.trim().replace(/;\s*$/, '').trim();
  const { tx } = ctx;
  let m: RegExpExecArray | null;
  // Ending a block is what a failed block still accepts.
  if ((m = new RegExp(String.raw`^(?:ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?\s+TO\s+(?:SAVEPOINT\s+)?${IDENT}$`, 'i').exec(text))) {
    tx.rollbackTo(identOf(m[1] as string));
    return { tag: 'ROLLBACK', notices: [] };
  }
  if ((m = /^(COMMIT|END|ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?(?:\s+AND\s+(NO\s+)?CHAIN)?$/i.exec(text))) {
    const commit = /^(COMMIT|END)$/i.test(m[1] as string);
    const end = commit ? tx.commit() : tx.rollback();
    const notices = [...end.warnings];
    if (m[0].match(/\bAND\s+CHAIN$/i)) {
      if (!end.ended) throw new PgSessionError(PG_STATE.noActiveTransaction, `${commit ? 'COMMIT' : 'ROLLBACK'} AND CHAIN can only be used in transaction blocks`);
      tx.begin();
    }
    return { tag: end.tag, notices, endedBlock: end.ended };
  }
  tx.refuseWhenFailed();
  if ((m = /^(BEGIN|START\s+TRANSACTION)(?:\s+(?:WORK|TRANSACTION)\b)?\s*(.*)$/is.exec(text))) {
    const modes = transactionModes(m[2] as string, '', sql);
    const notices = tx.begin();
    for (const a of modes) assign(ctx, a, true);
    return { tag: /^BEGIN$/i.test(m[1] as string) ? 'BEGIN' : 'START TRANSACTION', notices };
  }
  if ((m = new RegExp(String.raw`^SAVEPOINT\s+${IDENT}$`, 'i').exec(text))) {
    tx.savepoint(identOf(m[1] as string));
    return { tag: 'SAVEPOINT', notices: [] };
  }
  if ((m = new RegExp(String.raw`^RELEASE(?:\s+SAVEPOINT)?\s+${IDENT}$`, 'i').exec(text))) {
    tx.release(identOf(m[1] as string));
    return { tag: 'RELEASE', notices: [] };
  }
  if (/^(SET|RESET)\b/i.test(text)) return setOrReset(text, ctx);
  if ((m = /^DISCARD\s+(ALL|PLANS|SEQUENCES|TEMP|TEMPORARY)$/i.exec(text))) {
    const what = (m[1] as string).toUpperCase();
    if (what !== 'ALL') return { tag: `DISCARD ${what === 'TEMPORARY' ? 'TEMP' : what}`, notices: [] };
    if (tx.status !== 'I') throw new PgSessionError(PG_STATE.activeTransaction, 'DISCARD ALL cannot run inside a transaction block');
    ctx.settings.resetAll();
    return { tag: 'DISCARD ALL', notices: [], discardAll: true };
  }
  if ((m = new RegExp(String.raw`^DEALLOCATE(?:\s+PREPARE)?\s+(ALL|${IDENT})$`, 'i').exec(text))) {
    if (/^ALL$/i.test(m[1] as string)) return { tag: 'DEALLOCATE ALL', notices: [], deallocate: null };
    const name = identOf(m[1] as string);
    if (!ctx.hasStatement(name)) throw new PgSessionError(PG_STATE.invalidStatementName, `prepared statement "${name}" does not exist`);
    return { tag: 'DEALLOCATE', notices: [], deallocate: name };
  }
  if ((m = new RegExp(String.raw`^CLOSE\s+(ALL|${IDENT})$`, 'i').exec(text))) {
    // No SQL cursors exist here (DECLARE is not served): CLOSE ALL closes nothing, a named one is unknown.
    if (/^ALL$/i.test(m[1] as string)) return { tag: 'CLOSE CURSOR ALL', notices: [] };
    throw new PgSessionError(PG_STATE.invalidCursorName, `cursor "${identOf(m[1] as string)}" does not exist`);
  }
  if (/^UNLISTEN\s+(\*|[A-Za-z_"][\w$"]*)$/i.test(text)) return { tag: 'UNLISTEN', notices: [] };
  throw new PgSessionError(PG_STATE.syntaxError, `syntax error in ${JSON.stringify(text)}`);
}

function setOrReset(text: string, ctx: SessionContext): SessionOutcome {
  const cmd = parseSet(text);
  if (cmd.kind === 'constraints') return { tag: 'SET CONSTRAINTS', notices: [] };
  if (cmd.kind === 'reset') {
    if (cmd.name === null) ctx.settings.resetAll();
    else {
      const key = checkedValue(cmd.name, null, undefined).key; // 42704 / 55P02 as for SET
      ctx.settings.reset(key);
    }
    return { tag: 'RESET', notices: [] };
  }
  // Every value is checked before any is stored; outside a block SET LOCAL / SET TRANSACTION change nothing (PostgreSQL warns).
  const outside = cmd.local && ctx.tx.status === 'I';
  const checked = cmd.assignments.map((a) => check(ctx, a));
  if (!outside) for (const c of checked) ctx.settings.set(c.key, c.value, cmd.local);
  return { tag: 'SET', notices: outside ? [warning(PG_STATE.noActiveTransaction, `${/^SET\s+(SESSION\s+|LOCAL\s+)?TRANSACTION\b/i.test(text) ? 'SET TRANSACTION' : 'SET LOCAL'} can only be used in transaction blocks`)] : [] };
}

function assign(ctx: SessionContext, a: Assignment, local: boolean): void {
  const c = check(ctx, a);
  ctx.settings.set(c.key, c.value, local);
}

/** The checked value of one assignment; SET ROLE and SESSION AUTHORIZATION may only name the session's own user. */
function check(ctx: SessionContext, a: Assignment): { key: string; value: string } {
  const name = a.name.toLowerCase();
  if (name === 'role' || name === 'session_authorization') {
    const v = a.value === null ? null : a.value.replace(/^"(.*)"$/, '$1');
    if (v === null || v === ctx.user || (name === 'role' && v === 'none')) return { key: name, value: v === null || v === 'none' ? (name === 'role' ? 'none' : ctx.user) : v };
    throw new PgSessionError(PG_STATE.insufficientPrivilege, name === 'role' ? `permission denied to set role "${v}"` : 'permission denied to set session authorization', 'hd_sql has one user per connection: the one that logged in');
  }
  return checkedValue(a.name, a.value, ctx.settings.initialOf(a.name));
}
