import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EXIT, main, type CliIo } from '../../bin/cli';
import { FrameDecoder, Schema, decodeRecordsSync, type Frame } from '../../index';

const example = path.resolve(__dirname, '../../pipelines/examples/ndjson-to-hdwp.yaml');
const dataDir = path.resolve(__dirname, '../../pipelines/examples/data');
const schema = Schema.parse(readFileSync(path.join(dataDir, 'flows.schema.json'), 'utf8'));

interface Captured extends CliIo {
  err: string;
}
const io = (env: Record<string, string>): Captured => {
  const c: Captured = {
    err: '',
    stdout: { write: () => true },
    stderr: { write: (s: string) => (c.err += s), isTTY: false },
    env,
    handleSignals: false,
  };
  return c;
};

function framesOf(file: string): Frame[] {
  const dec = new FrameDecoder();
  const frames = dec.push(readFileSync(file));
  dec.end();
  return frames;
}

const e2e = suite('pipelines/examples/ndjson-to-hdwp.yaml');

e2e('turns the sample NDJSON into one hello, records per minute batch and one eob per batch', async () => {
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'hd-e2e-')), 'flows.hdwp');
  const c = io({ OUTPUT: out });
  assert.is(await main(['run', example, '--quiet'], c), EXIT.ok, c.err);
  const frames = framesOf(out);
  assert.is(frames[0].kind, 'hello');
  if (frames[0].kind === 'hello') {
    assert.is(frames[0].datasetId, 'flows');
    assert.is(frames[0].recordSize, 64);
  }
  const perBatch = new Map<string, number>();
  const closed = new Map<string, number>();
  const payloads: Buffer[] = [];
  for (const f of frames.slice(1)) {
    if (f.kind === 'records') {
      const key = f.batchId.toHex();
      assert.not.ok(closed.has(key), 'no records after a batch is closed');
      perBatch.set(key, (perBatch.get(key) ?? 0) + f.count);
      assert.is(f.batchId.timeEnd - f.batchId.timeStart, 60);
      payloads.push(Buffer.from(f.payload));
    } else if (f.kind === 'eob') {
      const key = f.batchId.toHex();
      assert.not.ok(closed.has(key), 'exactly one eob per batch');
      closed.set(key, f.recordCount);
    } else {
      assert.unreachable(`unexpected ${f.kind} frame`);
    }
  }
  assert.equal([...closed.keys()].sort(), [...perBatch.keys()].sort());
  for (const [k, n] of perBatch) assert.is(closed.get(k), n);
  const lines = readFileSync(path.join(dataDir, 'flows.ndjson'), 'utf8').trim().split('\n');
  assert.is([...perBatch.values()].reduce((a, b) => a + b, 0), lines.length);

  // Every record sits in the batch of its own minute, and decodes back to its source line.
  const batch = decodeRecordsSync(schema, Buffer.concat(payloads));
  const ts = batch.getChild('ts')!.toArray() as BigInt64Array;
  const src = batch.getChild('src_ip')!;
  const proto = batch.getChild('proto')!;
  const bySource = new Map<string, { ts: number; src_ip: string; proto: string; src_port: number }>(lines.map((l) => {
    const o = JSON.parse(l) as { ts: number; src_ip: string; proto: string; src_port: number };
    return [`${o.ts}|${o.src_ip}|${o.src_port}`, o] as const;
  }));
  const srcPort = batch.getChild('src_port')!;
  for (let i = 0; i < batch.numRows; i += 97) {
    const o = bySource.get(`${ts[i]}|${src.get(i)}|${srcPort.get(i)}`);
    assert.ok(o, `record ${i} matches a source line`);
    assert.is(proto.get(i), o!.proto);
  }
});

e2e('bad lines are reported with their line numbers and the good ones kept', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hd-e2e-'));
  const input = path.join(dir, 'in.ndjson');
  const good = readFileSync(path.join(dataDir, 'flows.ndjson'), 'utf8').trim().split('\n').slice(0, 10);
  const lines = [...good.slice(0, 3), '{"ts": 1700000000, "src_ip": "300.1.1.1"}', 'not json', ...good.slice(3)];
  writeFileSync(input, lines.join('\n') + '\n');
  const out = path.join(dir, 'out.hdwp');
  const c = io({ INPUT: input, OUTPUT: out });
  assert.is(await main(['run', example, '--quiet'], c), EXIT.ok, c.err);
  assert.match(c.err, /line 4, field 'src_ip'/);
  assert.match(c.err, /line 5/);
  const records = framesOf(out).reduce((n, f) => n + (f.kind === 'records' ? f.count : 0), 0);
  assert.is(records, 10);
});

e2e('a schema with problems stops the pipeline at load, naming the setting and the issue', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hd-e2e-'));
  const bad = JSON.parse(readFileSync(path.join(dataDir, 'flows.schema.json'), 'utf8')) as { fields: { type: string }[] };
  bad.fields[1].type = 'ipv5';
  writeFileSync(path.join(dir, 'bad.schema.json'), JSON.stringify(bad));
  const yaml = readFileSync(example, 'utf8').replace(/data\/flows\.schema\.json/g, 'bad.schema.json').replace('data/flows.ndjson', path.join(dataDir, 'flows.ndjson'));
  writeFileSync(path.join(dir, 'p.yaml'), yaml);
  const c = io({});
  assert.is(await main(['validate', path.join(dir, 'p.yaml')], c), EXIT.failed);
  assert.match(c.err, /p\.yaml:\d+:\d+/);
  assert.match(c.err, /fields\[1\]\.type/);
});

e2e.run();
