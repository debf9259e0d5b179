/**
 * The session questions drivers and BI tools ask on connect that are about the server, not the
 * data: `SHOW <setting>` (SQLAlchemy's `show standard_conforming_strings`, pgjdbc's
 * `SHOW transaction_read_only`, ...) and `SELECT version()` (parsed for "PostgreSQL N.M"). They are
 * answered here, from the door's own settings, so they never reach DuckDB (whose version() and
 * settings are its own). SET is handled by sql/pgwire/sessionStatements.ts; SHOW reports its values.
 */
import * as arrow from 'apache-arrow';
import { PG_STATE, PgSessionError } from './pgErrors';
import { canonicalName } from './sessionParameters';

/** What a SessionSettings held at one moment (a transaction block's start, a savepoint). */
export interface SettingsSnapshot {
  readonly values: ReadonlyMap<string, string>;
  readonly local: ReadonlyMap<string, string>;
}

/**
 * The door's session parameters (sql/pgwire/sessionParameters.ts says which exist and what a SET
 * may change them to): the session's values, SET LOCAL values that last until the transaction
 * block ends, and the starting values RESET and DEFAULT restore.
 */
export class SessionSettings {
  private values: Map<string, string>;
  private local = new Map<string, string>();
  private readonly initial: ReadonlyMap<string, string>;

  /** @param initial the starting values, by name (any case). */
  constructor(initial: ReadonlyMap<string, string> | Readonly<Record<string, string>>) {
    const entries = initial instanceof Map ? [...initial.entries()] : Object.entries(initial);
    this.initial = new Map(entries.map(([k, v]) => [k.toLowerCase(), v]));
    this.values = new Map(this.initial);
  }

  /** A setting's value, case-insensitively; undefined when unknown. */
  get(name: string): string | undefined {
    const key = name.toLowerCase();
    return this.local.get(key) ?? this.values.get(key);
  }

  /** What RESET / DEFAULT restores for `name`. */
  initialOf(name: string): string | undefined {
    return this.initial.get(name.toLowerCase());
  }

  /** Every setting with its canonical name, sorted by name (SHOW ALL). */
  all(): [string, string][] {
    return [...new Set([...this.values.keys(), ...this.local.keys()])].sort().map((k) => [canonicalName(k), this.get(k) ?? '']);
  }

  /** Sets `name`; `local`: until the transaction block ends (SET LOCAL). A session SET replaces a SET LOCAL. */
  set(name: string, value: string, local = false): void {
    const key = name.toLowerCase();
    if (local) return void this.local.set(key, value);
    this.local.delete(key);
    this.values.set(key, value);
  }

  /** RESET name: back to the starting value. */
  reset(name: string): void {
    const key = name.toLowerCase();
    const v = this.initial.get(key);
    this.local.delete(key);
    if (v === undefined) this.values.delete(key);
    else this.values.set(key, v);
  }

  /** RESET ALL. */
  resetAll(): void {
    this.local.clear();
    this.values = new Map(this.initial);
  }

  /** The values now, to restore later. */
  snapshot(): SettingsSnapshot {
    return { values: new Map(this.values), local: new Map(this.local) };
  }

  /** Back to a snapshot (ROLLBACK, ROLLBACK TO SAVEPOINT). */
  restore(s: SettingsSnapshot): void {
    this.values = new Map(s.values);
    this.local = new Map(s.local);
  }

  /** The transaction block ended: SET LOCAL values lapse. */
  endTransaction(): void {
    this.local.clear();
  }
}

function textTable(columns: readonly string[], rows: readonly string[][]): arrow.Table {
  return new arrow.Table(Object.fromEntries(columns.map((c, i) => [c, arrow.vectorFromArray(rows.map((r) => r[i] as string), new arrow.Utf8())])));
}

const SHOW = /^\s*SHOW\s+(ALL|TRANSACTION\s+ISOLATION\s+LEVEL|TIME\s+ZONE|SESSION\s+AUTHORIZATION|[A-Za-z_][\w.$]*|"[^"]+")\s*;?\s*$/i;
/** SHOW forms the engine answers (the datasets). */
const ENGINE_SHOW = new Set(['tables']);
const SHOW_ALIASES: Readonly<Record<string, string>> = { 'transaction isolation level': 'transaction_isolation', 'time zone': 'timezone', 'session authorization': 'session_authorization' };
const VERSION = /^\s*SELECT\s+(?:pg_catalog\s*\.\s*)?version\s*\(\s*\)\s*;?\s*$/i;

/**
 * The answer to a session question, or undefined when `sql` is not one (SHOW TABLES goes to the
 * engine). @throws PgSessionError 42704 for SHOW of a parameter the session does not have.
 */
export function sessionAnswer(sql: string, settings: SessionSettings): arrow.Table | undefined {
  if (VERSION.test(sql)) return textTable(['version'], [[`PostgreSQL ${settings.get('server_version') ?? ''}, served by hd_sql (DuckDB inside)`]]);
  const m = SHOW.exec(sql);
  if (!m) return undefined;
  const raw = m[1] as string;
  const name = raw.startsWith('"') ? raw.slice(1, -1) : raw.replace(/\s+/g, ' ').toLowerCase();
  if (name === 'all') return textTable(['name', 'setting', 'description'], settings.all().map(([k, v]) => [k, v, '']));
  if (ENGINE_SHOW.has(name)) return undefined;
  const key = SHOW_ALIASES[name] ?? name;
  const value = settings.get(key);
  if (value === undefined) throw new PgSessionError(PG_STATE.undefinedObject, `unrecognized configuration parameter "${key}"`, 'SHOW TABLES lists the datasets; SHOW ALL lists the parameters');
  return textTable([canonicalName(key)], [[value]]);
}
