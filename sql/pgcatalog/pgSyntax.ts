/**
 * PostgreSQL spellings DuckDB's parser cannot read, rewritten in the statement text before it is
 * parsed (the rest is done on the parse tree, sql/pgcatalog/pgRewrite.ts):
 * - `a OPERATOR(pg_catalog.~) b` (psql's pattern matching): DuckDB parses it into a call of a
 *   function named `pg_catalog`; it becomes `a ~ b`.
 * - `x::pg_catalog.text`, `::pg_catalog.regtype`: DuckDB refuses a schema-qualified keyword type;
 *   the qualification is dropped (`::text`).
 * Only code is touched: string literals, quoted identifiers, dollar quotes and comments are copied
 * as they are.
 */

/** `OPERATOR(schema.op)` or `OPERATOR(op)`. */
const OPERATOR = /\bOPERATOR\s*\(\s*(?:[A-Za-z_][\w$]*\s*\.\s*)?([~!@#%^&|`?*+\-/<>=]+)\s*\)/gi;
/** A cast to a pg_catalog-qualified type. */
const QUALIFIED_CAST = /::\s*(?:pg_catalog|"pg_catalog")\s*\./gi;

/** The parts of `sql`: code (rewritable) and the rest, in order. */
function split(sql: string): { code: boolean; text: string }[] {
  const parts: { code: boolean; text: string }[] = [];
  let i = 0;
  let start = 0;
  const flush = (code: boolean, end: number): void => {
    if (end > start) parts.push({ code, text: sql.slice(start, end) });
    start = end;
  };
  while (i < sql.length) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    let end = -1;
    if (c === "'") {
      // E'...' takes backslash escapes; '' doubles a quote in both forms.
      const escapes = i > 0 && /[eE]/.test(sql[i - 1] as string) && (i < 2 || !/[\w$]/.test(sql[i - 2] as string));
      let j = i + 1;
      while (j < sql.length) {
        if (escapes && sql[j] === '\\') j += 2;
        else if (sql[j] === "'" && sql[j + 1] === "'") j += 2;
        else if (sql[j] === "'") break;
        else j++;
      }
      end = Math.min(j + 1, sql.length);
    } else if (c === '"') {
      const j = sql.indexOf('"', i + 1);
      end = j < 0 ? sql.length : j + 1;
    } else if (c === '-' && next === '-') {
      const j = sql.indexOf('\n', i);
      end = j < 0 ? sql.length : j;
    } else if (c === '/' && next === '*') {
      const j = sql.indexOf('*/', i + 2);
      end = j < 0 ? sql.length : j + 2;
    } else if (c === '$') {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(sql.slice(i));
      if (tag && (i === 0 || !/[\w$]/.test(sql[i - 1] as string))) {
        const j = sql.indexOf(tag[0], i + tag[0].length);
        end = j < 0 ? sql.length : j + tag[0].length;
      }
    }
    if (end < 0) {
      i++;
      continue;
    }
    flush(true, i);
    flush(false, end);
    i = end;
  }
  flush(true, sql.length);
  return parts;
}

/** `sql` with the spellings above rewritten, and whether anything changed. */
export function pgSyntax(sql: string): { text: string; changed: boolean } {
  if (!/OPERATOR|pg_catalog/i.test(sql)) return { text: sql, changed: false };
  const text = split(sql)
    .map((p) => (p.code ? p.text.replace(OPERATOR, ' $1 ').replace(QUALIFIED_CAST, '::') : p.text))
    .join('');
  return { text, changed: text !== sql };
}
