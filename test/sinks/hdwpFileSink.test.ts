import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, from, lastValueFrom, Observable, Subject, throwError } from 'rxjs';
import { generateBatchIdTime } from '../../engine-rs/batchId';
import { recordChunk, type Chunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { StageCounters } from '../../stream/stageCounters';
import { hdwpFileSink, type HdwpEncoder } from '../../sinks/hdwpFileSink';

// A readable stand-in encoder, so this suite checks the sink's ordering and file handling; the
// real frames are checked end to end in test/pipelines/example.test.ts.
const enc: HdwpEncoder = {
  hello: (d, s) => Buffer.from(`H ${d} ${s}\n`),
  records: (c) => Buffer.from(`R ${c.batchId.timeStart} ${c.count} ${c.buf.toString('hex')}\n`),
  eob: (e) => Buffer.from(`E ${e.batchId.timeStart} ${e.recordCount}\n`),
  bbn: (b) => Buffer.from(`B ${b.batchId.timeStart} ${b.reason}\n`),
};
const dir = mkdtempSync(path.join(tmpdir(), 'hd-sink-'));
let n = 0;
const out = () => path.join(dir, `out${n++}.hdwp`);
const b0 = generateBatchIdTime(0, 60, 60);
const b60 = generateBatchIdTime(60, 120, 60);
const els: Chunk[] = [
  recordChunk('flows', 2, 2, Buffer.from('aabb'), b0),
  recordChunk('flows', 2, 1, Buffer.from('cc'), b60),
  { kind: 'eob', dataset: 'flows', batchId: b0, recordCount: 2 },
  { kind: 'bbn', dataset: 'flows', batchId: b60, reason: 'timed out' },
];
const drain = (o: Observable<never>) => new Promise<unknown>((resolve) => o.subscribe({ error: resolve, complete: () => resolve(undefined) }));

const s = suite('hdwpFileSink');
s('values: hello once, then frames in arrival order; file appears when complete', async () => {
  const file = out();
  const counters = new StageCounters('records');
  let records = 0;
  await lastValueFrom(hdwpFileSink({ path: file, encoder: enc, counters, progress: { addRecords: (k) => (records += k) } })(from(els)), { defaultValue: undefined });
  assert.is(readFileSync(file, 'utf8'), `H flows 2\nR 0 2 ${Buffer.from('aabb').toString('hex')}\nR 60 1 ${Buffer.from('cc').toString('hex')}\nE 0 2\nB 60 timed out\n`);
  assert.not.ok(existsSync(`${file}.partial`));
  assert.equal(counters.snapshot(), { unit: 'records', received: 3, sent: 3, dropped: 0, held: 0, errors: 0, controls: 2 });
  assert.is(records, 3);
});
s('empty input writes an empty file', async () => {
  const file = out();
  assert.is(await drain(hdwpFileSink({ path: file, encoder: enc })(EMPTY)), undefined);
  assert.is(readFileSync(file, 'utf8'), '');
});
s('upstream error: the error passes and no file is left', async () => {
  const file = out();
  const err = await drain(hdwpFileSink({ path: file, encoder: enc })(new Observable<Chunk>((o) => (o.next(els[0]), o.error(new Error('upstream'))))));
  assert.match(String(err), /upstream/);
  await new Promise((r) => setTimeout(r, 20));
  assert.not.ok(existsSync(file));
  assert.not.ok(existsSync(`${file}.partial`));
  assert.match(String(await drain(hdwpFileSink({ path: out(), encoder: enc })(throwError(() => new Error('x'))))), /x/);
});
s('unbatched records and byte chunks are rejected', async () => {
  assert.match(String(await drain(hdwpFileSink({ path: out(), encoder: enc })(from([recordChunk('f', 1, 1, Buffer.from('a'))])))), /takes batched records; put a batching stage/);
  assert.match(String(await drain(hdwpFileSink({ path: out(), encoder: enc })(from<Chunk[]>([{ kind: 'bytes', source: 'x', offset: 0, buf: Buffer.alloc(1) }])))), /got a 'bytes' element/);
});
s('a second dataset or record size on one stream is an error', async () => {
  const other = recordChunk('other', 2, 1, Buffer.from('zz'), b0);
  assert.match(String(await drain(hdwpFileSink({ path: out(), encoder: enc })(from([els[0], other])))), /one HDWP stream carries one dataset/);
});
s('early unsubscribe removes the partial file and counts what was not written as dropped', async () => {
  const file = out();
  const src = new Subject<Chunk>();
  const counters = new StageCounters('records');
  const flow = new Flow();
  const sub = hdwpFileSink({ path: file, encoder: enc, counters, flow })(src).subscribe();
  src.next(els[0]);
  src.next(els[1]);
  assert.is(flow.pending, 2, 'each element holds the flow until written');
  sub.unsubscribe();
  assert.is(flow.pending, 1, 'queued write released; the one in progress releases when it settles');
  await new Promise((r) => setTimeout(r, 30));
  assert.is(flow.pending, 0);
  assert.not.ok(existsSync(file));
  assert.not.ok(existsSync(`${file}.partial`));
  assert.is(counters.held, 0);
  assert.is(src.observed, false);
});
s.run();
