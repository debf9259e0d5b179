/**
 * Splits a simple-protocol Query into its statements at top-level semicolons, as PostgreSQL runs
 * `BEGIN; SELECT ...; COMMIT` one statement after the other. Semicolons inside '...' and E'...'
 * strings, "..." identifiers, $tag$...$tag$ bodies, -- and (nested) /* *\/ comments do not split.
 */

/** The statements of `sql`, trimmed, without their semicolons; those holding only comments are left out. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  let meaningful = false;
  const n = sql.length;
  const push = (end: number): void => {
    if (meaningful) out.push(sql.slice(start, end).trim());
    meaningful = false;
  };
  while (i < n) {
    const c = sql[i] as string;
    if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') (depth++, (i += 2));
        else if (sql[i] === '*' && sql[i + 1] === '/') (depth--, (i += 2));
        else i++;
      }
    } else if (c === "'" || c === '"') {
      const backslashes = c === "'" && i > 0 && /[Ee]/.test(sql[i - 1] as string) && !/[\w$]/.test(sql[i - 2] ?? ' ');
      meaningful = true;
      i++;
      while (i < n) {
        if (backslashes && sql[i] === '\\') i += 2;
        else if (sql[i] === c) {
          if (sql[i + 1] === c) i += 2;
          else break;
        } else i++;
      }
      i++;
    } else if (c === '$' && !/[\w$]/.test(sql[i - 1] ?? ' ')) {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(sql.slice(i));
      meaningful = true;
      if (tag) {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        i = end < 0 ? n : end + tag[0].length;
      } else i++;
    } else if (c === ';') {
      push(i);
      start = ++i;
    } else {
      if (!/\s/.test(c)) meaningful = true;
      i++;
    }
  }
  push(n);
  return out;
}
