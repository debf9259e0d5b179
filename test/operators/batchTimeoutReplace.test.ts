/**
 * Batch replace in the SCC's batch state table (operators/batchTimeout.ts, docs/scc.md): a sender's
 * bbn discards a half-sent batch and lets the same batch id be sent again from its start; a closed
 * batch is never replaced, and its refusals say how many records it holds.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Subject, VirtualTimeScheduler } from 'rxjs';
import { generateBatchIdNumber, type BatchID } from '../../engine-rs/batchId';
import { batchTimeout, type BatchState } from '../../operators/batchTimeout';
import type { AckResult, Chunk, EobElement } from '../../stream/chunk';
import { StageCounters } from '../../stream/stageCounters';

const id = (n: number): BatchID => generateBatchIdNumber(n);
const num = (b: BatchID): number => Number(Buffer.from(b.bytes).readBigUInt64BE(56));
const recs = (n: number, count: number): Chunk => ({ kind: 'records', dataset: 'ds', batchId: id(n), count, recordSize: 4, buf: Buffer.alloc(4 * count, n) });

interface Run {
  src: Subject<Chunk>;
  got: Chunk[];
  acks: string[];
  states: string[];
  problems: string[];
  counters: StageCounters;
  scheduler: VirtualTimeScheduler;
  eob(n: number, count: number): void;
  bbn(n: number): void;
}

/** The operator on virtual time; acks are noted as "eob 1 ok" / "bbn 1 refused 1: …". */
function start(o: { action?: 'eob' | 'bbn'; timeoutMs?: number } = {}): Run {
  const scheduler = new VirtualTimeScheduler(undefined, 100_000);
  const src = new Subject<Chunk>();
  const r: Run = {
    src,
    got: [],
    acks: [],
    states: [],
    problems: [],
    counters: new StageCounters('records'),
    scheduler,
    eob: (n, count) => src.next({ kind: 'eob', dataset: 'ds', batchId: id(n), recordCount: count, ack: note(`eob ${n}`) }),
    bbn: (n) => src.next({ kind: 'bbn', dataset: 'ds', batchId: id(n), reason: 'resend', ack: note(`bbn ${n}`) }),
  };
  function note(what: string) {
    return (a: AckResult): void => {
      r.acks.push(a.ok ? `${what} ok` : `${what} refused ${a.code}: ${a.message}`);
    };
  }
  src
    .pipe(
      batchTimeout({
        timeoutMs: o.timeoutMs ?? 0,
        action: o.action ?? 'eob',
        scheduler,
        counters: r.counters,
        onProblem: (m) => r.problems.push(m),
        onTransition: (b, _d, to: BatchState, why) => r.states.push(`${num(b)} ${to}${why.includes('replaced') ? ' (replaced)' : ''}`),
      }),
    )
    .subscribe((c) => r.got.push(c));
  return r;
}

const trace = (cs: Chunk[]): string[] =>
  cs.map((c) => (c.kind === 'records' ? `r ${num(c.batchId as BatchID)}:${c.count}` : c.kind === 'eob' ? `eob ${num(c.batchId)}:${c.recordCount}` : c.kind === 'bbn' ? `bbn ${num(c.batchId)}` : c.kind));

const replace = suite('batchTimeout: batch replace');

replace('bbn on an open (half-sent) batch discards it; the same id sent again opens afresh and closes with its own count', () => {
  const r = start();
  r.src.next(recs(1, 3)); // the crashed sender's partial copy
  r.bbn(1); // the restarted sender replaces it
  r.src.next(recs(1, 5));
  r.eob(1, 5);
  assert.equal(trace(r.got), ['r 1:3', 'bbn 1', 'r 1:5', 'eob 1:5'], 'the bbn goes downstream (replicas drop the partial copy), then the fresh batch');
  assert.equal(r.states, ['1 open', '1 discarded', '1 open (replaced)', '1 closed']);
  assert.equal(r.problems, []);
  assert.equal(r.counters.snapshot(), { unit: 'records', received: 8, sent: 8, dropped: 0, held: 0, errors: 0, controls: 2 });
});

replace('bbn for a batch never seen is acknowledged at once and not forwarded; the batch then opens normally', () => {
  const r = start();
  r.bbn(2);
  r.src.next(recs(2, 4));
  r.eob(2, 4);
  assert.equal(r.acks, ['bbn 2 ok']);
  assert.equal(trace(r.got), ['r 2:4', 'eob 2:4']);
  assert.equal(r.states, ['2 discarded', '2 open (replaced)', '2 closed']);
});

replace('a closed batch is not replaced: its bbn, records and eob are refused, and the refusals say how many records it holds', () => {
  const r = start();
  r.src.next(recs(3, 6));
  r.eob(3, 6);
  r.bbn(3);
  r.src.next(recs(3, 6));
  r.eob(3, 6);
  assert.equal(trace(r.got), ['r 3:6', 'eob 3:6'], 'nothing of the resend goes downstream');
  assert.is(r.acks.length, 2);
  assert.match(r.acks[0], /^bbn 3 refused 1: .*is closed \(closed by its eob\); its bbn is refused; the batch holds 6 records$/);
  assert.match(r.acks[1], /^eob 3 refused 1: .*is closed \(closed by its eob\); its eob is refused; the batch holds 6 records$/);
  assert.is(r.counters.dropped, 6);
});

replace('a batch closed by the timeout (EOB) is refused with error 5 and its count; one discarded by the timeout (BBN) is replaced after a bbn', () => {
  const eob = start({ action: 'eob', timeoutMs: 100 });
  eob.src.next(recs(4, 2));
  eob.scheduler.flush();
  eob.bbn(4);
  assert.match(eob.acks[0], /^bbn 4 refused 5: .*closed by the batch timeout.*the batch holds 2 records$/);

  const bbn = start({ action: 'bbn', timeoutMs: 100 });
  bbn.src.next(recs(5, 2));
  bbn.scheduler.flush();
  bbn.src.next(recs(5, 1)); // late records of the dead connection, no bbn: still refused
  bbn.bbn(5);
  bbn.src.next(recs(5, 7));
  bbn.eob(5, 7);
  assert.equal(trace(bbn.got), ['r 5:2', 'bbn 5', 'r 5:7', 'eob 5:7']);
  assert.equal(bbn.acks, ['bbn 5 ok'], 'the bbn on the discarded batch is acknowledged; the eob waits for the sink');
  assert.is(bbn.counters.dropped, 1);
});

replace('an eob refused downstream leaves the batch discarded, so the sender can replace it; an acknowledged one stays closed', () => {
  const r = start();
  r.src.next(recs(6, 2));
  r.eob(6, 3);
  const first = r.got[1] as EobElement;
  first.ack?.({ ok: false, code: 1, message: 'its eob counts 3 records, 2 arrived' });
  assert.match(r.acks[0], /^eob 6 refused 1: its eob counts 3/, "the sender's ack still gets the refusal");
  assert.equal(r.states, ['6 open', '6 closed', '6 discarded']);
  r.bbn(6);
  r.src.next(recs(6, 3));
  r.eob(6, 3);
  (r.got[3] as EobElement).ack?.({ ok: true });
  assert.equal(trace(r.got), ['r 6:2', 'eob 6:3', 'r 6:3', 'eob 6:3']);
  assert.equal(r.acks.slice(1), ['bbn 6 ok', 'eob 6 ok']);
  r.bbn(6);
  assert.match(r.acks[3], /bbn 6 refused 1: .*is closed/);
});

replace.run();
