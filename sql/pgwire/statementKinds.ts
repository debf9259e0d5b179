/** How the wire door classifies statement text before the engine sees it. */

/** Statements a session sends that change nothing here (read-only, no transactions): answered with their tag. */
export const SESSION_STATEMENT = /^\s*(SET|RESET|BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|DISCARD|DEALLOCATE|UNLISTEN|CLOSE)\b/i;
/** `COPY (query) TO STDOUT [(FORMAT text|csv)]`: the query is group 1. */
export const COPY_TO_STDOUT = /^\s*COPY\s*\(([\s\S]*)\)\s*TO\s+STDOUT\s*(?:\(?\s*(?:FORMAT\s+)?(?:TEXT|CSV)?\s*\)?)?\s*;?\s*$/i;

/** The CommandComplete tag of a session statement. */
export function tagOf(sql: string): string {
  const w = /^\s*(\w+)(?:\s+(\w+))?/.exec(sql);
  const first = (w?.[1] ?? '').toUpperCase();
  if (first === 'START') return 'START TRANSACTION';
  if (first === 'END') return 'COMMIT';
  if (first === 'DISCARD' && w?.[2]) return `DISCARD ${w[2].toUpperCase()}`;
  return first;
}

/** The number of `$n` placeholders of a statement (highest n, outside quotes). */
export function paramCount(sql: string): number {
  const bare = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"/g, '');
  let n = 0;
  for (const m of bare.matchAll(/\$(\d+)/g)) n = Math.max(n, Number(m[1]));
  return n;
}
