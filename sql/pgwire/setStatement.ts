/**
 * PostgreSQL's SET, RESET and transaction-mode syntax, read into what it asks for — the door
 * answers these itself (sql/pgwire/sessionStatements.ts); DuckDB never sees them.
 */
import { PG_STATE, PgSessionError } from './pgErrors';

/** One parameter a SET gives a value (null: DEFAULT). */
export interface Assignment {
  readonly name: string;
  readonly value: string | null;
}

/** What a SET / RESET statement asks. */
export type SetCommand =
  | { readonly kind: 'set'; readonly local: boolean; readonly assignments: readonly Assignment[] }
  | { readonly kind: 'reset'; readonly name: string | null }
  | { readonly kind: 'constraints' };

const syntax = (sql: string, near: string): PgSessionError => new PgSessionError(PG_STATE.syntaxError, `syntax error at or near "${near.trim().split(/\s+/)[0] ?? ''}" in ${JSON.stringify(sql.trim())}`);

/** The value list after `=` / `TO`: quoted strings unquoted, double-quoted names kept quoted, bare words lower-cased, joined with ", ". */
export function valueList(text: string, sql: string): string | null {
  const t = text.trim();
  if (/^DEFAULT$/i.test(t)) return null;
  const items: string[] = [];
  let i = 0;
  const ws = (): void => {
    while (i < t.length && /\s/.test(t[i] as string)) i++;
  };
  for (;;) {
    ws();
    let m: RegExpExecArray | null;
    const rest = t.slice(i);
    if ((m = /^[Ee]'((?:[^'\\]|\\.|'')*)'/.exec(rest))) items.push((m[1] as string).replace(/''/g, "'").replace(/\\(.)/g, '$1'));
    else if ((m = /^'((?:[^']|'')*)'/.exec(rest))) items.push((m[1] as string).replace(/''/g, "'"));
    else if ((m = /^"((?:[^"]|"")*)"/.exec(rest))) items.push(m[0]);
    else if ((m = /^[+-]?[\w.$:/+-]+/.exec(rest))) items.push(/^[+-]?\d/.test(m[0]) ? m[0] : m[0].toLowerCase());
    else throw syntax(sql, rest || 'end of statement');
    i += m[0].length;
    ws();
    if (i >= t.length) break;
    if (t[i] !== ',') throw syntax(sql, t.slice(i));
    i++;
  }
  return items.join(', ');
}

/** Transaction modes (`ISOLATION LEVEL ...`, `READ ONLY|WRITE`, `[NOT] DEFERRABLE`) as parameter values; `prefix`: `` or `default_`. */
export function transactionModes(text: string, prefix: '' | 'default_', sql: string): Assignment[] {
  const out: Assignment[] = [];
  let rest = text.trim().replace(/;\s*$/, '');
  while (rest !== '') {
    let m: RegExpExecArray | null;
    if ((m = /^ISOLATION\s+LEVEL\s+(SERIALIZABLE|REPEATABLE\s+READ|READ\s+COMMITTED|READ\s+UNCOMMITTED)\b/i.exec(rest))) out.push({ name: `${prefix}transaction_isolation`, value: (m[1] as string).toLowerCase().replace(/\s+/g, ' ') });
    else if ((m = /^READ\s+(ONLY|WRITE)\b/i.exec(rest))) out.push({ name: `${prefix}transaction_read_only`, value: (m[1] as string).toUpperCase() === 'ONLY' ? 'on' : 'off' });
    else if ((m = /^(NOT\s+)?DEFERRABLE\b/i.exec(rest))) out.push({ name: `${prefix}transaction_deferrable`, value: m[1] ? 'off' : 'on' });
    else throw syntax(sql, rest);
    rest = rest.slice(m[0].length).replace(/^\s*,?\s*/, '');
  }
  return out;
}

/** Reads a SET or RESET statement. @throws PgSessionError 42601 when it is not PostgreSQL's syntax */
export function parseSet(sql: string): SetCommand {
  const text = sql.trim().replace(/;\s*$/, '').trim();
  let m = /^RESET\s+(.*)$/is.exec(text);
  if (m) {
    const what = (m[1] as string).trim();
    if (/^ALL$/i.test(what)) return { kind: 'reset', name: null };
    if (/^TIME\s+ZONE$/i.test(what)) return { kind: 'reset', name: 'TimeZone' };
    if (/^SESSION\s+AUTHORIZATION$/i.test(what)) return { kind: 'reset', name: 'session_authorization' };
    if (/^[A-Za-z_][\w.$]*$/.test(what)) return { kind: 'reset', name: what };
    if (/^"[^"]+"$/.test(what)) return { kind: 'reset', name: what.slice(1, -1) };
    throw syntax(sql, what);
  }
  m = /^SET\s+(.*)$/is.exec(text);
  if (!m) throw syntax(sql, text);
  let rest = (m[1] as string).trim();
  if ((m = /^SESSION\s+CHARACTERISTICS\s+AS\s+TRANSACTION\s+(.*)$/is.exec(rest))) return { kind: 'set', local: false, assignments: transactionModes(m[1] as string, 'default_', sql) };
  if ((m = /^SESSION\s+AUTHORIZATION\s+(.*)$/is.exec(rest))) return { kind: 'set', local: false, assignments: [{ name: 'session_authorization', value: valueList(m[1] as string, sql) }] };
  let local = false;
  if ((m = /^(SESSION|LOCAL)\s+(.*)$/is.exec(rest))) {
    local = (m[1] as string).toUpperCase() === 'LOCAL';
    rest = (m[2] as string).trim();
  }
  if ((m = /^TRANSACTION\s+(.*)$/is.exec(rest))) return { kind: 'set', local: true, assignments: transactionModes(m[1] as string, '', sql) };
  if (/^CONSTRAINTS\b/i.test(rest)) return { kind: 'constraints' };
  if ((m = /^TIME\s+ZONE\s+(.*)$/is.exec(rest))) {
    const v = (m[1] as string).trim();
    // LOCAL and DEFAULT both mean the server's zone; an INTERVAL '...' offset is read as its text.
    return { kind: 'set', local, assignments: [{ name: 'TimeZone', value: /^(LOCAL|DEFAULT)$/i.test(v) ? null : valueList(v.replace(/^INTERVAL\s+/i, ''), sql) }] };
  }
  if ((m = /^NAMES\s+(.*)$/is.exec(rest))) return { kind: 'set', local, assignments: [{ name: 'client_encoding', value: valueList(m[1] as string, sql) }] };
  if ((m = /^SCHEMA\s+(.*)$/is.exec(rest))) return { kind: 'set', local, assignments: [{ name: 'search_path', value: valueList(m[1] as string, sql) }] };
  if ((m = /^ROLE\s+(.*)$/is.exec(rest))) return { kind: 'set', local, assignments: [{ name: 'role', value: valueList(m[1] as string, sql) }] };
  m = /^("(?:[^"]|"")+"|[A-Za-z_][\w.$]*)\s*(?:=|\bTO\b)\s*([\s\S]*)$/i.exec(rest);
  if (!m) throw syntax(sql, rest);
  const name = (m[1] as string).startsWith('"') ? (m[1] as string).slice(1, -1).replace(/""/g, '"') : (m[1] as string);
  return { kind: 'set', local, assignments: [{ name, value: valueList(m[2] as string, sql) }] };
}
