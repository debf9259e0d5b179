import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY, from, lastValueFrom, of, Subject, throwError, toArray } from 'rxjs';
import type { ByteChunk, Chunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { parse, type BlockParser, type LineError } from '../../operators/parse';
import { StageCounters } from '../../stream/stageCounters';

// The test's own block parser: each line is a decimal integer → one 4-byte big-endian record.
// Blank lines are skipped; anything else is an error naming field 'n'.
const parser: BlockParser = (buf, firstLine) => {
  const lines = buf.toString('utf8').split('\n');
  assert.is(lines.pop(), '', 'the parser only ever sees whole lines');
  const recs: Buffer[] = [];
  const errors: LineError[] = [];
  lines.forEach((l, i) => {
    if (l === '') return;
    if (/^\d+$/.test(l)) {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(Number(l));
      recs.push(b);
    } else errors.push({ line: firstLine + i, field: 'n', reason: `not a number: ${l}` });
  });
  return { records: Buffer.concat(recs), count: recs.length, errors, lines: lines.length };
};
const bytes = (text: string, size: number): ByteChunk[] => {
  const b = Buffer.from(text);
  const out: ByteChunk[] = [];
  for (let off = 0; off < b.length; off += size) out.push({ kind: 'bytes', source: 't', offset: off, buf: b.subarray(off, off + size) });
  return out;
};
const values = (cs: Chunk[]): number[] =>
  cs.flatMap((c) => (c.kind === 'records' ? Array.from({ length: c.count }, (_, i) => c.buf.readUInt32BE(4 * i)) : []));
const run = async (chunks: ByteChunk[], extra: Partial<Parameters<typeof parse>[0]> = {}) => {
  const counters = new StageCounters('records');
  const problems: string[] = [];
  const out = await lastValueFrom(from(chunks).pipe(parse({ parser, dataset: 'd', recordSize: 4, counters, onProblem: (m) => problems.push(m), ...extra }), toArray()));
  return { out, counters: counters.snapshot(), problems };
};

const TEXT = '1\n2\nx\n\n30\nbad line\n400';
const p = suite('parse');
p('values: good lines kept, bad lines reported with line and field and counted as dropped', async () => {
  const r = await run(bytes(TEXT, 1024));
  assert.equal(values(r.out), [1, 2, 30, 400]);
  assert.equal(r.problems, ["line 3, field 'n': not a number: x", "line 6, field 'n': not a number: bad line"]);
  assert.equal(r.counters, { unit: 'records', received: 6, sent: 4, dropped: 2, held: 0, errors: 2, controls: 0 });
  assert.ok(r.out.every((c) => c.kind === 'records' && c.dataset === 'd' && c.buf.length === c.count * 4));
});
p('the same bytes cut at every point give the same records and line numbers', async () => {
  const whole = await run(bytes(TEXT, 1024));
  for (let cut = 1; cut < TEXT.length; cut++) {
    const b = Buffer.from(TEXT);
    const chunks: ByteChunk[] = [
      { kind: 'bytes', source: 't', offset: 0, buf: b.subarray(0, cut) },
      { kind: 'bytes', source: 't', offset: cut, buf: b.subarray(cut) },
    ];
    const r = await run(chunks);
    assert.equal(values(r.out), values(whole.out), `cut at ${cut}`);
    assert.equal(r.problems, whole.problems, `cut at ${cut}`);
  }
  for (const size of [1, 2, 3, 5, 8]) {
    const r = await run(bytes(TEXT, size));
    assert.equal(values(r.out), values(whole.out), `block size ${size}`);
    assert.equal(r.problems, whole.problems, `block size ${size}`);
    assert.equal(r.counters, whole.counters);
  }
});
p('skipLines drops a header however the input is cut', async () => {
  for (const size of [1, 3, 100]) {
    const r = await run(bytes('n\n7\n8\n', size), { skipLines: 1 });
    assert.equal(values(r.out), [7, 8]);
    assert.equal(r.problems, []);
  }
});
p('an over-long line is rejected without buffering it, the next lines are kept', async () => {
  const r = await run(bytes('1\n' + '9'.repeat(50) + '\n2\n', 7), { maxLineBytes: 20 });
  assert.equal(values(r.out), [1, 2]);
  assert.equal(r.problems, ['line 2: longer than 20 bytes; skipped']);
  assert.equal(r.counters, { unit: 'records', received: 3, sent: 2, dropped: 1, held: 0, errors: 1, controls: 0 });
});
p('records that outgrow the chunk bound are split into several chunks', async () => {
  const big: BlockParser = (buf) => ({ records: Buffer.alloc(3 * 2 * 1024 * 1024), count: 3, errors: [], lines: buf.toString().split('\n').length - 1 });
  const out = await lastValueFrom(from(bytes('a\nb\nc\n', 100)).pipe(parse({ parser: big, dataset: 'd', recordSize: 2 * 1024 * 1024 }), toArray()));
  assert.equal(out.map((c) => (c.kind === 'records' ? c.count : -1)), [2, 1]);
});
p('an asynchronous parser keeps order and holds the flow while it works', async () => {
  const flow = new Flow();
  let most = 0;
  const slow: BlockParser = async (buf, first) => {
    most = Math.max(most, flow.pending);
    await new Promise((r) => setTimeout(r, 1));
    return parser(buf, first);
  };
  const out = await lastValueFrom(from(bytes(TEXT, 3)).pipe(parse({ parser: slow, dataset: 'd', recordSize: 4, flow }), toArray()));
  assert.equal(values(out), [1, 2, 30, 400]);
  assert.ok(most >= 1);
  assert.is(flow.pending, 0);
});
p('synchronous source of one chunk, and empty input', async () => {
  assert.equal(values((await run(bytes('5\n', 10))).out), [5]);
  assert.equal(await lastValueFrom(EMPTY.pipe(parse({ parser, dataset: 'd', recordSize: 4 }), toArray())), []);
});
p('upstream error passes through; a non-byte element is rejected; a throwing parser errors', async () => {
  let err: unknown;
  await new Promise<void>((r) => throwError(() => new Error('up')).pipe(parse({ parser, dataset: 'd', recordSize: 4 })).subscribe({ error: (e) => ((err = e), r()) }));
  assert.match(String(err), /up/);
  const rec: Chunk = { kind: 'eob', dataset: 'd', batchId: undefined as never, recordCount: 0 };
  await new Promise<void>((r) => of(rec).pipe(parse({ parser, dataset: 'd', recordSize: 4 })).subscribe({ error: (e) => ((err = e), r()) }));
  assert.match(String(err), /takes byte chunks/);
  const boom: BlockParser = () => {
    throw new Error('native failure');
  };
  await new Promise<void>((r) => from(bytes('1\n', 10)).pipe(parse({ parser: boom, dataset: 'd', recordSize: 4 })).subscribe({ error: (e) => ((err = e), r()) }));
  assert.match(String(err), /native failure/);
});
p('early unsubscribe stops parsing', async () => {
  const src = new Subject<Chunk>();
  let calls = 0;
  const counting: BlockParser = (b, f) => (calls++, parser(b, f));
  const sub = src.pipe(parse({ parser: counting, dataset: 'd', recordSize: 4 })).subscribe();
  src.next(bytes('1\n', 10)[0]);
  sub.unsubscribe();
  src.next(bytes('2\n', 10)[0]);
  await new Promise((r) => setTimeout(r, 5));
  assert.ok(calls <= 1);
  assert.is(src.observed, false);
});
p.run();

const twice = suite('parse: state per subscription');
twice('two subscriptions to one parsed stream each start at line 1, skip the header and carry nothing over', async () => {
  // Per-application state (issue #16) made the second run start at line 9 with the header already skipped.
  const parsed = from(bytes('n\n1\n2\nx\n\n30\nbad line\n400', 5)).pipe(parse({ parser, dataset: 'd', recordSize: 4, skipLines: 1 }));
  const runOnce = async () => {
    const problems: string[] = [];
    const counters = new StageCounters('records');
    const out = await lastValueFrom(
      from(bytes('n\n1\n2\nx\n\n30\nbad line\n400', 5)).pipe(parse({ parser, dataset: 'd', recordSize: 4, skipLines: 1, counters, onProblem: (m) => problems.push(m) }), toArray()),
    );
    return { values: values(out), problems };
  };
  const want = await runOnce();
  assert.equal(want, { values: [1, 2, 30, 400], problems: ["line 4, field 'n': not a number: x", "line 7, field 'n': not a number: bad line"] });
  const first = values(await lastValueFrom(parsed.pipe(toArray())));
  const second = values(await lastValueFrom(parsed.pipe(toArray())));
  assert.equal(first, want.values);
  assert.equal(second, want.values, 'the second subscription skips its own header line');
  // Both at once: a line cut across blocks in one subscription is not completed by the other's bytes.
  const [a, b] = await Promise.all([lastValueFrom(parsed.pipe(toArray())), lastValueFrom(parsed.pipe(toArray()))]);
  assert.equal(values(a), want.values);
  assert.equal(values(b), want.values);
});
twice('line numbers of problems restart for every subscription', async () => {
  const problems: string[] = [];
  const parsed = from(bytes('1\nx\n2', 3)).pipe(parse({ parser, dataset: 'd', recordSize: 4, onProblem: (m) => problems.push(m) }));
  await lastValueFrom(parsed.pipe(toArray()));
  await lastValueFrom(parsed.pipe(toArray()));
  assert.equal(problems, ["line 2, field 'n': not a number: x", "line 2, field 'n': not a number: x"]);
});
twice.run();
