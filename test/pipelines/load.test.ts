import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { formatProblem, parsePipeline, type LoadResult } from '../../pipelines/load';
import type { Problem } from '../../pipelines/settings';
import { testRegistry } from './testStages';

const FILE = '/pipes/p.yaml';
const load = (text: string, env: Record<string, string> = {}, overrides: Record<string, string> = {}): LoadResult =>
  parsePipeline(text, FILE, { registry: testRegistry(), env, overrides });
const problems = (text: string, env: Record<string, string> = {}): Problem[] => {
  const r = load(text, env);
  if (r.ok) throw new Error('expected problems, the pipeline loaded');
  return r.problems;
};
/** Asserts one problem sits on `line` and its message matches `re`. */
const has = (ps: Problem[], line: number, re: RegExp): void => {
  const hit = ps.find((p) => p.line === line && re.test(p.message));
  assert.ok(hit, `no problem on line ${line} matching ${re}; got:\n${ps.map(formatProblem).join('\n')}`);
};

const GOOD = `pipeline: demo
description: reads and collects
stages:
  src:
    type: fileSource
    path: data/in.bin
    block_size: 64KiB
  recs:
    type: toRecords
    inputs: [src]
  out:
    type: recSink
    inputs: [recs]
`;

const ok = suite('load: a valid file');
ok('gives stages in file order with typed configs and resolved paths', () => {
  const r = load(GOOD);
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  assert.is(r.pipeline.name, 'demo');
  assert.is(r.pipeline.description, 'reads and collects');
  assert.equal([...r.pipeline.stages.keys()], ['src', 'recs', 'out']);
  const src = r.pipeline.stages.get('src');
  assert.is(src?.config.path, path.resolve('/pipes/data/in.bin'));
  assert.is(src?.config.block_size, 65536);
  assert.is(src?.config.max_pending, 2);
  assert.equal(r.pipeline.stages.get('out')?.inputs.map((i) => i.id), ['recs']);
});
ok.run();

const syntax = suite('load: YAML and file shape');
syntax('YAML syntax error carries its line', () => {
  has(problems('pipeline: x\nstages:\n  a: [unclosed\n'), 4, /YAML/);
});
syntax('duplicate stage ids are rejected', () => {
  has(problems(GOOD + '  out:\n    type: recSink\n    inputs: [recs]\n'), 14, /YAML: .*unique/i);
});
syntax('unknown top-level key, with a suggestion', () => {
  has(problems(GOOD.replace('description:', 'descripton:')), 2, /unknown top-level key "descripton" \(did you mean 'description'\?\)/);
});
syntax('missing pipeline name and stages', () => {
  const ps = problems('description: nothing\n');
  has(ps, 1, /missing top-level key 'pipeline'/);
  has(ps, 1, /missing top-level key 'stages'/);
});
syntax('a root that is not a map', () => {
  has(problems('- a\n- b\n'), 1, /is a map/);
});
syntax('stage id and stage shape', () => {
  const ps = problems('pipeline: x\nstages:\n  9bad:\n    type: recSource\n  s: 3\n');
  has(ps, 3, /stage id "9bad"/);
  has(ps, 5, /stage 's' is a map/);
});
syntax.run();

const types = suite('load: stage types and settings');
types('unknown stage type suggests the closest name', () => {
  has(problems(GOOD.replace('type: toRecords', 'type: toRecord')), 9, /unknown stage type 'toRecord' \(did you mean 'toRecords'\?\); known types: .*fileSource/);
});
types('missing type', () => {
  has(problems(GOOD.replace('    type: toRecords\n', '')), 8, /stage 'recs' needs a type/);
});
types('unknown setting with suggestion and the list of known ones', () => {
  has(problems(GOOD.replace('block_size:', 'blok_size:')), 7, /unknown setting 'blok_size' for stage type 'fileSource' \(did you mean 'block_size'\?\); expected one of: path, block_size, max_pending/);
});
types('missing required setting names it and what it takes', () => {
  has(problems(GOOD.replace('    path: data/in.bin\n', '')), 4, /stage type 'fileSource' needs setting 'path': a file path/);
});
types('values out of range or of the wrong type say what was expected', () => {
  const ps = problems(GOOD.replace('64KiB', '1GiB').replace('type: recSink', 'type: recSink\n    slow: maybe'));
  has(ps, 7, /setting 'block_size' expects a byte size 4096\.\.4194304/);
  has(ps, 13, /setting 'slow' expects true or false, got "maybe"/);
});
types('every problem is reported, not just the first', () => {
  const ps = problems(GOOD.replace('64KiB', 'lots').replace('type: toRecords', 'type: nope').replace('inputs: [recs]', 'inputs: [rec]'));
  has(ps, 7, /block_size/);
  has(ps, 9, /unknown stage type 'nope'/);
  has(ps, 13, /input 'rec' is not a stage in this pipeline \(did you mean 'recs'\?\)/);
});
types.run();

