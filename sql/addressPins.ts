/**
 * Names of rewritten select items (sql/addressRewrite.ts): `SELECT max(src)` runs as
 * `arg_max(src, hd_inet4_key(src))` but must still be named `max(src)`, as DuckDB names the item
 * the user wrote (and as every door and sql/resultNames.ts expect). DuckDB's name of an unaliased
 * item is its expression's text, which `json_deserialize_sql` writes: one round trip gives the
 * names of every pinned item, which then replace their alias placeholders.
 */
import type { LocalSqlSession } from '../local/localSqlSession';
import { PIN_PREFIX } from './addressRewrite';
import type { Plan } from './planner';

/**
 * `plan` with DuckDB's names in place of the alias placeholders of its rewritten tree (and no
 * `namePins` left); the plan itself when it has none.
 */
export async function withPinnedNames(plan: Plan, session: LocalSqlSession): Promise<Plan> {
  const pins = plan.namePins;
  if (!pins || pins.length === 0 || plan.rewrittenTree === undefined) return plan;
  const columns = pins.map((p, i) => `json_deserialize_sql('${p.replace(/'/g, "''")}'::JSON) AS n${i}`);
  const t = await session.query(`SELECT ${columns.join(', ')}`);
  let tree = plan.rewrittenTree;
  pins.forEach((_, i) => {
    const text = String(t.getChildAt(i)?.get(0));
    const name = text.startsWith('SELECT ') ? text.slice('SELECT '.length) : text;
    tree = tree.split(JSON.stringify(`${PIN_PREFIX}${i}`)).join(JSON.stringify(name));
  });
  const { namePins: _pins, ...rest } = plan;
  return { ...rest, rewrittenTree: tree };
}
