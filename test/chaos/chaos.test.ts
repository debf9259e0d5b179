/**
 * Reliability issue #15, item 2, the short run of `npm run chaos` that `npm test` includes: 20
 * trials against an SCC and two Storage Nodes as real processes, SCC and Storage Node kills and
 * stops among them, small batches so the file stays short. Every acknowledged batch must come back
 * whole from each replica alone (verify_hash): 0 lost, 0 phantom, and no query answers a wrong row.
 * The seed is printed; rerun one with HD_CHAOS_SEED=<seed> (and HD_CHAOS_TRIALS=<n>), or replay a
 * failed trial with `npm run chaos -- --seed <its seed> --trials 1`.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runChaos, summaryLine } from './trials';

const chaos = suite('fault trials: SCC and Storage Node kills and stops during ingest and queries');

chaos('20 trials: every acknowledged batch whole on each replica, no wrong query answer', async () => {
  const seed = Number(process.env.HD_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const trials = Number(process.env.HD_CHAOS_TRIALS ?? 20);
  console.log(`chaos.test: seed ${seed}, ${trials} trials (HD_CHAOS_SEED=${seed} to rerun)`);
  const lines: string[] = [];
  const s = await runChaos({ trials, seed, clients: 3, batches: [2, 2], chunkRecords: [1, 30], log: (l) => lines.push(l) });
  console.log(lines.join('\n'));
  console.log(`chaos.test: ${summaryLine(s)} (${(s.ms / 1000).toFixed(1)} s)`);
  const kinds = Object.keys(s.faults);
  assert.ok(kinds.includes('kill scc'), `an SCC kill among ${kinds.join(', ')}`);
  assert.ok(kinds.includes('kill sn1') || kinds.includes('kill sn2'), `a Storage Node kill among ${kinds.join(', ')}`);
  assert.is(s.lost, 0, `lost records (seed ${seed})`);
  assert.is(s.phantom, 0, `phantom records (seed ${seed})`);
  assert.is(s.wrong, 0, `wrong query answers (seed ${seed})`);
  assert.ok(s.ackedRecords > 0, 'some batches were acknowledged');
});

chaos.run();
