/**
 * The session questions drivers and BI tools ask on connect that are about the server, not the
 * data: `SHOW <setting>` (SQLAlchemy's `show standard_conforming_strings`, pgjdbc's
 * `SHOW transaction_read_only`, ...) and `SELECT version()` (parsed for "PostgreSQL N.M"). They are
 * answered here, from the door's own settings, so they never reach DuckDB (whose version() and
 * settings are its own). `SET name = value` updates what SHOW reports; nothing else changes.
 */
import * as arrow from 'apache-arrow';

/** The door's session settings: ParameterStatus values, startup parameters and SETs. */
export class SessionSettings {
  private readonly values = new Map<string, string>();

  constructor(initial: Readonly<Record<string, string>>) {
    for (const [k, v] of Object.entries(initial)) this.values.set(k.toLowerCase(), v);
  }

  /** A setting's value, case-insensitively; undefined when unknown. */
  get(name: string): string | undefined {
    return this.values.get(name.toLowerCase());
  }

  /** Every setting, sorted by name (SHOW ALL). */
  all(): [string, string][] {
    return [...this.values.entries()].sort(([a], [b]) => a.localeCompare(b));
  }

  /** Records a `SET [SESSION|LOCAL] name {=|TO} value` statement; other statements are ignored. */
  noteSet(sql: string): void {
    const m = /^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?([A-Za-z_][\w.]*)\s*(?:=|\bTO\b)\s*([\s\S]*?)\s*;?\s*$/i.exec(sql);
    if (!m) return;
    const raw = (m[2] as string).trim();
    const value = /^'(?:[^']|'')*'$/.test(raw) ? raw.slice(1, -1).replace(/''/g, "'") : raw;
    this.values.set((m[1] as string).toLowerCase(), /^DEFAULT$/i.test(value) ? '' : value);
  }
}

/** The settings a new connection starts with (besides the ParameterStatus ones). */
export const EXTRA_SETTINGS: Readonly<Record<string, string>> = {
  server_version_num: '160000',
  transaction_isolation: 'read committed',
  transaction_read_only: 'on',
  default_transaction_read_only: 'on',
  search_path: '"$user", public',
  max_identifier_length: '63',
  extra_float_digits: '1',
};

function textTable(columns: readonly string[], rows: readonly string[][]): arrow.Table {
  return new arrow.Table(Object.fromEntries(columns.map((c, i) => [c, arrow.vectorFromArray(rows.map((r) => r[i] as string), new arrow.Utf8())])));
}

const SHOW = /^\s*SHOW\s+(ALL|TRANSACTION\s+ISOLATION\s+LEVEL|[A-Za-z_][\w.]*)\s*;?\s*$/i;
const VERSION = /^\s*SELECT\s+(?:pg_catalog\s*\.\s*)?version\s*\(\s*\)\s*;?\s*$/i;

/**
 * The answer to a session question, or undefined when `sql` is not one (SHOW TABLES goes to the
 * engine). An unknown setting is undefined too, so the engine's error explains what SHOW serves.
 */
export function sessionAnswer(sql: string, settings: SessionSettings): arrow.Table | undefined {
  if (VERSION.test(sql)) return textTable(['version'], [[`PostgreSQL ${settings.get('server_version') ?? ''}, served by hd_sql (DuckDB inside)`]]);
  const m = SHOW.exec(sql);
  if (!m) return undefined;
  const name = (m[1] as string).replace(/\s+/g, ' ').toLowerCase();
  if (name === 'all') return textTable(['name', 'setting', 'description'], settings.all().map(([k, v]) => [k, v, '']));
  const key = name === 'transaction isolation level' ? 'transaction_isolation' : name;
  const value = settings.get(key);
  return value === undefined ? undefined : textTable([key], [[value]]);
}
