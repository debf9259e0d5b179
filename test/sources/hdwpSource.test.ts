import net from 'node:net';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { awaitEach } from '../../stream/awaitEach';
import type { Chunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { StageCounters } from '../../stream/stageCounters';
import { formatProblem, parsePipeline } from '../../pipelines/load';
import { runPipeline } from '../../pipelines/run';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { hdwpSource, type HdwpSourceElement } from '../../sources/hdwpSource';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { collected, testRegistry } from '../pipelines/testStages';
import { encodeRecords } from '../../engine-rs/hdwp';
import { batch, gate, helloBytes, RawPeer, recordsOf, until } from './hdwpKit';

/** Subscribes a source on a free port; `each` sees every element. */
async function listen(each: (e: HdwpSourceElement) => void, extra: { creditWindow?: number; flow?: Flow; maxPending?: number; gate?: Promise<void>; onDisconnect?: 'keep' | 'discard' } = {}) {
  const counters = new StageCounters('records');
  const reports: string[] = [];
  let port = 0;
  const flow = extra.flow ?? new Flow();
  const src$ = hdwpSource({
    host: '127.0.0.1',
    port: 0,
    role: 'scc',
    counters,
    flow,
    maxPending: extra.maxPending,
    creditWindow: extra.creditWindow,
    onDisconnect: extra.onDisconnect,
    report: (m) => reports.push(m),
    onListening: (a) => (port = a.port),
  });
  const out$ = extra.gate
    ? src$.pipe(
        awaitEach(async (e: HdwpSourceElement) => {
          await extra.gate;
          each(e);
          return [];
        }, flow),
      )
    : src$;
  const sub = out$.subscribe({ next: extra.gate ? () => undefined : each });
  await until(() => port !== 0);
  const client = (recordSize = 10) => HdwpClient.connect({ host: '127.0.0.1', port, role: 'ingestClient', datasetId: 'flows', recordSize });
  return { sub, client, counters, reports, port: () => port };
}

const acks = suite('hdwpSource');
acks('records from every connection arrive as batched chunks; eob and bbn are answered through ack', async () => {
  const got: HdwpSourceElement[] = [];
  const s = await listen((e) => {
    got.push(e);
    if (e.kind === 'eob' || e.kind === 'bbn') e.ack?.({ ok: true });
  });
  const [a, b] = await Promise.all([s.client(), s.client()]);
  await Promise.all([a.sendRecords(batch(1), recordsOf(10, 300, 1)), b.sendRecords(batch(2), recordsOf(10, 500, 2))]);
  const [ackA, ackB] = await Promise.all([a.sendEob(batch(1), 300, Buffer.alloc(64, 3)), b.sendEob(batch(2), 500)]);
  assert.is(ackA.recordCount, 300);
  assert.ok(Buffer.from(ackA.closingHash).equals(Buffer.alloc(64, 3)), 'the closing hash is echoed');
  assert.is(ackB.closingHash.length, 0);
  await b.sendBbn(batch(3), 'gave up');
  const recs = (id: number) => Buffer.concat(got.flatMap((e) => (e.kind === 'records' && e.batchId.equals(batch(id)) ? [e.buf] : [])));
  assert.ok(recs(1).equals(recordsOf(10, 300, 1)));
  assert.ok(recs(2).equals(recordsOf(10, 500, 2)));
  for (const e of got) assert.is(e.dataset, 'flows');
  const eob = got.find((e) => e.kind === 'eob' && e.batchId.equals(batch(1)));
  assert.ok(eob?.kind === 'eob' && eob.closingHash && Buffer.from(eob.closingHash).equals(Buffer.alloc(64, 3)), 'the eob element carries the sender closing hash');
  assert.equal(s.counters.snapshot(), { unit: 'records', received: 800, sent: 800, dropped: 0, held: 0, errors: 0, controls: 3 });
  await Promise.all([a.close(), b.close()]);
  s.sub.unsubscribe();
});
acks('a refusal through ack rejects that eob with its code and keeps the stream; the sink closing hash is sent', async () => {
  const s = await listen((e) => {
    if (e.kind !== 'eob') return;
    if (e.recordCount === 1) e.ack?.({ ok: false, code: 10, message: 'closing hash mismatch' });
    else e.ack?.({ ok: true, closingHash: Buffer.alloc(32, 7) });
    e.ack?.({ ok: true }); // a second answer is ignored
  });
  const c = await s.client();
  const err = (await c.sendEob(batch(1), 1).catch((x: unknown) => x)) as HdwpStreamError;
  assert.instance(err, HdwpStreamError);
  assert.is(err.frameCode, 10);
  assert.ok(err.batchId?.equals(batch(1)));
  const ok = await c.sendEob(batch(2), 2);
  assert.ok(Buffer.from(ok.closingHash).equals(Buffer.alloc(32, 7)));
  await c.close();
  s.sub.unsubscribe();
});
acks('credit returns only once the pipeline consumed the records', async () => {
  const g = gate();
  const got: HdwpSourceElement[] = [];
  const flow = new Flow();
  const s = await listen((e) => got.push(e), { creditWindow: 8192, flow, maxPending: 0, gate: g.promise });
  const c = await s.client(100);
  let done = false;
  const sending = c.sendRecords(batch(1), recordsOf(100, 1000)).then(() => (done = true)); // 100 kB: twelve windows
  await until(() => flow.pending === 1 && c.creditAvailable < 186);
  // Let the event loop turn over a few times: nothing more may arrive while the stage is stuck.
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.ok(c.stats.recordsBytesSent <= 8192, `sent ${c.stats.recordsBytesSent} while the pipeline is stuck`);
  assert.is(flow.pending, 1, 'one element is in the stuck stage; the next frame waits for it');
  assert.is(s.counters.received, 81, 'one frame (81 records of 100 bytes fill an 8 KiB window) reached the pipeline');
  assert.is(done, false);
  g.open();
  await sending;
  await until(() => got.reduce((n, e) => n + (e.kind === 'records' ? e.count : 0), 0) === 1000);
  await c.close();
  s.sub.unsubscribe();
});
acks('unsubscribing closes the server: waiting senders get error 9, new connections are refused', async () => {
  const s = await listen(() => undefined);
  const c = await s.client();
  const eob = c.sendEob(batch(1), 0).catch((x: unknown) => x);
  await until(() => s.counters.controls === 1);
  s.sub.unsubscribe();
  const err = (await eob) as HdwpStreamError;
  assert.is(err.frameCode, 9);
  const again = (await s.client().catch((x: unknown) => x)) as HdwpStreamError;
  assert.is(again.code, 'ERR_HDWP_DISCONNECTED');
});
acks('a broken connection is counted and reported; the source goes on', async () => {
  const got: HdwpSourceElement[] = [];
  const s = await listen((e) => {
    got.push(e);
    if (e.kind === 'eob') e.ack?.({ ok: true });
  });
  const raw = net.connect({ host: '127.0.0.1', port: s.port() });
  raw.on('error', () => undefined);
  raw.write('garbage that is not HDWP');
  await until(() => s.counters.errors === 1);
  assert.match(s.reports[0], /ERR_HDWP_BAD_MAGIC/);
  raw.destroy();
  const c = await s.client();
  assert.is((await c.sendEob(batch(1), 0)).recordCount, 0);
  await c.close();
  s.sub.unsubscribe();
});
acks('on_disconnect discard: a connection that ends with batches open is followed by a bbn (no ack) for each; keep emits none', async () => {
  for (const mode of ['discard', 'keep'] as const) {
    const got: HdwpSourceElement[] = [];
    const s = await listen(
      (e) => {
        got.push(e);
        if (e.kind === 'eob' || e.kind === 'bbn') e.ack?.({ ok: true });
      },
      { onDisconnect: mode },
    );
    const [a, b] = await Promise.all([s.client(), s.client()]);
    await a.sendRecords(batch(1), recordsOf(10, 3, 1)); // left open by a
    await a.sendRecords(batch(2), recordsOf(10, 2, 2));
    await a.sendEob(batch(2), 2); // closed: no bbn for it
    await a.sendRecords(batch(3), recordsOf(10, 1, 3));
    await b.sendRecords(batch(3), recordsOf(10, 1, 3)); // b takes batch 3 over: a's end leaves it alone
    await until(() => s.counters.received === 7);
    await a.close();
    const bbns = (): HdwpSourceElement[] => got.filter((e) => e.kind === 'bbn');
    if (mode === 'discard') {
      await until(() => bbns().length === 1);
      const [bbn] = bbns();
      assert.ok(bbn.kind === 'bbn' && bbn.batchId.equals(batch(1)));
      assert.is(bbn.kind === 'bbn' && bbn.ack, undefined, 'nobody waits for it');
      assert.match(bbn.kind === 'bbn' ? bbn.reason : '', /ended with the batch open \(on_disconnect: discard\)/);
      assert.ok(got.indexOf(bbn) > got.findIndex((e) => e.kind === 'records' && e.batchId.equals(batch(1))), 'after the batch records');
      // A connection dropped mid-frame (no goodbye) discards its batch too.
      const raw = await RawPeer.connect(s.port());
      await raw.write(helloBytes('ingestClient', 'flows', 10));
      await raw.next('credit');
      const frame = encodeRecords(batch(4), 10, recordsOf(10, 1, 4));
      await raw.write(Buffer.concat([frame, frame.subarray(0, 20)]));
      await until(() => s.counters.received === 8);
      raw.socket.destroy();
      await until(() => bbns().length === 2);
      assert.ok(bbns()[1].batchId.equals(batch(4)));
      await b.close();
      await until(() => bbns().length === 3);
      assert.ok(bbns()[2].batchId.equals(batch(3)), 'b ending discards batch 3, which it owned');
    } else {
      await b.close();
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      assert.is(bbns().length, 0);
    }
    assert.is(s.counters.controls, 1 + bbns().length);
    s.sub.unsubscribe();
  }
});
acks('a port in use fails the source', async () => {
  const blocker = net.createServer();
  const port = await new Promise<number>((r) => blocker.listen(0, '127.0.0.1', () => r((blocker.address() as net.AddressInfo).port)));
  const err = await new Promise<unknown>((resolve) => hdwpSource({ host: '127.0.0.1', port, role: 'scc' }).subscribe({ error: resolve }));
  assert.match(String(err), /EADDRINUSE/);
  blocker.close();
});
acks.run();

const stage = suite('hdwpSource stage');
/** A port free right now (the stage takes its port from the pipeline file). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  const port = await new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as net.AddressInfo).port)));
  await new Promise((r) => s.close(r));
  return port;
}
stage('in a pipeline: a sink acknowledges durable batches; teardown stops the server; counters add up', async () => {
  const port = await freePort();
  const text = `pipeline: t
stages:
  src: { type: hdwpSource, host: 127.0.0.1, port: ${port}, role: scc, credit_window: 64KiB }
  out: { type: ackSink, inputs: [src], refuse: 7 }
`;
  const r = parsePipeline(text, path.join(tmpdir(), 'hdwp.yaml'), { registry: testRegistry(), env: {} });
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const abort = new AbortController();
  const running = runPipeline(r.pipeline, { signal: abort.signal });
  let client: HdwpClient | undefined;
  while (!client) client = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'ingester', datasetId: 'flows', recordSize: 16 }).catch(() => undefined);
  await client.sendRecords(batch(1), recordsOf(16, 20_000)); // 320 kB through a 64 KiB window
  assert.is((await client.sendEob(batch(1), 20_000)).recordCount, 20_000);
  const refused = (await client.sendEob(batch(2), 7).catch((x: unknown) => x)) as HdwpStreamError;
  assert.is(refused.frameCode, 10);
  await client.sendBbn(batch(3), 'void');
  abort.abort();
  const result = await running;
  assert.is(result.status, 'aborted');
  assert.equal(result.counters.get('src'), { unit: 'records', received: 20_000, sent: 20_000, dropped: 0, held: 0, errors: 0, controls: 3 });
  assert.is(result.counters.get('out')?.received, 20_000);
  const chunks = (collected.get('out') ?? []) as Chunk[];
  assert.is(Buffer.concat(chunks.flatMap((c) => (c.kind === 'records' ? [c.buf] : []))).length, 320_000);
  const err = (await client.closed) as HdwpStreamError;
  assert.is(err.frameCode, 9, 'the client learns the server stopped');
});
stage('settings are checked when the pipeline loads', () => {
  const text = `pipeline: t
stages:
  src: { type: hdwpSource, port: 70000, role: sccc, roles: "scc, bogus", credit_window: 10 }
  out: { type: ackSink, inputs: [src] }
`;
  const r = parsePipeline(text, path.join(tmpdir(), 'hdwp.yaml'), { registry: testRegistry(), env: {} });
  assert.is(r.ok, false);
  const msgs = r.ok ? '' : r.problems.map(formatProblem).join('\n');
  assert.match(msgs, /port/);
  assert.match(msgs, /did you mean 'scc'/);
  assert.match(msgs, /unknown: bogus/);
  assert.match(msgs, /credit_window/);
});
stage.run();
