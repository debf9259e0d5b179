/**
 * Writes the seed corpus of the Rust fuzz targets (engine-rs/fuzz/seeds/<target>/), made with the
 * project's own encoders so every seed is a valid input a mutation starts from:
 *
 *   npx tsx test/fuzz/rustSeeds.ts
 *
 * Regression inputs found by fuzzing go in the same folders by hand (named `crash-<what>`); this
 * script only (re)writes its own `seed-*` files.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeFrame, generateBatchIdNumber, HashChain, Schema, SegmentWriter, zoneFieldsOf } from '../../engine-rs/index';
import { SCHEMA as TICKS } from '../nodes/storageNode/queryKit';

const root = path.resolve(__dirname, '../../engine-rs/fuzz/seeds');
const out = (target: string, name: string, bytes: Buffer | string): void => {
  mkdirSync(path.join(root, target), { recursive: true });
  writeFileSync(path.join(root, target, `seed-${name}`), bytes);
};
const withByte = (b: number, rest: Buffer | string): Buffer => Buffer.concat([Buffer.from([b]), Buffer.from(rest)]);

async function main(): Promise<void> {
  const id = generateBatchIdNumber(7n);
  const records = Buffer.alloc(3 * 40, 0x41);
  const chain = new HashChain(id, { recordSize: 40, blockSize: 2, algorithm: 'sha256' });
  await chain.update(records);
  const closing = chain.finish().closingHash;
  const token = Buffer.alloc(16, 9);
  const frames = {
    hello: encodeFrame({ kind: 'hello', version: 1, role: 'scc', datasetId: 'ticks', recordSize: 40 }),
    records: encodeFrame({ kind: 'records', batchId: id, recordSize: 40, count: 3, payload: records }),
    eob: encodeFrame({ kind: 'eob', batchId: id, recordCount: 3, closingHash: closing }),
    eobDigest: encodeFrame({ kind: 'eob', batchId: id, recordCount: 3, closingHash: closing, digest: Buffer.alloc(32, 0xd1) }),
    eobAuth: encodeFrame({ kind: 'eob', batchId: id, recordCount: 3, closingHash: closing, auth: { queryId: 5, token } }),
    bbn: encodeFrame({ kind: 'bbn', batchId: id, reason: '12 hash mismatch: x' }),
    query: encodeFrame({ kind: 'query', queryId: 5, token, json: '{"query_id":5,"dataset":"ticks"}' }),
    cancel: encodeFrame({ kind: 'cancel', queryId: 5, token }),
    error: encodeFrame({ kind: 'error', code: 10, message: 'batch refused' }),
    credit: encodeFrame({ kind: 'credit', bytes: 1 << 20 }),
  };
  for (const [name, f] of Object.entries(frames)) out('hdwp_frame', name, withByte(0x0b, f));
  out('hdwp_frame', 'stream', withByte(0x15, Buffer.concat([frames.hello, frames.records, frames.eobDigest, frames.credit])));
  for (const name of ['eob', 'eobDigest', 'eobAuth'] as const) out('hdwp_eob', name, withByte(name === 'eobAuth' ? 1 : 0, frames[name].subarray(16)));

  const schemas = ['pipelines/examples/data/flows.schema.json', 'up/demo/flows.schema.json', 'up/demo/chess.schema.json'];
  for (const f of schemas) out('schema_json', path.basename(path.dirname(f)) + '-' + path.basename(f), readFileSync(path.resolve(__dirname, '../..', f)));
  out('schema_json', 'ticks.json', JSON.stringify(TICKS));

  out('ndjson_parse', 'lines.ndjson', [
    '{"ts":"2024-01-02T03:04:05Z","p":"tcp","a":"10.0.0.1","b":"::1","n":"12.34","f":1.5,"s":"hello","r":[80,443],"w":"-12345678901234567890","m":"e4","fen":"rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1","t":true,"x":"AQID","d":1000}',
    '{"ts":1700000000,"p":17,"a":"192.168.1.1","n":-1,"f":-0.0,"s":"","t":false}',
    '{}',
    'not json',
  ].join('\n'));
  out('ndjson_parse', 'table.csv', 'ts,p,a,n,f,s,t\n1700000000,tcp,10.0.0.1,1.25,2.5,abc,true\n1700000001,udp,10.0.0.2,"3",,"x,y",false\n');

  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-seeds-'));
  try {
    const schema = Schema.parse(JSON.stringify(TICKS));
    for (const [n, count, block] of [[1, 0, 4], [2, 5, 2], [3, 9, 4]] as const) {
      const b = generateBatchIdNumber(BigInt(n));
      const data = Buffer.alloc(count * 40);
      for (let i = 0; i < data.length; i++) data[i] = (i * 37 + n) & 0xff;
      const w = SegmentWriter.create({ dir, name: `s${n}.hdseg`, datasetId: 'ticks', batchId: b, recordSize: 40, blockSize: block, algorithm: n === 3 ? 'blake3' : 'sha256', fields: zoneFieldsOf(schema) });
      if (count > 0) await w.append(data);
      const s = await w.finish(null);
      out('segment_read', `${count}-records.hdseg`, readFileSync(s.path));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const filters = [
    '[]',
    '[{"filters":[{"field":"ts","op":"between","values":["1500","1700"]}]}]',
    '[{"filters":[{"field":"u8","op":"eq","value":"tcp"},{"field":"s","op":"eq","value":"ab"}]},{"filters":[{"field":"d","op":"lt","value":"-1.5"}]}]',
    '[{"filters":[{"field":"ip","op":"eq","value":"10.0.0.1"},{"field":"ports","op":"contains","value":"443"}]}]',
    '[{"filters":[{"field":"fen","op":"eq","value":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}]}]',
    '[{"filters":[{"field":"n","op":"ge","value":"12.5"},{"field":"i256","op":"ne","value":"-1"},{"field":"b","op":"eq","value":"true"}]}]',
  ];
  filters.forEach((f, i) => out('filter_json', `q${i}.json`, withByte(i & 1, f)));

  const policies = [
    'package hd.authz\nimport rego.v1\n\ndefault allow := true\nhidden_fields contains "src_ip" if input.role != "admin"\nhidden_fields contains f if { some f in data.hidden[input.role] }\nconstraints contains {"field": "tenant", "value": input.email} if input.role == "analyst"\n',
    'package hd.authz\nimport rego.v1\ndefault allow := false\nallow if input.role == "admin"\n',
  ];
  policies.forEach((p, i) => out('rego_policy', `policy${i}.rego`, withByte(0, p)));
  const inputs = [
    { role: 'admin', email: 'a@x', dataset: 'flows', fields: ['ts', 'src_ip'], query: {} },
    { role: 'analyst', email: 'ann@x', dataset: 'flows', fields: [], query: { sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] } },
    { role: 'guest' },
  ];
  inputs.forEach((x, i) => out('rego_policy', `input${i}.json`, withByte(1, JSON.stringify(x))));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
