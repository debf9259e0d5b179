/**
 * Fault trials (reliability issue #15, item 2). Each trial, drawn whole from its own seed before
 * anything runs: several PlatformIngestClient clients send batches in several calls each, queries go
 * through the SCC's dispatch over the batches acknowledged so far, and meanwhile the SCC or a Storage
 * Node is killed (SIGKILL, then restarted) or stopped (SIGSTOP, then SIGCONT) at random moments.
 * Once the SCC reports every replica healthy again, every batch acknowledged in the trial is read
 * back from EACH Storage Node alone with verify_hash and compared byte for byte with what was sent:
 *
 * - lost: records of an acknowledged batch a replica does not give back (missing batch, fewer
 *   records, bbn 13);
 * - phantom: records a replica gives back that were not sent in that batch (more records, other
 *   bytes);
 * - bad batch notices: bbn 12 under verify_hash (the stored chain does not verify).
 *
 * Queries during faults may fail or miss batches; every batch they deliver must be exactly the
 * filter's selection of the records sent ("wrong" otherwise, which fails the run like a loss).
 *
 * One rule keeps the trials inside what the SCC promises (docs/scc.md, "Catch-up"): the SCC is
 * killed or stopped only once every replica is healthy, since a restarted SCC does not catch up a
 * replica that was down when the old one died (its catch-up log lives in memory).
 */
