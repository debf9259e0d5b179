/**
 * `npm run soak -- --minutes M`: ingest and mixed queries at a steady rate against an SCC and two
 * Storage Nodes (real `hd run` processes) while a Storage Node is killed (SIGKILL) and restarted
 * every minute, alternately sn1 and sn2 (reliability issue #15, item 5). Every `--sample` seconds it
 * prints ingest throughput, query count and latency, and each process's RSS (/proc/<pid>/status
 * VmRSS); at the end it reads every acknowledged batch back from each replica alone with
 * verify_hash and reports lost / phantom records. Exits 1 when anything is lost or phantom, or a
 * query answered a wrong row.
 */
import { generateBatchIdNumber, type BatchID } from '../../engine-rs/batchId';
import { QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { ResultListener } from '../../hdwp/resultListener';
import { ChaosCluster, RECORD_SIZE, rssKb, SCHEMA_JSON, type Target } from './chaosCluster';
import { Draw, flowRecords, queryShape } from './chaosData';
import { dispatchQuery, readReplica } from './chaosRead';
import { RECONNECT_FAST } from './trials';

const HELP = `Usage: npm run soak -- [--minutes M] [--batches-per-s B] [--records R] [--queries-per-s Q] [--kill-every S] [--sample S] [--seed N]

Soak (reliability issue #15): starts an SCC and two Storage Nodes as \`hd run\` processes, then for M
minutes sends B batches a second of R flows records each (one PlatformIngestClient, each batch in two
streamInsert calls and an eob) and Q queries a second through the SCC's gRPC dispatch (a mix: whole
batches, dst_port eq, proto in OR dst_port, bytes between; 1-20 recent batches each, 20% with
verify_hash), while a Storage Node is killed (SIGKILL) and restarted every S seconds, sn1 and sn2 in
turn. Every sample it prints records/s acknowledged, queries done and their p50/p99 latency, and the
RSS of each process. At the end every acknowledged batch is read back from each Storage Node alone
with verify_hash: lost and phantom must be 0, and every batch a query delivered must have been exactly
the filter's selection of the records sent.

Options (defaults in brackets):
  --minutes M         run time [10]
  --batches-per-s B   batches a second [4]
  --records R         records a batch [500]
  --queries-per-s Q   queries a second [5]
  --kill-every S      seconds between Storage Node kills [60]
  --sample S          seconds between progress lines [10]
  --seed N            seed of the records and queries [random]
  --help              this text`;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function num(args: string[], name: string, dflt: number): number {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const n = Number(args[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got '${args[i + 1] ?? ''}'`);
  return n;
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};

/** A batch sent: enough to make its records again (they are not kept). */
interface Sent {
  readonly id: BatchID;
  readonly count: number;
  readonly serial: number;
  readonly drawSeed: number;
}
const recordsOf = (b: Sent): Buffer => flowRecords(b.count, b.serial, new Draw(b.drawSeed));

interface Sample {
  readonly t: number;
  readonly records: number;
  readonly queries: number;
  readonly failed: number;
  readonly p50: number;
  readonly p99: number;
  readonly rss: Record<Target | 'driver', number | undefined>;
  readonly states: string;
}

async function main(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(HELP);
    return 0;
  }
  const known = new Set(['--minutes', '--batches-per-s', '--records', '--queries-per-s', '--kill-every', '--sample', '--seed']);
  for (const a of args) if (a.startsWith('-') && !known.has(a)) throw new Error(`unknown option ${a} (see --help)`);
  const minutes = num(args, '--minutes', 10);
  const bps = num(args, '--batches-per-s', 4);
  const perBatch = Math.round(num(args, '--records', 500));
  const qps = num(args, '--queries-per-s', 5);
  const killEvery = num(args, '--kill-every', 60);
  const sampleS = num(args, '--sample', 10);
  const seed = Math.floor(num(args, '--seed', 1 + Math.floor(Math.random() * 2 ** 30)));
  const endAt = Date.now() + minutes * 60_000;
  console.log(`soak: ${minutes} min, ${bps} batches/s of ${perBatch} records, ${qps} queries/s, a Storage Node killed every ${killEvery} s, seed ${seed}`);

  const cluster = await ChaosCluster.start();
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port: listenPort } = await listener.listen();
  const dispatch = new QueryDispatchClient(cluster.dispatchAddress, { deadlineMs: 5000, channelOptions: RECONNECT_FAST });
  const acked: Sent[] = [];
  const unacked: Sent[] = [];
  let ackedRecords = 0;
  const lat: number[] = [];
  const allLat: number[] = [];
  const queries = { n: 0, complete: 0, partial: 0, failed: 0, wrong: 0 };
  const wrongs: string[] = [];
  let winQueries = 0;
  let winFailed = 0;
  const samples: Sample[] = [];
  const kills: string[] = [];
  const t0 = Date.now();
  let exitCode = 0;
  try {
    const ingest = async (): Promise<void> => {
      const c = new PlatformIngestClient(undefined, undefined, { connectTimeoutMs: 3000 });
      c.loadDatasetSchema(SCHEMA_JSON);
      c.setSccTargets([cluster.ingestTarget]);
      const d = new Draw(seed);
      let serial = 1;
      for (let n = 0; Date.now() < endAt; n++) {
        const due = t0 + (n * 1000) / bps;
        if (due > Date.now()) await sleep(due - Date.now());
        const b: Sent = { id: generateBatchIdNumber((BigInt(seed) << 24n) | BigInt(n)), count: perBatch, serial, drawSeed: d.int(1, 2 ** 31) };
        serial += perBatch;
        const recs = recordsOf(b);
        const half = Math.floor(perBatch / 2) * RECORD_SIZE;
        let ok = true;
        for (const part of [recs.subarray(0, half), recs.subarray(half)]) {
          while (!(await c.streamInsert(b.id, part))) {
            if (Date.now() > endAt + 30_000) {
              ok = false;
              break;
            }
            await sleep(50);
          }
          if (!ok) break;
        }
        let eob = false;
        while (ok && !(eob = await c.sendEob(b.id)) && Date.now() < endAt + 30_000) await sleep(50);
        if (eob) {
          acked.push(b);
          ackedRecords += b.count;
        } else {
          unacked.push(b);
          await c.sendBbn(b.id);
        }
      }
      await c.stop();
    };

    const query = async (): Promise<void> => {
      const d = new Draw(seed ^ 0x9e3779b9);
      for (let n = 0; Date.now() < endAt; n++) {
        const due = t0 + (n * 1000) / qps;
        if (due > Date.now()) await sleep(due - Date.now());
        if (acked.length === 0) continue;
        const chosen = new Map<string, Buffer>();
        const recent = acked.slice(-200);
        for (let i = d.int(1, 20); i > 0; i--) {
          const b = d.pick(recent);
          chosen.set(b.id.toHex(), recordsOf(b));
        }
        const o = await dispatchQuery(dispatch, listener, listenPort, chosen, queryShape(d), { timeoutMs: 10_000, verifyHash: d.chance(0.2) });
        queries.n++;
        winQueries++;
        queries[o.status]++;
        if (o.status === 'complete') {
          lat.push(o.ms);
          allLat.push(o.ms);
        } else winFailed++;
        queries.wrong += o.wrong.length;
        wrongs.push(...o.wrong);
      }
    };

    const killer = async (): Promise<void> => {
      for (let k = 1; ; k++) {
        const at = t0 + k * killEvery * 1000;
        if (at >= endAt) return;
        await sleep(at - Date.now());
        const target: Target = k % 2 === 1 ? 'sn1' : 'sn2';
        const t = Date.now();
        await cluster.kill(target);
        await sleep(1000);
        await cluster.restart(target);
        const healthy = await cluster.untilHealthy(50_000);
        kills.push(`${target} at ${((t - t0) / 1000).toFixed(0)} s: back and caught up after ${((Date.now() - t) / 1000).toFixed(1)} s${healthy ? '' : ' (NOT healthy within 50 s)'}`);
        console.log(`  killed ${kills[kills.length - 1]}`);
      }
    };

    const sampler = async (): Promise<void> => {
      let lastRecords = 0;
      let last = t0;
      while (Date.now() < endAt) {
        await sleep(Math.min(sampleS * 1000, Math.max(0, endAt - Date.now())));
        const now = Date.now();
        const pids = cluster.pids();
        const s: Sample = {
          t: (now - t0) / 1000,
          records: ((ackedRecords - lastRecords) * 1000) / (now - last),
          queries: winQueries,
          failed: winFailed,
          p50: pct(lat, 50),
          p99: pct(lat, 99),
          rss: { scc: rssKb(pids.scc), sn1: rssKb(pids.sn1), sn2: rssKb(pids.sn2), driver: rssKb(process.pid) },
          states: (await cluster.health())?.replicas.join(', ') ?? 'SCC /health unreachable',
        };
        samples.push(s);
        lastRecords = ackedRecords;
        last = now;
        lat.length = 0;
        winQueries = 0;
        winFailed = 0;
        const mb = (kb: number | undefined): string => (kb === undefined ? 'down' : `${(kb / 1024).toFixed(0)}`);
        console.log(
          `t=${s.t.toFixed(0)}s ingest ${s.records.toFixed(0)} rec/s | queries ${s.queries} (${s.failed} not complete), p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms | ` +
            `RSS MB scc ${mb(s.rss.scc)} sn1 ${mb(s.rss.sn1)} sn2 ${mb(s.rss.sn2)} driver ${mb(s.rss.driver)} | ${s.states}`,
        );
      }
    };

    await Promise.all([ingest(), query(), killer(), sampler()]);
    const healthy = await cluster.untilHealthy(60_000);
    console.log(`soak: ingest and queries done after ${((Date.now() - t0) / 1000).toFixed(0)} s; replicas ${healthy ? 'healthy' : 'NOT healthy'}; reading back ${acked.length} batches from each replica alone (verify_hash)`);
    let lost = 0;
    let phantom = 0;
    let bad = 0;
    for (const sn of cluster.cluster.sns) {
      const answers = await readReplica(cluster.host, sn.commandPort, listener, listenPort, acked.map((b) => b.id), 120_000);
      for (const b of acked) {
        const a = answers.get(b.id.toHex());
        const sent = recordsOf(b);
        if (a?.kind === 'records') {
          if (a.records.equals(sent)) continue;
          const have = a.records.length / RECORD_SIZE;
          lost += Math.max(0, b.count - have);
          phantom += Math.max(0, have - b.count) + (have === b.count ? have : 0);
          console.log(`  batch ${b.id.toHex().slice(-8)} on ${sn.name}: ${have} records, ${b.count} sent${have === b.count ? ' (other bytes)' : ''}`);
        } else {
          lost += b.count;
          if (a?.kind === 'bbn' && a.code === 12) bad++;
          console.log(`  batch ${b.id.toHex().slice(-8)} on ${sn.name}: ${a?.kind === 'bbn' ? `bbn ${a.reason}` : (a?.why ?? 'no answer')}`);
        }
      }
    }
    for (const w of wrongs.slice(0, 20)) console.log(`  WRONG ANSWER: ${w}`);

    // The report.
    const secs = (Date.now() - t0) / 1000;
    console.log('\n## soak report\n');
    console.log(`${minutes} min; ${acked.length} batches (${ackedRecords} records) acknowledged, ${unacked.length} not; ${kills.length} Storage Node kills`);
    for (const k of kills) console.log(`- ${k}`);
    console.log(`\ningest: ${(ackedRecords / secs).toFixed(0)} records/s acknowledged on average (offered ${(bps * perBatch).toFixed(0)})`);
    console.log(`queries: ${queries.n} (${queries.complete} complete, ${queries.partial} partial, ${queries.failed} failed), ${queries.wrong} wrong; latency of complete queries p50 ${pct(allLat, 50).toFixed(1)} ms, p99 ${pct(allLat, 99).toFixed(1)} ms`);
    console.log('\n| t s | ingest rec/s | queries | not complete | p50 ms | p99 ms | RSS scc MB | RSS sn1 MB | RSS sn2 MB | RSS driver MB |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const mb = (kb: number | undefined): string => (kb === undefined ? 'down' : (kb / 1024).toFixed(0));
    for (const s of samples) {
      console.log(`| ${s.t.toFixed(0)} | ${s.records.toFixed(0)} | ${s.queries} | ${s.failed} | ${s.p50.toFixed(1)} | ${s.p99.toFixed(1)} | ${mb(s.rss.scc)} | ${mb(s.rss.sn1)} | ${mb(s.rss.sn2)} | ${mb(s.rss.driver)} |`);
    }
    console.log('\nRSS growth (first sample → last; min / max over the run):');
    for (const p of ['scc', 'sn1', 'sn2', 'driver'] as const) {
      const xs = samples.map((s) => s.rss[p]).filter((x): x is number => x !== undefined);
      if (xs.length === 0) continue;
      const first = xs[0] as number;
      const lastX = xs[xs.length - 1] as number;
      console.log(`- ${p}: ${mb(first)} → ${mb(lastX)} MB (${lastX >= first ? '+' : ''}${(((lastX - first) / first) * 100).toFixed(0)}%), min ${mb(Math.min(...xs))}, max ${mb(Math.max(...xs))} MB${p.startsWith('sn') ? ' (restarted by the kills: each life starts afresh)' : ''}`);
    }
    console.log(`\nsoak: ${ackedRecords} acked records, ${lost} lost, ${phantom} phantom, ${bad} bad batch notices, ${queries.wrong} wrong query batches`);
    exitCode = lost === 0 && phantom === 0 && queries.wrong === 0 ? 0 : 1;
  } finally {
    dispatch.close();
    await listener.close();
    await cluster.stop();
  }
  return exitCode;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`soak: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(2);
  },
);
