/**
 * The query client's local evaluation (sdk/local): rows/s loaded from Arrow into the embedded DuckDB,
 * an aggregate and the Arrow result path, and exact cosine top-k over 1M × 128-d vectors.
 * Peers in the same run: DuckDB's own per-value appender (the row-by-row load path) on the same
 * columns, and DuckDB's array_cosine_distance (load + query) for the vector search.
 *   npx tsx bench/localSql.bench.ts [rows] [vectors]
 */
import * as arrow from 'apache-arrow';
import { DuckDBInstance } from '@duckdb/node-api';
import { decodeRecordsSync } from '../engine-rs/decode';
import { Schema } from '../engine-rs/schema';
import { LocalSql } from '../local/localSql';
import { vectorSearch } from '../local/vectorSearch';
import { FLOW, generate } from './flows';

const N = Number(process.argv[2] ?? 1_000_000);
const V = Number(process.argv[3] ?? 1_000_000);
const DIMS = 128;
const RUNS = 3;

async function median(fn: () => Promise<unknown> | unknown): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return times.sort((a, b) => a - b)[RUNS >> 1]!;
}

/** The row-by-row peer: DuckDB's appender, one append call per value (numeric and text columns). */
async function perValueLoad(batch: arrow.RecordBatch, rows: number): Promise<number> {
  const db = await DuckDBInstance.create(':memory:', { autoinstall_known_extensions: 'false', threads: '2' });
  const c = await db.connect();
  await c.run('CREATE TABLE t (ts BIGINT, proto VARCHAR, src VARCHAR, bytes UBIGINT, rtt FLOAT, host VARCHAR)');
  const cols = ['ts', 'proto', 'src', 'bytes', 'rtt', 'host'].map((n) => batch.getChild(n)!);
  const t0 = process.hrtime.bigint();
  const app = await c.createAppender('t');
  for (let i = 0; i < rows; i++) {
    app.appendBigInt(cols[0]!.get(i) as bigint);
    app.appendVarchar(String(cols[1]!.get(i)));
    app.appendVarchar(cols[2]!.get(i) as string);
    app.appendUBigInt(cols[3]!.get(i) as bigint);
    app.appendFloat(cols[4]!.get(i) as number);
    app.appendVarchar(cols[5]!.get(i) as string);
    app.endRow();
  }
  app.closeSync();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  c.closeSync();
  db.closeSync();
  return s;
}

function vectors(n: number): arrow.Table {
  const values = new Float32Array(n * DIMS);
  let x = 0x2545f491;
  for (let i = 0; i < values.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    values[i] = ((x >>> 0) / 4294967296) * 2 - 1;
  }
  const child = arrow.makeData({ type: new arrow.Float32(), length: values.length, data: values });
  const type = new arrow.FixedSizeList(DIMS, new arrow.Field('item', new arrow.Float32(), false));
  const v = arrow.makeData({ type, length: n, child });
  const id = arrow.makeData({ type: new arrow.Int32(), length: n, data: Int32Array.from({ length: n }, (_x, i) => i) });
  const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int32(), false), new arrow.Field('v', type, false)]);
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: [id, v] }))]);
}