import type { BatchID } from '../../engine-rs/batchId';
import { generateBatchIdNumber } from '../../engine-rs/batchId';
import { QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { sendBatchRetrying } from '../support/sendBatchRetrying';
import { ResultListener } from '../../hdwp/resultListener';
import { ChaosCluster, RECORD_SIZE, SCHEMA_JSON, type Target } from './chaosCluster';
import { Draw, flowRecords, queryShape } from './chaosData';
import { dispatchQuery, readReplica } from './chaosRead';

/** Settings of a run of trials. */
export interface ChaosOptions {
  readonly trials: number;
  /** The first trial's seed; trial `t` uses {@link trialSeed}(seed, t). */
  readonly seed: number;
  /** Ingest clients per trial (default 3). */
  readonly clients?: number;
  /** Batches each client sends per trial (default 2-3, drawn). */
  readonly batches?: readonly [number, number];
  /** Records per streamInsert call (default 1-80, drawn). */
  readonly chunkRecords?: readonly [number, number];
  /** Run queries through the SCC during the faults (default true). */
  readonly queries?: boolean;
  /** Also print each distinct query error of a trial. */
  readonly verbose?: boolean;
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

/** One fault of a trial. */
export interface Fault {
  readonly target: Target;
  readonly kind: 'kill' | 'stop';
  /** Wait before it, from the trial's start or the previous fault's end (ms). */
  readonly after: number;
  /** kill: time down before the restart; stop: time stopped before SIGCONT (ms). */
  readonly hold: number;
}

/** What a trial found. */
export interface TrialReport {
  readonly trial: number;
  readonly seed: number;
  readonly faults: readonly Fault[];
  readonly ackedBatches: number;
  readonly ackedRecords: number;
  /** Acknowledged batches during which some send had failed (the clients rode through a fault). */
  readonly disturbed: number;
  readonly notAcked: number;
  /** Batches not acknowledged that a replica nevertheless stores whole (sent again later or not). */
  readonly storedUnacked: number;
  readonly lost: number;
  readonly phantom: number;
  readonly bad: number;
  readonly queries: { n: number; complete: number; partial: number; failed: number; wrong: number; rows: number };
  /** Every replica healthy again at the end (before the read-back). */
  readonly healthy: boolean;
  readonly problems: readonly string[];
  readonly ms: number;
}

/** The whole run. */
export interface ChaosSummary {
  readonly trials: number;
  readonly ackedRecords: number;
  readonly ackedBatches: number;
  readonly lost: number;
  readonly phantom: number;
  readonly bad: number;
  readonly wrong: number;
  readonly reports: readonly TrialReport[];
  readonly ms: number;
  /** Kills and stops per target. */
  readonly faults: Record<string, number>;
}

/**
 * The seed of trial `t` of a run started with `seed`: trial 0 uses `seed` itself; the parity
 * alternates from trial to trial (it picks the first fault's target, so every run of two trials
 * or more has an SCC fault and a Storage Node fault, and a trial replayed alone is the same trial).
 */
export const trialSeed = (seed: number, t: number): number => {
  if (t === 0) return seed >>> 0;
  const h = (Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) + Math.imul(t, 0x85ebca6b)) >>> 0;
  return ((h & ~1) | ((seed + t) & 1)) >>> 0;
};

/** gRPC reconnects within a second of a restarted SCC (the default backoff reaches 2 minutes). */
export const RECONNECT_FAST = { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000 };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `N trials: A acked records, L lost, P phantom, B bad batch notices`. */
export function summaryLine(s: ChaosSummary): string {
  return `${s.trials} trials: ${s.ackedRecords} acked records, ${s.lost} lost, ${s.phantom} phantom, ${s.bad} bad batch notices`;
}

interface BatchPlan {
  readonly id: BatchID;
  readonly chunks: Buffer[];
  readonly pauses: number[];
}

/** Everything a trial does, drawn from its seed before it runs. */
function planTrial(seed: number, opts: ChaosOptions): { plans: BatchPlan[][]; faults: Fault[] } {
  const d = new Draw(seed);
  const clients = opts.clients ?? 3;
  const [bLo, bHi] = opts.batches ?? [2, 3];
  const [rLo, rHi] = opts.chunkRecords ?? [1, 80];
  let serial = seed * 1_000_000;
  // Batch ids: the seed in the high bits, so a replayed trial (--seed) on a fresh cluster sends the same ids.
  const plans = Array.from({ length: clients }, (_, ci) =>
    Array.from({ length: d.int(bLo, bHi) }, (_, bi) => {
      const chunks = Array.from({ length: d.int(2, 4) }, () => {
        const n = d.int(rLo, rHi);
        const b = flowRecords(n, serial, d);
        serial += n;
        return b;
      });
      return { id: generateBatchIdNumber((BigInt(seed) << 16n) | BigInt(ci * 256 + bi)), chunks, pauses: chunks.map(() => d.int(0, 40)) };
    }),
  );
  // The first fault hits the SCC in trials of an even seed and a Storage Node in the others (the
  // parity alternates, see trialSeed); a second fault of any target in 40% of the trials.
  const faults: Fault[] = [];
  const n = d.chance(0.4) ? 2 : 1;
  for (let i = 0; i < n; i++) {
    const target: Target = i === 0 ? (seed % 2 === 0 ? 'scc' : d.pick(['sn1', 'sn2'] as const)) : d.pick(['scc', 'sn1', 'sn2'] as const);
    const kind = d.chance(0.7) ? 'kill' : 'stop';
    faults.push({ target, kind, after: d.int(0, 300), hold: kind === 'kill' ? d.int(0, 300) : d.int(100, 1500) });
  }
  return { plans, faults };
}

/** Runs `opts.trials` trials against one cluster; starts and stops the cluster itself. */
export async function runChaos(opts: ChaosOptions): Promise<ChaosSummary> {
  const log = opts.log ?? (() => undefined);
  const t0 = Date.now();
  const cluster = await ChaosCluster.start();
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port: listenPort } = await listener.listen();
  const dispatch = new QueryDispatchClient(cluster.dispatchAddress, { deadlineMs: 3000, channelOptions: RECONNECT_FAST });
  /** Every batch acknowledged so far (hex id → records), what the queries ask for. */
  const acked = new Map<string, Buffer>();
  const reports: TrialReport[] = [];
  const faultCount: Record<string, number> = {};
  try {
    for (let t = 0; t < opts.trials; t++) {
      const seed = trialSeed(opts.seed, t);
      const r = await runTrial(t, seed, opts, cluster, listener, listenPort, dispatch, acked);
      reports.push(r);
      for (const f of r.faults) faultCount[`${f.kind} ${f.target}`] = (faultCount[`${f.kind} ${f.target}`] ?? 0) + 1;
      const q = r.queries;
      const ok = r.lost === 0 && r.phantom === 0 && q.wrong === 0;
      log(
        `trial ${t + 1}/${opts.trials} seed ${seed}: ${r.faults.map(faultText).join('; ')} | ${r.ackedBatches} batches acked ` +
          `(${r.disturbed} through a failed send), ${r.notAcked} not, ${r.ackedRecords} records | queries ${q.n}: ${q.complete} complete, ` +
          `${q.partial} partial, ${q.failed} failed, ${q.wrong} wrong | lost ${r.lost}, phantom ${r.phantom}, bad ${r.bad} | ` +
          `${(r.ms / 1000).toFixed(1)} s${ok ? '' : `  FAILED — replay: npm run chaos -- --seed ${seed} --trials 1`}`,
      );
      for (const p of r.problems) log(`  ${p}`);
    }
  } finally {
    dispatch.close();
    await listener.close();
    await cluster.stop();
  }
  const sum = (k: 'ackedRecords' | 'ackedBatches' | 'lost' | 'phantom' | 'bad'): number => reports.reduce((a, r) => a + r[k], 0);
  return {
    trials: reports.length,
    ackedRecords: sum('ackedRecords'),
    ackedBatches: sum('ackedBatches'),
    lost: sum('lost'),
    phantom: sum('phantom'),
    bad: sum('bad'),
    wrong: reports.reduce((a, r) => a + r.queries.wrong, 0),
    reports,
    ms: Date.now() - t0,
    faults: faultCount,
  };
}

