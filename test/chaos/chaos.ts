/**
 * `npm run chaos -- --trials N [--seed S] [--clients C] [--no-queries]`: fault trials against real
 * processes (test/chaos/trials.ts). Exits 1 when any acknowledged record is lost or phantom, or a
 * query returned a wrong row.
 */
import { runChaos, summaryLine } from './trials';

const HELP = `Usage: npm run chaos -- [--trials N] [--seed S] [--clients C] [--records LO-HI] [--no-queries] [--verbose]

Fault trials (reliability issue #15). Starts an SCC and two Storage Nodes as \`hd run\` processes on
loopback, then runs N trials. In each, C PlatformIngestClient clients send 2-3 batches each in several
streamInsert calls, queries run through the SCC's gRPC dispatch over the batches acknowledged so far,
and the SCC or a Storage Node is killed (SIGKILL, restarted after 0-300 ms) or stopped (SIGSTOP,
SIGCONT after 0.1-1.5 s) at random moments — one or two faults a trial, the first on the SCC in even
trials and on a Storage Node in odd ones. Then every batch acknowledged in the trial is read back from
EACH Storage Node alone with verify_hash and compared byte for byte with what was sent.

Prints a line per trial with its seed, then
  N trials: A acked records, L lost, P phantom, B bad batch notices
lost: records of an acknowledged batch a replica does not give back; phantom: records it gives back
that were not sent in that batch; bad batch notices: bbn 12 (the stored chain does not verify).
A query may fail or miss batches during a fault, but every batch it delivers must be exactly the
filter's selection of the records sent (else "wrong").

Options:
  --trials N       trials to run (default 20)
  --seed S         the first trial's seed (default random); a failed trial prints the command that
                   replays it alone: --seed <its seed> --trials 1
  --clients C      ingest clients per trial (default 3)
  --records LO-HI  records per streamInsert call (default 1-80)
  --no-queries     no queries during the faults
  --verbose        also print each distinct query error of a trial
  --help           this text

Exit status: 0 when nothing was lost or phantom and no query answered wrong; 1 otherwise; 2 on a
usage error.`;

function arg(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${name} needs a value`);
  return v;
}

function int(text: string | undefined, name: string, dflt: number, min = 1): number {
  if (text === undefined) return dflt;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got '${text}'`);
  return n;
}

async function main(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(HELP);
    return 0;
  }
  const known = new Set(['--trials', '--seed', '--clients', '--records', '--no-queries', '--verbose']);
  for (const a of args) if (a.startsWith('-') && !known.has(a)) throw new Error(`unknown option ${a} (see --help)`);
  const trials = int(arg(args, '--trials'), '--trials', 20);
  const seed = int(arg(args, '--seed'), '--seed', Math.floor(Math.random() * 2 ** 31), 0);
  const clients = int(arg(args, '--clients'), '--clients', 3);
  const rec = arg(args, '--records');
  const m = rec === undefined ? undefined : /^(\d+)-(\d+)$/.exec(rec);
  if (rec !== undefined && (!m || Number(m[1]) < 1 || Number(m[2]) < Number(m[1]))) throw new Error(`--records must be LO-HI with 1 ≤ LO ≤ HI, got '${rec}'`);
  console.log(`chaos: ${trials} trials, seed ${seed}, ${clients} clients`);
  const s = await runChaos({
    trials,
    seed,
    clients,
    queries: !args.includes('--no-queries'),
    verbose: args.includes('--verbose'),
    ...(m && { chunkRecords: [Number(m[1]), Number(m[2])] as const }),
    log: (l) => console.log(l),
  });
  const faults = Object.entries(s.faults)
    .sort()
    .map(([k, v]) => `${k} ×${v}`)
    .join(', ');
  const q = s.reports.reduce((a, r) => ({ n: a.n + r.queries.n, complete: a.complete + r.queries.complete, rows: a.rows + r.queries.rows }), { n: 0, complete: 0, rows: 0 });
  const storedUnacked = s.reports.reduce((a, r) => a + r.storedUnacked, 0);
  const notAcked = s.reports.reduce((a, r) => a + r.notAcked, 0);
  console.log(`faults: ${faults}`);
  console.log(`${s.ackedBatches} batches acknowledged, ${notAcked} not (${storedUnacked} of those stored whole on a replica); queries ${q.n} (${q.complete} complete, ${q.rows} rows checked), ${s.wrong} wrong; ${(s.ms / 1000).toFixed(1)} s`);
  console.log(summaryLine(s));
  return s.lost === 0 && s.phantom === 0 && s.wrong === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`chaos: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  },
);
