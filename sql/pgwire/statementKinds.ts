/** How the wire door classifies statement text before the engine sees it (session statements: sessionStatements.ts). */

/** `COPY (query) TO STDOUT [(FORMAT text|csv)]`: the query is group 1. */
export const COPY_TO_STDOUT = /^\s*COPY\s*\(([\s\S]*)\)\s*TO\s+STDOUT\s*(?:\(?\s*(?:FORMAT\s+)?(?:TEXT|CSV)?\s*\)?)?\s*;?\s*$/i;

/** The number of `$n` placeholders of a statement (highest n, outside quotes). */
export function paramCount(sql: string): number {
  const bare = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"/g, '');
  let n = 0;
  for (const m of bare.matchAll(/\$(\d+)/g)) n = Math.max(n, Number(m[1]));
  return n;
}