const faultText = (f: Fault): string => (f.kind === 'kill' ? `kill ${f.target} +${f.after}ms, down ${f.hold}ms` : `stop ${f.target} +${f.after}ms for ${f.hold}ms`);

async function runTrial(
  t: number,
  seed: number,
  opts: ChaosOptions,
  cluster: ChaosCluster,
  listener: ResultListener,
  listenPort: number,
  dispatch: QueryDispatchClient,
  ackedSoFar: Map<string, Buffer>,
): Promise<TrialReport> {
  const start = Date.now();
  const { plans, faults } = planTrial(seed, opts);
  const qd = new Draw(seed ^ 0x2545f491);
  const problems: string[] = [];
  const acked: { id: BatchID; sent: Buffer; where: string }[] = [];
  const unacked: { id: BatchID; sent: Buffer }[] = [];
  let disturbed = 0;
  let running = plans.length + 1;
  const deadline = Date.now() + 60_000;

  const runClient = async (ci: number): Promise<void> => {
    const c = new PlatformIngestClient(undefined, undefined, { connectTimeoutMs: 3000 });
    c.loadDatasetSchema(SCHEMA_JSON);
    c.setSccTargets([cluster.ingestTarget]);
    try {
      for (const p of plans[ci] ?? []) {
        const { acked: eob, failures } = await sendBatchRetrying(c, p, deadline);
        const sent = Buffer.concat(p.chunks);
        if (eob) {
          if (failures > 0) disturbed++;
          acked.push({ id: p.id, sent, where: `trial ${t} client ${ci} batch ${p.id.toHex().slice(-8)}` });
          ackedSoFar.set(p.id.toHex(), sent);
        } else {
          unacked.push({ id: p.id, sent });
          problems.push(`client ${ci}: batch ${p.id.toHex().slice(-8)} not acknowledged within the trial: ${String(c.lastError)}`);
          await c.sendBbn(p.id);
        }
      }
    } finally {
      await c.stop();
      running--;
    }
  };

  const chaos = async (): Promise<void> => {
    try {
      for (const f of faults) {
        await sleep(f.after);
        // The SCC goes down only with every replica healthy (see the file's comment).
        if (f.target === 'scc' && !(await cluster.untilHealthy(60_000))) problems.push('replicas not healthy within 60 s before an SCC fault');
        if (f.kind === 'kill') {
          await cluster.kill(f.target);
          await sleep(f.hold);
          await cluster.restart(f.target);
        } else {
          cluster.pause(f.target);
          await sleep(f.hold);
          cluster.resume(f.target);
        }
      }
    } finally {
      running--;
    }
  };

  const queryErrors = new Set<string>();
  const queries = { n: 0, complete: 0, partial: 0, failed: 0, wrong: 0, rows: 0 };
  const queryLoop = async (): Promise<void> => {
    while (running > 0 && opts.queries !== false) {
      const ids = [...ackedSoFar.keys()].slice(-40);
      if (ids.length === 0) {
        await sleep(20);
        continue;
      }
      const pickN = qd.int(1, Math.min(ids.length, 12));
      const chosen = new Map<string, Buffer>();
      for (let i = 0; i < pickN; i++) {
        const h = qd.pick(ids);
        chosen.set(h, ackedSoFar.get(h) as Buffer);
      }
      const o = await dispatchQuery(dispatch, listener, listenPort, chosen, queryShape(qd), { timeoutMs: 4000, verifyHash: qd.chance(0.3), mergeBatches: qd.chance(0.5) });
      queries.n++;
      queries[o.status]++;
      queries.rows += o.rows;
      if (o.error !== undefined && opts.verbose && !queryErrors.has(o.error)) {
        queryErrors.add(o.error);
        problems.push(`query: ${o.error}`);
      }
      if (o.wrong.length > 0) {
        queries.wrong += o.wrong.length;
        for (const w of o.wrong) problems.push(`WRONG ANSWER from a query: ${w}`);
      }
      await sleep(qd.int(0, 50) + (o.status === 'failed' ? 100 : 0));
    }
  };

  await Promise.all([chaos(), queryLoop(), ...plans.map((_, ci) => runClient(ci))]);
  const healthy = await cluster.untilHealthy(60_000);
  if (!healthy) problems.push(`replicas not healthy 60 s after the trial: ${JSON.stringify((await cluster.health())?.replicas)}`);

  // Read back: each replica alone, verify_hash.
  let lost = 0;
  let phantom = 0;
  let bad = 0;
  let storedUnacked = 0;
  const ids = [...acked.map((a) => a.id), ...unacked.map((u) => u.id)];
  for (const sn of cluster.cluster.sns) {
    const answers = await readReplica(cluster.host, sn.commandPort, listener, listenPort, ids);
    for (const { id, sent, where } of acked) {
      const a = answers.get(id.toHex());
      const want = sent.length / RECORD_SIZE;
      if (!a || a.kind === 'none') {
        lost += want;
        problems.push(`${where} on ${sn.name}: no answer (${a?.why ?? 'not asked'}), ${want} records lost`);
      } else if (a.kind === 'bbn') {
        if (a.code === 12) bad++;
        lost += want;
        problems.push(`${where} on ${sn.name}: bbn ${a.reason}; ${want} records not readable`);
      } else if (!a.records.equals(sent)) {
        const have = a.records.length / RECORD_SIZE;
        const same = countSame(a.records, sent);
        lost += want - same;
        phantom += have - same;
        problems.push(`${where} on ${sn.name}: ${have} records stored, ${want} sent, ${same} equal in place`);
      }
    }
    for (const { id, sent } of unacked) {
      const a = answers.get(id.toHex());
      if (a?.kind === 'records') {
        if (a.records.equals(sent)) storedUnacked++;
        else problems.push(`unacknowledged batch ${id.toHex().slice(-8)} on ${sn.name}: ${a.records.length / RECORD_SIZE} records stored, ${sent.length / RECORD_SIZE} sent (a partial copy)`);
      } else if (a?.kind === 'bbn' && a.code === 12) bad++;
    }
  }
  return {
    trial: t,
    seed,
    faults,
    ackedBatches: acked.length,
    ackedRecords: acked.reduce((n, a) => n + a.sent.length / RECORD_SIZE, 0),
    disturbed,
    notAcked: unacked.length,
    storedUnacked,
    lost,
    phantom,
    bad,
    queries,
    healthy,
    problems,
    ms: Date.now() - start,
  };
}

/** Records equal at the same position in both buffers. */
function countSame(a: Buffer, b: Buffer): number {
  let n = 0;
  for (let o = 0; o + RECORD_SIZE <= Math.min(a.length, b.length); o += RECORD_SIZE) if (a.subarray(o, o + RECORD_SIZE).equals(b.subarray(o, o + RECORD_SIZE))) n++;
  return n;
}
