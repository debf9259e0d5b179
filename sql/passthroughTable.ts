/**
 * The answer of a passing-through statement (sql/rowPassthrough.ts) built from the fetched batches:
 * the statement's columns in its order, under the names and types DuckDB gives them (the statement's
 * schema over the empty dataset table), no values copied. A batch whose column arrives in another
 * type, or whose enum labels differ from the first batch's, makes it refuse: the engine then loads
 * the batches into DuckDB and runs the statement as usual. {@link PassthroughBatches} builds the
 * answer a batch at a time, for rows streamed to a door as they arrive.
 */
import * as arrow from 'apache-arrow';
import type { PassthroughPlan } from './rowPassthrough';

/** Why the batches cannot be the answer as they are. */
export interface NotPassed {
  readonly reason: string;
}

/**
 * The table of `pass`'s columns of `batches` under `expected` (the statement's result schema), cut
 * at the plan's LIMIT and at `maxRows + 1` rows when given (the caller says the cap applied).
 */
export function passthroughTable(batches: readonly arrow.RecordBatch[], pass: PassthroughPlan, expected: arrow.Schema, maxRows?: number): arrow.Table | NotPassed {
  const cap = Math.min(pass.limit ?? Infinity, maxRows === undefined ? Infinity : maxRows + 1);
  const answer = new PassthroughBatches(pass, expected, { sameLabels: true });
  const out: arrow.RecordBatch[] = [];
  let rows = 0;
  for (const b of batches) {
    if (rows >= cap) break;
    const take = Math.min(b.numRows, cap - rows);
    if (take === 0) continue;
    const built = answer.batch(b, take);
    if (!(built instanceof arrow.RecordBatch)) return built;
    out.push(built);
    rows += take;
  }
  return new arrow.Table(expected, out);
}

/**
 * The answer's batches one fetched batch at a time: `pass`'s columns under `expected`'s names and
 * types, no values copied. `sameLabels`: every batch must carry the first one's enum labels (a
 * table has one dictionary per column); without it each batch keeps its own (rows streamed to a
 * door, which writes each batch's labels as they are).
 */
export class PassthroughBatches {
  private readonly dictionaries = new Map<string, arrow.Vector>();

  /** @param pass the plan's columns and LIMIT; @param expected the statement's result schema */
  constructor(
    private readonly pass: PassthroughPlan,
    private readonly expected: arrow.Schema,
    private readonly opts: { readonly sameLabels: boolean },
  ) {}

  /** The first `take` rows of `b` as an answer batch, or why they cannot be. */
  batch(b: arrow.RecordBatch, take = b.numRows): arrow.RecordBatch | NotPassed {
    const { pass, expected } = this;
    if (expected.fields.length !== pass.columns.length) return { reason: `the statement answers ${expected.fields.length} columns, the plan names ${pass.columns.length}` };
    const children: arrow.Data[] = [];
    for (let i = 0; i < pass.columns.length; i++) {
      const want = expected.fields[i] as arrow.Field;
      const v = b.getChild(pass.columns[i]!.field);
      if (!v || v.data.length !== 1) return { reason: `column ${pass.columns[i]!.field} is not in the fetched batch` };
      if (String(v.type) !== String(want.type)) return { reason: `column ${want.name} arrives as ${String(v.type)}, the statement answers ${String(want.type)}` };
      const d = retyped(take < b.numRows ? (v.data[0] as arrow.Data).slice(0, take) : (v.data[0] as arrow.Data), want.type, String(i), this.opts.sameLabels ? this.dictionaries : new Map());
      if (!d) return { reason: `column ${want.name}: the batches' enum labels differ` };
      children.push(d);
    }
    return new arrow.RecordBatch(expected, arrow.makeData({ type: new arrow.Struct(expected.fields), length: take, nullCount: 0, children }));
  }
}

/**
 * `d` under `type` (the same type but for dictionary ids), its dictionaries — nested ones too —
 * replaced by the first batch's at the same `path` when their labels are equal; undefined when not.
 */
function retyped(d: arrow.Data, type: arrow.DataType, path: string, first: Map<string, arrow.Vector>): arrow.Data | undefined {
  const childTypes = type.children ?? [];
  const children: arrow.Data[] = [];
  for (let k = 0; k < d.children.length; k++) {
    const c = retyped(d.children[k] as arrow.Data, (childTypes[k] as arrow.Field | undefined)?.type ?? (d.children[k] as arrow.Data).type, `${path}.${k}`, first);
    if (!c) return undefined;
    children.push(c);
  }
  let dictionary = d.dictionary;
  if (dictionary) {
    const known = first.get(path);
    if (!known) first.set(path, dictionary);
    else if (known !== dictionary) {
      if (!sameValues(known, dictionary)) return undefined;
      dictionary = known;
    }
  }
  return new arrow.Data(type, d.offset, d.length, d.nullCount, d, children, dictionary);
}

/** Equal length and values (enum label vectors: a few hundred strings at most). */
function sameValues(a: arrow.Vector, b: arrow.Vector): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a.get(i) !== b.get(i)) return false;
  return true;
}
