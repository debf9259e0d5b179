/**
 * Runs the TypeScript fuzz targets (test/fuzz/targets.ts), coverage-guided, for `--seconds` each:
 *
 *   npx tsx test/fuzz/run.ts --seconds 60 [--target pgwire_frontend] [--seed N]
 *
 * Starts from test/fuzz/seeds/<target>/ plus the inputs earlier runs kept (.hd/fuzz/ts/<target>/,
 * where this run adds what reached new code). Findings are written to .hd/fuzz/findings/ and the
 * exit code is 1 when there is one. Prints one line per target and a JSON summary line.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fuzz, type FuzzReport } from './fuzzer';
import { closeTargets, TARGETS } from './targets';

const root = path.resolve(__dirname, '../..');

/** The files of `dir`, sorted by name (none when it is missing). */
export function inputsIn(dir: string): Buffer[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .map((n) => path.join(dir, n))
    .map((f) => readFileSync(f));
}

/** The seeds of a target. */
export const seedsOf = (name: string): Buffer[] => inputsIn(path.join(__dirname, 'seeds', name));

async function main(argv: string[]): Promise<number> {
  const arg = (k: string): string | undefined => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const seconds = Number(arg('--seconds') ?? 10);
  const only = arg('--target');
  const seed = Number(arg('--seed') ?? Date.now() % 2 ** 31);
  const targets = TARGETS.filter((t) => !only || t.name === only);
  if (targets.length === 0) throw new Error(`no target '${only}'; targets: ${TARGETS.map((t) => t.name).join(', ')}`);
  console.log(`ts fuzz: ${targets.length} targets, ${seconds} s each, seed ${seed}`);
  const reports: FuzzReport[] = [];
  for (const t of targets) {
    const kept = path.join(root, '.hd/fuzz/ts', t.name);
    mkdirSync(kept, { recursive: true });
    const r = await fuzz(t, [...seedsOf(t.name), ...inputsIn(kept)], {
      seconds,
      seed,
      onKept: (input) => writeFileSync(path.join(kept, createHash('sha1').update(input).digest('hex')), input),
    });
    reports.push(r);
    for (const f of r.findings) {
      const dir = path.join(root, '.hd/fuzz/findings');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `${t.name}-${createHash('sha1').update(f.input).digest('hex').slice(0, 12)}`), Buffer.from(f.input, 'hex'));
    }
    console.log(`${t.name}: ${r.execs} execs (${Math.round(r.execs / seconds)}/s), ${r.kept} inputs kept for new coverage, ${r.features} coverage features, ${r.findings.length} findings`);
    for (const f of r.findings) console.log(`  FINDING ${f.error}\n  input (hex): ${f.input.slice(0, 400)}`);
  }
  await closeTargets();
  console.log(JSON.stringify({ seconds, seed, targets: reports.map((r) => ({ target: r.target, execs: r.execs, kept: r.kept, features: r.features, findings: r.findings.length })) }));
  return reports.some((r) => r.findings.length > 0) ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (c) => process.exit(c),
    (e) => {
      console.error(e);
      process.exit(2);
    },
  );
}
