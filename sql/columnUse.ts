/**
 * Which dataset columns a statement can read, from DuckDB's parse tree, so hd_sql decodes and loads
 * only those (column projection). Conservative by construction: every name any column reference
 * spells counts (a superset: an alias or a lambda parameter that happens to share a field's name
 * only costs a column), and anything that reads columns without naming them — a star, `COLUMNS(…)`,
 * a positional reference `#n`, a NATURAL join, PIVOT/UNPIVOT, a table's row used as a value
 * (`SELECT f FROM flows f`), columns renamed by position (`FROM flows f(a, b)`) — means every column.
 */
import type { Schema } from '../engine-rs/schema';
import type { BigJsonValue } from './bigJson';
import { isNode } from './pushdown';

/** What a statement's tree says about the columns it reads. */
export interface ColumnUse {
  /** True when the statement may read columns it does not name: load every column. */
  readonly all: boolean;
  /** Every name spelled by a column reference or a USING list, lower-cased (DuckDB's identifiers are case-insensitive). */
  readonly names: ReadonlySet<string>;
}

/**
 * Walks `root`. `relations` are the lower-cased names and aliases the dataset tables go by in the
 * statement: a column reference spelling one of them alone is the whole row.
 */
export function columnUse(root: BigJsonValue, relations: ReadonlySet<string>): ColumnUse {
  const names = new Set<string>();
  let all = false;
  const visit = (v: BigJsonValue | undefined): void => {
    if (all) return;
    if (Array.isArray(v)) return v.forEach(visit);
    if (!isNode(v)) return;
    const type = v.type;
    if (v.class === 'STAR' || type === 'STAR' || type === 'POSITIONAL_REFERENCE' || type === 'PIVOT') return void (all = true);
    if (type === 'COLUMN_REF' && Array.isArray(v.column_names)) {
      const parts = v.column_names.map((p) => String(p).toLowerCase());
      if (parts.length === 1 && relations.has(parts[0]!)) return void (all = true);
      for (const p of parts) names.add(p);
    }
    if (type === 'JOIN') {
      if (v.ref_type === 'NATURAL') return void (all = true);
      if (Array.isArray(v.using_columns)) for (const c of v.using_columns) names.add(String(c).toLowerCase());
    }
    if (type === 'BASE_TABLE' && Array.isArray(v.column_name_alias) && v.column_name_alias.length > 0) return void (all = true);
    for (const x of Object.values(v)) visit(x);
  };
  visit(root);
  return { all, names };
}

/**
 * The fields of `schema` to decode for `use`, in schema order; `undefined` for every field. A
 * statement naming none of them (`SELECT count(*) FROM t`) still needs the rows: it gets the time
 * field alone (a table needs one column).
 */
export function fieldsToRead(schema: Schema, use: ColumnUse): readonly string[] | undefined {
  if (use.all) return undefined;
  const fields = schema.fields.map((f) => f.name);
  const picked = fields.filter((n) => use.names.has(n.toLowerCase()));
  if (picked.length === fields.length) return undefined;
  return picked.length > 0 ? picked : [schema.timeField];
}