const graph = suite('load: graph checks');
graph('dangling input', () => {
  has(problems(GOOD.replace('inputs: [src]', 'inputs: [source]')), 10, /input 'source' is not a stage/);
});
graph('a source with inputs', () => {
  has(problems(GOOD.replace('    block_size: 64KiB\n', '    block_size: 64KiB\n    inputs: [recs]\n')), 8, /is a source \(fileSource\) and takes no inputs/);
});
graph('an operator and a sink without inputs', () => {
  const ps = problems(GOOD.replace('    inputs: [src]\n', '').replace('    inputs: [recs]\n', ''));
  has(ps, 8, /stage 'recs' is an operator \(toRecords\) and needs inputs/);
  has(ps, 10, /stage 'out' is a sink \(recSink\) and needs inputs/);
});
graph('element type mismatch names both sides and the types', () => {
  has(problems(GOOD.replace('inputs: [recs]', 'inputs: [src]')), 13, /stage 'out' \(recSink\) takes 'records' but its input 'src' \(fileSource\) gives 'bytes'/);
});
graph('a sink used as an input', () => {
  const text = GOOD + '  more:\n    type: recSink\n    inputs: [out]\n';
  has(problems(text), 16, /input 'out' is a sink \(recSink\) and gives no output/);
});
graph('an output nobody takes', () => {
  has(problems(GOOD + '  extra:\n    type: recSource\n'), 14, /stage 'extra' gives 'records' but no stage takes it/);
});
graph('cycles are reported with their path', () => {
  const text = `pipeline: loop
stages:
  a:
    type: pass
    inputs: [c]
  b:
    type: pass
    inputs: [a]
  c:
    type: pass
    inputs: [b]
  out:
    type: recSink
    inputs: [c]
`;
  const ps = problems(text);
  const cyc = ps.filter((p) => /^cycle:/.test(p.message));
  assert.is(cyc.length, 1);
  assert.match(cyc[0].message, /'a' → 'c' → 'b' → 'a'|'a' → 'b' → 'c' → 'a'/);
  assert.is(cyc[0].line, 3);
});
graph('a stage feeding itself is a cycle', () => {
  has(problems('pipeline: x\nstages:\n  s:\n    type: recSource\n  p:\n    type: pass\n    inputs: [s, p]\n  o:\n    type: recSink\n    inputs: [p]\n'), 5, /cycle: 'p' → 'p'/);
});
graph('fan-out and fan-in load', () => {
  const text = `pipeline: fan
stages:
  a: { type: recSource }
  b: { type: recSource }
  m: { type: pass, inputs: [a, b] }
  o1: { type: recSink, inputs: [m] }
  o2: { type: recSink, inputs: [m, a] }
`;
  assert.ok(load(text).ok);
});
graph.run();

const env = suite('load: ${VAR} substitution');
env('from the environment, with defaults, and from the file settings', () => {
  const text = `pipeline: env
settings:
  BLOCK: 8KiB
stages:
  src:
    type: fileSource
    path: \${DIR}/in.bin
    block_size: \${BLOCK}
    max_pending: \${PENDING:-5}
  out: { type: bytesSink, inputs: [src], slow: '\${SLOW:-false}' }
`;
  const r = load(text, { DIR: '/data' });
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const c = r.pipeline.stages.get('src')?.config;
  assert.is(c?.path, '/data/in.bin');
  assert.is(c?.block_size, 8192);
  assert.is(c?.max_pending, 5, 'a number from a default is coerced');
  assert.is(r.pipeline.stages.get('out')?.config.slow, false);
  const r2 = load(text, { DIR: '/data', BLOCK: '16KiB', PENDING: '3' }, { BLOCK: '32KiB' });
  assert.ok(r2.ok);
  if (r2.ok) {
    assert.is(r2.pipeline.stages.get('src')?.config.block_size, 32768, '--config overrides win over env and settings');
    assert.is(r2.pipeline.stages.get('src')?.config.max_pending, 3);
  }
});
env('a missing variable without default is an error at its line', () => {
  has(problems(GOOD.replace('data/in.bin', '${DATA_DIR}/in.bin')), 6, /environment variable DATA_DIR is not set and has no default/);
});
env('malformed references and $$ escapes', () => {
  has(problems(GOOD.replace('data/in.bin', '${1X}/in.bin')), 6, /not a variable reference/);
  has(problems(GOOD.replace('data/in.bin', '${OPEN/in.bin')), 6, /unclosed/);
  const r = load(GOOD.replace('data/in.bin', 'a$$b'));
  assert.ok(r.ok && r.pipeline.stages.get('src')?.config.path === path.resolve('/pipes/a$b'));
});
env('a bad value from a variable names the variable it came from', () => {
  has(problems(GOOD.replace('64KiB', '${BLOCK:-64KiB}'), { BLOCK: 'huge' }), 7, /setting 'block_size' expects a byte size .*got "huge" \(from BLOCK\)/);
});
env('a number typed literally as a string is not coerced', () => {
  has(problems(GOOD.replace('64KiB', '"65536x"')), 7, /block_size/);
});
env.run();
