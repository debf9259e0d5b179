import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Subject } from 'rxjs';
import { generateBatchIdNumber, type BatchID } from '../../../engine-rs/batchId';
import { batchKey } from '../../../nodes/scc/catchUpLog';
import { ReplicaSet, type ReplicaSetOptions } from '../../../nodes/scc/replicas';
import type { AckResult, Chunk } from '../../../stream/chunk';
import { StageCounters } from '../../../stream/stageCounters';
import { replicate } from '../../../nodes/scc/replicate';
import { HdwpServer } from '../../../hdwp/hdwpServer';
import { FakeSn, RS } from './fakeSn';

const id = (n: number): BatchID => generateBatchIdNumber(n);
const recordsOf = (count: number, seed: number): Buffer => {
  const b = Buffer.alloc(count * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
};
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 2));
}

interface Rig {
  sns: FakeSn[];
  replicas: ReplicaSet;
  input: Subject<Chunk>;
  counters: StageCounters;
  events: string[];
  done: Promise<void>;
  /** Sends a whole batch in `pieces` chunks; resolves with its ack. */
  batch(n: number, records: number, pieces?: number): Promise<AckResult>;
  records(n: number, buf: Buffer): void;
  eob(n: number, count: number): Promise<AckResult>;
  stop(): Promise<void>;
}

async function rig(o: Partial<ReplicaSetOptions> = {}): Promise<Rig> {
  const sns = [new FakeSn(), new FakeSn()];
  for (const s of sns) await s.start();
  const events: string[] = [];
  const replicas = new ReplicaSet({ targets: sns.map((s, i) => s.target(`sn${i + 1}`)), recordSize: RS, backoffMs: { min: 5, max: 40 }, onEvent: (m) => events.push(m), ...o });
  const input = new Subject<Chunk>();
  const counters = new StageCounters('records');
  const done = new Promise<void>((resolve, reject) => replicate({ replicas, counters })(input).subscribe({ complete: resolve, error: reject }));
  const records = (n: number, buf: Buffer): void => input.next({ kind: 'records', dataset: 'ds', batchId: id(n), count: buf.length / RS, recordSize: RS, buf });
  const eob = (n: number, count: number): Promise<AckResult> => new Promise((ack) => input.next({ kind: 'eob', dataset: 'ds', batchId: id(n), recordCount: count, ack }));
  return {
    sns,
    replicas,
    input,
    counters,
    events,
    done,
    records,
    eob,
    batch: (n, count, pieces = 3) => {
      const data = recordsOf(count, n);
      const per = Math.ceil(count / pieces);
      for (let i = 0; i < count; i += per) records(n, data.subarray(i * RS, Math.min(count, i + per) * RS));
      return eob(n, count);
    },
    stop: async () => {
      input.complete();
      await done;
      await replicas.close();
      for (const s of sns) await s.kill();
    },
  };
}

