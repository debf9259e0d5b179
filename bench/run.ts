/**
 * `npm run bench`: runs every `bench/*.bench.ts` in its own process, one after another (so no two
 * benchmarks share the two cores), and fails if any of them fails. Each benchmark prints its own
 * table of medians and ratios; copy the figures into docs/BENCHMARKS.md with the machine and date.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

const only = process.argv.slice(2);
const dir = __dirname;
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

let failed = 0;
for (const f of files) {
  console.log(`\n=== ${f} ===`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(dir, f)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`bench ${f} failed (exit ${r.status ?? r.signal})`);
  }
}
console.log(`\n${files.length - failed} benchmarks ran, ${failed} failed`);
process.exit(failed ? 1 : 0);
