/**
 * Records → Arrow columns: 1M 150-byte network-flow records decoded into an Arrow RecordBatch by
 * the native decoder (one call, on this thread and as a task) and by a JavaScript DataView
 * decoder building the same columns (bench/decodeJs.ts). One core each, medians of 5 runs.
 *   npx tsx bench/decode.bench.ts [records]
 */
import { decodeRecords, decodeRecordsSync } from '../engine-rs/decode';
import { Schema } from '../engine-rs/schema';
import { decodeJs } from './decodeJs';
import { FLOW, generate } from './flows';

const N = Number(process.argv[2] ?? 1_000_000);
const RUNS = 5;

async function median(fn: () => unknown | Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return times.sort((a, b) => a - b)[RUNS >> 1]!;
}

async function main(): Promise<void> {
  const schema = Schema.parse(FLOW);
  const records = generate(N);
  const native = decodeRecordsSync(schema, records);
  const js = decodeJs(FLOW, native.schema, records);
  // The two decoders must agree before their speeds mean anything (checked on a sample of rows).
  for (const i of [0, 1, 2, 777, N - 1]) {
    const a = JSON.stringify(native.get(i)?.toJSON(), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    const b = JSON.stringify(js.get(i)?.toJSON(), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    if (a !== b) throw new Error(`row ${i} differs:\n native ${a}\n js     ${b}`);
  }
  const gb = records.length / 1e9;
  const rows: [string, number][] = [
    ['native decodeRecordsSync', await median(() => decodeRecordsSync(schema, records))],
    ['native decodeRecords (task)', await median(() => decodeRecords(schema, records))],
    ['JavaScript DataView', await median(() => decodeJs(FLOW, native.schema, records))],
  ];
  const jsTime = rows[2]![1];
  console.log(`Records → Arrow columns: ${N.toLocaleString('en')} records of 150 B (${(gb * 1000).toFixed(0)} MB), ${FLOW.fields.length} columns, median of ${RUNS}`);
  console.log('| decoder | median s | GB/s | Mrecords/s | vs JavaScript |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, t] of rows) {
    console.log(`| ${name} | ${t.toFixed(3)} | ${(gb / t).toFixed(2)} | ${(N / t / 1e6).toFixed(2)} | ${(jsTime / t).toFixed(1)}× |`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
