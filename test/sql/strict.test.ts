/**
 * HD_SQL_STRICT: a statement whose answer would carry a notice fails with `incomplete_result`
 * (55000 / FAILED_PRECONDITION / 422) instead of answering; one whose answer is exact answers.
 * The fetcher answers every read with no batch (the windows below hold none), so only the engine's
 * rule is under test here; the doors report the kind's codes as for every other kind.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { SqlEngine } from '../../sql/sqlEngine';
import { SqlError } from '../../sql/sqlError';

const flows = Schema.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8'));
const NOW = 1_700_003_600;
const empty: DatasetFetcher = { fetch: async () => ({ batchErrors: [], missingBatches: 0 }) };
const failing: DatasetFetcher = { fetch: async () => ({ batchErrors: [{ batchId: '00'.repeat(64), code: 12, message: 'hash mismatch' }], missingBatches: 1 }) };
const local = new LocalSql({ threads: 1 });
const engine = (fetcher: DatasetFetcher, strict: boolean, maxRows = 0): SqlEngine =>
  new SqlEngine(new Catalog([flows]), local, fetcher, { lookbackSec: 3600, timeoutMs: 10_000, maxRows, qos: 1, strict }, () => NOW);

async function failure(p: Promise<unknown>): Promise<SqlError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  assert.instance(e, SqlError, String(e));
  return e as SqlError;
}

const st = suite('HD_SQL_STRICT');
st.after(() => local.close());

st('without a time bound the default lookback is a notice: strict fails it with 55000 and says what to do', async () => {
  const e = await failure(engine(empty, true).execute('SELECT count(*) FROM flows'));
  assert.is(e.kind, 'incomplete_result');
  assert.equal(e.codes, { sqlstate: '55000', grpc: 9, http: 422 });
  assert.match(e.message, /HD_SQL_STRICT is on .*no lower time bound on ts.*Bound the time field/);
  // Not strict: the same statement answers, with the notice.
  const r = await engine(empty, false).execute('SELECT count(*) AS n FROM flows');
  assert.is(r.notices.length, 1);
});

st('a bounded, exact statement answers in strict mode; rows cut by HD_SQL_MAX_ROWS and failed batches fail it', async () => {
  const bounded = `SELECT count(*) AS n FROM flows WHERE ts >= ${NOW - 60} AND ts <= ${NOW}`;
  const r = await engine(empty, true).execute(bounded);
  assert.equal(r.notices, []);
  assert.is(Number(r.table.toArray()[0]?.n), 0);
  assert.match((await failure(engine(failing, true).execute(bounded))).message, /1 batch\(es\) failed delivery/);
  assert.match((await failure(engine(empty, true, 1).execute('SELECT * FROM range(3)'))).message, /cut to 1 rows \(HD_SQL_MAX_ROWS\)/);
});

st.run();
