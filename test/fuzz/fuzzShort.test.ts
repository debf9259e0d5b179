/**
 * The short fuzz run of `npm test`: every TypeScript fuzz target over its seed corpus and then
 * coverage-guided mutations for a couple of seconds (HD_FUZZ_SHORT_SECONDS), asserting that only
 * the parser's own typed errors come out. The Rust targets' corpus runs in `cargo test`
 * (engine-rs/core/tests/fuzz_corpus.rs); the long runs are `npm run fuzz -- --seconds S`.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { fuzz } from './fuzzer';
import { seedsOf } from './run';
import { closeTargets, TARGETS } from './targets';

const SECONDS = Number(process.env.HD_FUZZ_SHORT_SECONDS ?? 2);
const SEED = Number(process.env.HD_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

const short = suite('fuzz: TypeScript parsers of outside bytes, short run');
short.before(() => console.log(`fuzzShort: seed ${SEED} (HD_FUZZ_SEED replays it), ${SECONDS} s a target`));
short.after(() => closeTargets());

for (const t of TARGETS) {
  short(`${t.name}: seeds and mutations throw only the parser's own errors`, async () => {
    const seeds = seedsOf(t.name);
    assert.ok(seeds.length > 0, 'the target has seeds in test/fuzz/seeds');
    const r = await fuzz(t, seeds, { seconds: SECONDS, seed: SEED });
    assert.ok(r.execs > seeds.length, `${r.execs} executions`);
    assert.equal(
      r.findings.map((f) => `${f.error}\ninput (hex): ${f.input.slice(0, 400)}`),
      [],
    );
  });
}

short.run();
