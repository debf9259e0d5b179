/**
 * A fetched batch cut to the plan's projection. Columns are a request to the fetcher, not a
 * promise: a node or fetcher that decoded more (every column) is accepted, and the engine keeps the
 * columns the dataset's session table was made with.
 */
import * as arrow from 'apache-arrow';

/** `b` with only `columns`, in their order (no copy); `b` itself when it has just those, or lacks one (the append's shape check says which). */
export function projected(b: arrow.RecordBatch, columns: readonly string[] | undefined): arrow.RecordBatch {
  if (!columns || b.numCols === columns.length) return b;
  const ix = columns.map((n) => b.schema.fields.findIndex((f) => f.name === n));
  if (ix.some((i) => i < 0)) return b;
  const fields = ix.map((i) => b.schema.fields[i]!);
  const schema = new arrow.Schema(fields, b.schema.metadata);
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(fields), length: b.numRows, nullCount: 0, children: ix.map((i) => b.data.children[i]!) }));
}
