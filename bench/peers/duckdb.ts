/**
 * DuckDB in `npm run bench:peers` (@duckdb/node-api, in this process): a database file in the
 * bench's directory, ingest with the appender, a value at a time (its fastest path from
 * JavaScript here), then CHECKPOINT so the data is durable in the file; queries through the same API
 * with rows materialised as JS values. Cold: the first query after reopening the file.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, decimalValue, type DuckDBConnection } from '@duckdb/node-api';
import { readRow, type Dataset, type Row } from './dataset';
import { runQueries, since, tsBound, workload, type SystemResult } from './workload';

const TABLE = `CREATE TABLE flows (ts BIGINT, proto VARCHAR, src VARCHAR, dst VARCHAR, src6 VARCHAR, sport INTEGER, dport INTEGER, bytes BIGINT, packets BIGINT, dt BIGINT, amount DECIMAL(18,4), ttl SMALLINT, rtt REAL, score DOUBLE, ok BOOLEAN, host VARCHAR, ports VARCHAR, tags VARCHAR, asn INTEGER, vlan SMALLINT, flow_id BIGINT, country VARCHAR)`;
const BLOCK = 2048;

const config = (dir: string): Record<string, string> => ({ autoinstall_known_extensions: 'false', extension_directory: path.join(dir, 'ext'), temp_directory: path.join(dir, 'tmp') });

/**
 * Appends every record through the appender, a value at a time (faster from JavaScript than filling
 * data chunks: measured 4× here), closes it and checkpoints: ms of the appender's own work. Turning
 * records into JS values (the bench's decoding, not DuckDB's) is timed apart and left out, as the
 * CSV and ILP texts of the other peers are made before timing.
 */
async function ingest(d: Dataset, conn: DuckDBConnection): Promise<{ ms: number; prepMs: number }> {
  let prepMs = 0;
  const t = process.hrtime.bigint();
  const a = await conn.createAppender('flows');
  const rows: Row[] = [];
  for (let from = 0; from < d.n; from += BLOCK) {
    const p = process.hrtime.bigint();
    rows.length = 0;
    for (let i = from; i < Math.min(d.n, from + BLOCK); i++) rows.push(readRow(d.records, i));
    prepMs += since(p);
    for (const r of rows) {
      a.appendBigInt(BigInt(r[0]));
      a.appendVarchar(r[1]);
      a.appendVarchar(r[2]);
      a.appendVarchar(r[3]);
      a.appendVarchar(r[4]);
      a.appendInteger(r[5]);
      a.appendInteger(r[6]);
      a.appendBigInt(BigInt(r[7]));
      a.appendBigInt(BigInt(r[8]));
      a.appendBigInt(BigInt(r[9]));
      a.appendDecimal(decimalValue(Math.round(Number(r[10]) * 1e4), 18, 4));
      a.appendSmallInt(r[11]);
      a.appendFloat(r[12]);
      a.appendDouble(r[13]);
      a.appendBoolean(r[14]);
      a.appendVarchar(r[15]);
      a.appendVarchar(r[16]);
      a.appendVarchar(r[17]);
      a.appendInteger(r[18]);
      a.appendSmallInt(r[19]);
      a.appendBigInt(BigInt(r[20]));
      a.appendVarchar(r[21]);
      a.endRow();
    }
  }
  a.closeSync();
  await conn.run('CHECKPOINT');
  return { ms: since(t) - prepMs, prepMs };
}

/** Runs DuckDB's part of the bench. */
export async function runDuckdb(d: Dataset, base: string, csv: string): Promise<SystemResult> {
  const r: SystemResult = { system: 'DuckDB', answers: {}, notes: [] };
  const dir = path.join(base, 'duckdb');
  mkdirSync(dir);
  const file = path.join(dir, 'flows.duckdb');
  let inst: DuckDBInstance | undefined;
  let conn: DuckDBConnection | undefined;
  try {
    inst = await DuckDBInstance.create(file, config(dir));
    conn = await inst.connect();
    await conn.run(TABLE);
    const ing = await ingest(d, conn);
    r.ingestMs = ing.ms;
    r.notes.push(`records → JS values for the appender took ${(ing.prepMs / 1000).toFixed(1)} s more (left out of the ingest figure)`);
    // Its native bulk path beside it: the CSV the other peers load, read in parallel by DuckDB.
    await conn.run(TABLE.replace('TABLE flows', 'TABLE flows_csv'));
    const t = process.hrtime.bigint();
    await conn.run(`COPY flows_csv FROM '${csv}' (FORMAT csv, HEADER false)`);
    await conn.run('CHECKPOINT');
    r.ingestFileMs = since(t);
    await conn.run('DROP TABLE flows_csv');
    await conn.run('CHECKPOINT');
    conn.closeSync();
    inst.closeSync();
    // Cold: the first query after the file is opened again (the OS page cache stays warm).
    inst = await DuckDBInstance.create(file, config(dir));
    conn = await inst.connect();
    const c = conn;
    await runQueries(workload(d, tsBound), { query: async (q) => (await c.runAndReadAll(q)).getRows() }, r);
    r.notes.push('ingest = appender, a value at a time, + CHECKPOINT; cold: first query after reopening the database file; 2 threads (one per core)');
  } catch (err) {
    r.skipped = `failed: ${(err as Error).message}`;
  } finally {
    conn?.closeSync();
    inst?.closeSync();
  }
  return r;
}
