/**
 * Row passthrough of a statement (sql/rowPassthrough.ts, docs/sql.md "Row passthrough"): the
 * read's batches are the answer, under the names and types of the statement over the empty dataset
 * table (kept per plan). When a batch does not fit those types, the same batches are loaded into
 * DuckDB and the statement runs as usual: nothing is fetched twice. A door that takes rows as they
 * arrive (`ExecuteOptions.rows`) gets them while the rest are on their way (sql/streamedRows.ts).
 */
import * as arrow from 'apache-arrow';
import type { FetchOutcome } from './datasetFetcher';
import type { SqlResult } from './engineTypes';
import { passthroughTable } from './passthroughTable';
import type { PlanKeyed } from './planKeyed';
import type { DatasetRead } from './planner';
import type { PassthroughPlan } from './rowPassthrough';
import { projected } from './projectedBatch';
import { answer, beforeLoading, cutNotice, noteFailedBatches, paramsOf, runLimits, statementText, type StatementRun } from './statementRun';
import { StreamedRows } from './streamedRows';

/** Runs `pass` for `r`'s plan; `expected` keeps each plan's (or schema key's) result schema. */
export async function runPassthrough(r: StatementRun, pass: PassthroughPlan, expected: PlanKeyed<arrow.Schema>): Promise<SqlResult> {
  const read = r.plan.reads[0] as DatasetRead;
  const s = read.schema;
  const limits = runLimits(r);
  let schema = expected.get(r.plan, r.schemaKey);
  if (!schema) expected.set(r.plan, r.schemaKey, (schema = (await r.session.query(await statementText(r), { ...limits, ...paramsOf(r) })).schema));
  const max = r.settings.maxRows;
  // HD_SQL_STRICT must see every notice before the first row goes out, so it never streams.
  const stream = r.opts.rows && !r.settings.strict ? new StreamedRows(r.opts.rows, pass, schema, max) : undefined;
  const batches: arrow.RecordBatch[] = [];
  let out: FetchOutcome = { batchErrors: [], missingBatches: 0 };
  const take = async (b: arrow.RecordBatch): Promise<void> => {
    if (!stream || !(await stream.offer(b))) batches.push(b);
  };
  if (read.startTime <= read.endTime) out = await r.fetcher.fetch(read, take, { ...limits, qos: r.settings.qos });
  noteFailedBatches(r, s.id, out);
  if (stream?.started) {
    if (stream.cut) r.notices.push(cutNotice(max));
    if (r.settings.explainPushdown) r.info.push(`${s.id}: answered by the fetched rows, streamed as they arrived (row passthrough; DuckDB not run)`);
    return { table: new arrow.Table(schema), notices: [...r.notices, ...r.info], plan: r.plan, passedThrough: true, streamed: stream.sent };
  }
  const built = passthroughTable(batches, pass, schema, max > 0 ? max : undefined);
  if (built instanceof arrow.Table) {
    if (r.settings.explainPushdown) r.info.push(`${s.id}: answered by the fetched rows (row passthrough; DuckDB not run)`);
    return answer(r, built, { passedThrough: true });
  }
  if (r.settings.explainPushdown) r.info.push(`${s.id}: row passthrough fell back to DuckDB: ${built.reason}`);
  await beforeLoading(r);
  for (const b of batches) await r.session.append(s.id, projected(b, read.columns), limits);
  return answer(r, await r.session.query(await statementText(r), { ...limits, ...(max > 0 ? { maxRows: max } : {}), ...paramsOf(r) }));
}