const rep = suite('replicate: two Storage Nodes over real sockets');
rep('an eob is acknowledged only once both replicas made the batch durable; both hold the same bytes', async () => {
  const r = await rig();
  let release!: () => void;
  r.sns[1].holdEobs = new Promise<void>((res) => (release = res));
  let acked: AckResult | undefined;
  const ack = r.batch(1, 100).then((a) => (acked = a));
  await until(() => r.sns[1].eobsSeen === 1 && r.sns[0].batch(1) !== undefined);
  assert.is(acked, undefined, 'sn1 is durable, sn2 is not yet: no ack');
  release();
  await ack;
  assert.equal(acked, { ok: true });
  assert.ok(r.sns[0].batch(1)?.equals(recordsOf(100, 1)));
  assert.ok(r.sns[1].batch(1)?.equals(recordsOf(100, 1)));
  assert.equal(r.replicas.states(), { sn1: 'healthy', sn2: 'healthy' });
  await r.stop();
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 100, sent: 100, dropped: 0, held: 0, errors: 0, controls: 1 });
});
rep('a replica killed is marked unhealthy, ingest goes on; restarted, it is caught up on what it missed', async () => {
  const r = await rig();
  assert.equal(await r.batch(1, 50), { ok: true });
  await r.sns[1].kill();
  await until(() => r.replicas.states().sn2 !== 'healthy');
  // While sn2 is down: a whole batch, and half of another.
  assert.equal(await r.batch(2, 40), { ok: true }, 'ingest goes on with the healthy replica');
  const half = recordsOf(30, 3);
  r.records(3, half.subarray(0, 15 * RS));
  const health = r.replicas.health() as { status: string; replicas: { name: string; state: string; reason: string }[] };
  assert.is(health.status, 'degraded');
  assert.ok(['down', 'catching-up'].includes(health.replicas[1].state));
  assert.ok(health.replicas[1].reason.length > 0);
  assert.ok(r.events.some((e) => /replica sn2 is down/.test(e)));
  await r.sns[1].start();
  await until(() => r.replicas.states().sn2 === 'healthy');
  assert.ok(r.sns[1].batch(2)?.equals(recordsOf(40, 2)), 'the batch missed while down was re-sent');
  // The open batch went live for sn2 once caught up: the rest arrives, and both acknowledge.
  r.records(3, half.subarray(15 * RS));
  assert.equal(await r.eob(3, 30), { ok: true });
  for (const sn of r.sns) {
    assert.ok(sn.batch(3)?.equals(half));
    assert.ok(sn.batch(2)?.equals(recordsOf(40, 2)));
    assert.ok(sn.batch(1)?.equals(recordsOf(50, 1)));
  }
  assert.is((r.replicas.health() as { catch_up_log: { batches: number } }).catch_up_log.batches, 0, 'nothing left to catch up');
  await r.stop();
});
rep('a replica that dies mid-batch gets a bbn for its partial copy and the whole batch again', async () => {
  const r = await rig();
  const data = recordsOf(60, 4);
  r.records(4, data.subarray(0, 20 * RS));
  await until(() => (r.sns[1].open.get(batchKey('ds', id(4)))?.length ?? 0) > 0);
  await r.sns[1].kill();
  await until(() => r.replicas.states().sn2 !== 'healthy');
  r.records(4, data.subarray(20 * RS));
  assert.equal(await r.eob(4, 60), { ok: true });
  await r.sns[1].start();
  await until(() => r.replicas.states().sn2 === 'healthy');
  assert.ok(r.sns[1].batch(4)?.equals(data), 'no duplicated records from the partial copy');
  await r.stop();
});
rep('no healthy replica: eob acks fail with an error, never a false durable ack', async () => {
  const r = await rig();
  assert.equal(await r.batch(1, 10), { ok: true });
  for (const sn of r.sns) await sn.kill();
  await until(() => Object.values(r.replicas.states()).every((s) => s !== 'healthy'));
  const a = await r.batch(2, 10);
  assert.is(a.ok, false);
  assert.ok(!a.ok && a.code === 7 && /no healthy replica/.test(a.message));
  await r.stop();
  assert.is(r.counters.dropped, 10);
  assert.is(r.counters.errors, 1);
});
rep('a batch every replica refuses is refused to the sender with their code; a bbn is echoed', async () => {
  const r = await rig();
  r.records(5, recordsOf(3, 5));
  const a = await r.eob(5, 4);
  assert.ok(!a.ok && a.code === 10 && /eob says 4 records, 3 arrived/.test(a.message), JSON.stringify(a));
  assert.equal(r.replicas.states(), { sn1: 'healthy', sn2: 'healthy' }, 'a bad batch is no reason to doubt the replicas');
  r.records(6, recordsOf(3, 6));
  const b = await new Promise<AckResult>((ack) => r.input.next({ kind: 'bbn', dataset: 'ds', batchId: id(6), reason: 'gave up', ack }));
  assert.equal(b, { ok: true });
  for (const sn of r.sns) assert.is(sn.open.size, 0);
  await r.stop();
});
rep('a replica that stops taking records falls behind and is marked down; the other carries on', async () => {
  const sns = [new FakeSn(), new FakeSn()];
  await sns[0].start();
  // sn2 takes the connection but never finishes with a records frame: its credit runs out.
  const stuck = new HdwpServer({ role: 'storageNode', host: '127.0.0.1', port: 0, creditWindow: 4096, onConnection: () => ({ onFrame: () => new Promise<void>(() => undefined) }) });
  const port = (await stuck.listen()).port;
  const replicas = new ReplicaSet({ targets: [sns[0].target('sn1'), { name: 'sn2', host: '127.0.0.1', controlPort: 1, prodPort: port }], recordSize: RS, maxLagBytes: 8192, ackTimeoutMs: 300, backoffMs: { min: 10_000, max: 10_000 } });
  const input = new Subject<Chunk>();
  const done = new Promise<void>((resolve, reject) => replicate({ replicas })(input).subscribe({ complete: resolve, error: reject }));
  const data = recordsOf(4000, 7);
  for (let i = 0; i < 4000; i += 500) input.next({ kind: 'records', dataset: 'ds', batchId: id(7), count: 500, recordSize: RS, buf: data.subarray(i * RS, (i + 500) * RS) });
  const a = await new Promise<AckResult>((ack) => input.next({ kind: 'eob', dataset: 'ds', batchId: id(7), recordCount: 4000, ack }));
  assert.equal(a, { ok: true });
  assert.is(replicas.states().sn2, 'down');
  assert.match(String((replicas.health() as { replicas: { reason: string }[] }).replicas[1].reason), /fell behind|no durable ack/);
  assert.ok(sns[0].batch(7)?.equals(data));
  input.complete();
  await done;
  await replicas.close();
  await stuck.close();
  await sns[0].kill();
});
rep.run();