async function main(): Promise<void> {
  const schema = Schema.parse(FLOW);
  const batch = decodeRecordsSync(schema, generate(N));
  // Columns picked by hand: apache-arrow 21's RecordBatch.select fills some picked columns with nulls.
  const pick = (names: string[]): arrow.Table => new arrow.Table(Object.fromEntries(names.map((n) => [n, batch.getChild(n)!])));
  const numeric = pick(['ts', 'sport', 'dport', 'bytes', 'packets', 'score']);
  const local = new LocalSql({ threads: 2 });
  const loadInto = async (t: arrow.Table | arrow.RecordBatch): Promise<void> => {
    const s = await local.openSession();
    await s.register('flows', t);
    await s.close();
  };
  const all = await median(() => loadInto(batch));
  const num = await median(() => loadInto(numeric));
  const PEER = Math.min(N, 200_000);
  const peer = await perValueLoad(batch, PEER);
  const six = pick(['ts', 'proto', 'src', 'bytes', 'rtt', 'host']);
  const sixT = await median(() => loadInto(six));

  const session = await local.openSession();
  await session.register('flows', batch);
  const agg = await median(() => session.query('SELECT proto, count(*) AS n, sum(bytes) AS b, avg(rtt) AS r FROM flows GROUP BY proto'));
  const outAll = await median(() => session.query('SELECT * FROM flows'));
  const outNum = await median(() => session.query('SELECT ts, sport, dport, bytes, packets, score FROM flows'));
  await session.close();

  console.log(`Local SQL: ${N.toLocaleString('en')} decoded flow records (${FLOW.fields.length} columns), median of ${RUNS}, DuckDB threads 2`);
  console.log('| step | median s | Mrows/s | vs per-value appender |');
  console.log('|---|---:|---:|---:|');
  const peerRate = PEER / peer;
  const line = (name: string, s: number, rows: number, vsPeer = false): void =>
    console.log(`| ${name} | ${s.toFixed(3)} | ${(rows / s / 1e6).toFixed(2)} | ${vsPeer ? `${(rows / s / peerRate).toFixed(1)}×` : ''} |`);
  line(`load all ${FLOW.fields.length} columns (Arrow → DuckDB)`, all, N);
  line('load 6 numeric columns', num, N);
  line('load 6 mixed columns (ts, proto, src, bytes, rtt, host)', sixT, N, true);
  line(`peer: per-value appender, same 6 columns (${PEER.toLocaleString('en')} rows)`, peer, PEER, true);
  line('GROUP BY proto: count, sum, avg (result as Arrow)', agg, N);
  line(`SELECT * back to Arrow (${FLOW.fields.length} columns)`, outAll, N);
  line('SELECT 6 numeric columns back to Arrow', outNum, N);

  const vt = vectors(V);
  const target = Array.from({ length: DIMS }, (_x, i) => Math.sin(i));
  const js = await median(() => vectorSearch(vt, 'v', target, 10));
  const jsTop = [...vectorSearch(vt, 'v', target, 10).getChild('id')!];
  const vs = await local.openSession();
  const vload = await median(async () => {
    await vs.register('vecs', vt);
  });
  const targetSql = `[${target.join(', ')}]::FLOAT[${DIMS}]`;
  const vq = await median(() => vs.query(`SELECT id, array_cosine_distance(v, ${targetSql}) AS d FROM vecs ORDER BY d, id LIMIT 10`));
  const ddTop = [...(await vs.query(`SELECT id FROM vecs ORDER BY array_cosine_distance(v, ${targetSql}), id LIMIT 10`)).getChild('id')!];
  await vs.close();
  await local.close();
  const same = JSON.stringify(jsTop) === JSON.stringify(ddTop);
  console.log(`\nVector search: ${V.toLocaleString('en')} × ${DIMS}-d Float32 vectors, top 10 by cosine distance, median of ${RUNS} (same top 10 in both: ${same})`);
  console.log('| path | median s | Mvectors/s | vs vectorSearch |');
  console.log('|---|---:|---:|---:|');
  const vline = (name: string, s: number): void => console.log(`| ${name} | ${s.toFixed(3)} | ${(V / s / 1e6).toFixed(2)} | ${(js / s).toFixed(2)}× |`);
  vline('vectorSearch (typed arrays over the Arrow child buffer)', js);
  vline('DuckDB array_cosine_distance: query only (data already in DuckDB)', vq);
  vline('DuckDB: load into DuckDB + query', vload + vq);
  if (!same) throw new Error(`top 10 differ: ${JSON.stringify(jsTop)} vs ${JSON.stringify(ddTop)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
