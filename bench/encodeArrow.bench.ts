/**
 * Arrow → records: 1M 150-byte network-flow records, decoded into an Arrow RecordBatch once, then
 * encoded back by `encodeArrowBatch` (one native call, on this thread and as a task) and by the
 * JavaScript per-record path (each row's values as text → `convertRecordToBinary`,
 * bench/encodeArrowJs.ts). Every path must give back the original bytes before it is timed.
 * Medians of 5 (the JavaScript path: of 3, on the first `JS_ROWS` rows, scaled to N).
 *   npx tsx bench/encodeArrow.bench.ts [records]
 */
import { decodeRecordsSync } from '../engine-rs/decode';
import { encodeArrowBatch, encodeArrowBatchAsync } from '../engine-rs/encodeArrow';
import { Schema } from '../engine-rs/schema';
import { encodeJs } from './encodeArrowJs';
import { FLOW, generate } from './flows';

const N = Number(process.argv[2] ?? 1_000_000);
const JS_ROWS = Math.min(N, 100_000);

/** The flows with every enum code defined (a code the enum lacks decodes to the default label, which has no code to encode back). */
function definedCodes(records: Buffer): Buffer {
  for (let o = 0; o < records.length; o += 150) {
    if (records[o + 8] === 99) records[o + 8] = 6;
    for (let k = 115; k < 123; k++) if (records[o + k] === 99) records[o + k] = 17;
  }
  return records;
}

async function median(runs: number, fn: () => unknown | Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return times.sort((a, b) => a - b)[runs >> 1]!;
}

function check(what: string, got: Buffer, want: Buffer): void {
  if (!got.equals(want)) throw new Error(`${what} did not give back the original records`);
}

async function main(): Promise<void> {
  const schema = Schema.parse(FLOW);
  const records = definedCodes(generate(N));
  const batch = decodeRecordsSync(schema, records);
  const jsBatch = batch.slice(0, JS_ROWS);
  const jsRecords = records.subarray(0, JS_ROWS * 150);
  check('encodeArrowBatch', encodeArrowBatch(schema, batch), records);
  check('encodeArrowBatchAsync', await encodeArrowBatchAsync(schema, batch), records);
  check('JavaScript per record', encodeJs(schema, jsBatch), jsRecords);
  const rows: [string, number][] = [
    ['native encodeArrowBatch', await median(5, () => encodeArrowBatch(schema, batch))],
    ['native encodeArrowBatchAsync (task)', await median(5, () => encodeArrowBatchAsync(schema, batch))],
    [`JavaScript per record (${JS_ROWS.toLocaleString('en')} rows, scaled)`, ((await median(3, () => encodeJs(schema, jsBatch))) * N) / JS_ROWS],
  ];
  const js = rows[2]![1];
  const gb = records.length / 1e9;
  console.log(`Arrow → records: ${N.toLocaleString('en')} records of 150 B (${(gb * 1000).toFixed(0)} MB), ${FLOW.fields.length} columns`);
  console.log('| path | median s | GB/s out | Mrecords/s | vs JavaScript |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, t] of rows) {
    console.log(`| ${name} | ${t.toFixed(3)} | ${(gb / t).toFixed(2)} | ${(N / t / 1e6).toFixed(2)} | ${(js / t).toFixed(1)}× |`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
