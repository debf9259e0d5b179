/**
 * The reference's rule for filter values in the SDK: values are not translated, and a filter whose
 * value the schema cannot encode is not pushed to the Storage Nodes. A sub-query left with no filter
 * the nodes can apply matches every record, so the whole query then runs without pushdown. Both
 * are said in the client's log, because a silent full scan of a window is a surprise.
 */
import { QueryError as KernelQueryError, ScanFilter } from '../engine-rs/index';
import type { Schema } from '../engine-rs/schema';
import { filterJson, type Filter, type SubQuery } from '../query/filter';

/** What {@link pushableSubQueries} kept, and why it dropped the rest. */
export interface PushdownCheck {
  /** The sub-queries to send: `[]` (no pushdown) when one of them was left with no filter. */
  readonly subQueries: readonly SubQuery[];
  /** One line per dropped filter, and one when the query lost its pushdown. */
  readonly notes: readonly string[];
}

/** Each filter compiled alone against the schema (the kernel's own check); the ones that fail are left out. */
export function pushableSubQueries(schema: Schema, subQueries: readonly SubQuery[]): PushdownCheck {
  const notes: string[] = [];
  const kept: SubQuery[] = [];
  let emptied = -1;
  subQueries.forEach((sq, i) => {
    const filters = sq.filters.filter((f, j) => {
      const why = refusal(schema, f);
      if (why) notes.push(`sub_queries[${i}].filters[${j}] (${describe(f)}) is not pushed down: ${why}`);
      return !why;
    });
    if (filters.length === 0 && emptied < 0) emptied = i;
    kept.push({ filters });
  });
  if (emptied >= 0) {
    notes.push(`sub_queries[${emptied}] has no filter the Storage Nodes can apply, so it matches every record: the query runs without pushdown and returns every record of its batches`);
    return { subQueries: [], notes };
  }
  return { subQueries: notes.length === 0 ? subQueries : kept, notes };
}

/** Filters checked so far per schema, by their JSON: a client sends the same filters query after query, and a check compiled a kernel filter. */
const checked = new WeakMap<Schema, Map<string, string | undefined>>();
/** Checks remembered per schema at most (a window bound changes with each statement); past it the memory starts over. */
const MAX_CHECKED = 4096;

function refusal(schema: Schema, f: Filter): string | undefined {
  const json = JSON.stringify([{ filters: [filterJson(f)] }]);
  let known = checked.get(schema);
  if (!known) checked.set(schema, (known = new Map()));
  if (known.has(json)) return known.get(json);
  let why: string | undefined;
  try {
    ScanFilter.compile(schema, json);
  } catch (err) {
    if (!(err instanceof KernelQueryError)) throw err;
    why = err.reason;
  }
  if (known.size >= MAX_CHECKED) known.clear();
  known.set(json, why);
  return why;
}

function describe(f: Filter): string {
  const operand = f.values ? `[${f.values.join(', ')}]` : (f.value ?? '');
  return `${f.field} ${f.op} ${operand}`.trim();
}
