/**
 * Services in pipeline files (docs/pipelines.md, "Services"): declared under `services:`, used by
 * stages through `uses:`, checked at load with their lines, started by the runner before their
 * users and stopped after them (also when the run fails), and injected into the stages.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Observable, map } from 'rxjs';
import { recordChunk, type Chunk } from '../../stream/chunk';
import { formatProblem, parsePipeline, type LoadResult } from '../../pipelines/load';
import { mayUse, needs, type OperatorType, type ServiceType, type SinkType, type SourceType } from '../../pipelines/registry';
import { runPipeline } from '../../pipelines/run';
import { int, str } from '../../pipelines/settings';
import type { Problem } from '../../pipelines/settings';
import { testRegistry } from './testStages';
import type { LogLevel } from '../../lib/logging';

/** What happened, in order: `start <id>`, `stop <id>`, `create <stage>`, `teardown <stage>`. */
const log: string[] = [];

/** A counter service: its value counts what its users add. */
interface Tally {
  readonly label: string;
  n: number;
}

const tallySettings = { label: str({ doc: 'a label', default: 'tally' }), fail_start: int({ doc: '1: the start rejects', default: 0, min: 0, max: 1 }) };
const tallyService: ServiceType<typeof tallySettings, Record<string, never>, Tally> = {
  name: 'tally',
  kind: 'service',
  doc: 'test: a counter',
  settings: tallySettings,
  start: async (c, ctx) => {
    await new Promise((r) => setTimeout(r, 5));
    if (c.fail_start === 1) throw new Error('tally cannot start, as asked');
    log.push(`start ${ctx.id}`);
    return { value: { label: c.label, n: 0 }, stop: async () => void log.push(`stop ${ctx.id}`) };
  },
};

const usesTally = needs<Tally>('tally', 'the counter it adds to');
/** A server using another service (a metrics page, say): starts after it, stops before it. */
const reporterService: ServiceType<Record<string, never>, { tally: typeof usesTally }, string> = {
  name: 'reporter',
  kind: 'service',
  server: true,
  doc: 'test: reads a tally',
  settings: {},
  uses: { tally: usesTally },
  start: (_c, ctx) => {
    log.push(`start ${ctx.id} (tally ${ctx.services.tally.label})`);
    return Promise.resolve({ value: ctx.services.tally.label, stop: async () => void log.push(`stop ${ctx.id}`) });
  },
};

/** A server nobody uses. */
const serverService: ServiceType<Record<string, never>, Record<string, never>, undefined> = {
  name: 'testServer',
  kind: 'service',
  server: true,
  doc: 'test: a server',
  settings: {},
  start: (_c, ctx) => {
    log.push(`start ${ctx.id}`);
    return Promise.resolve({ value: undefined, stop: async () => void log.push(`stop ${ctx.id}`) });
  },
};

/** A server that logs at levels of its own choosing (words that would guess the other level), and fails its stop. */
const chattyService: ServiceType<Record<string, never>, Record<string, never>, undefined> = {
  name: 'chatty',
  kind: 'service',
  server: true,
  doc: 'test: reports at stated levels',
  settings: {},
  start: (_c, ctx) => {
    ctx.report('the first push failed, the retry went through', 'info');
    ctx.report('serving without a password', 'warn');
    return Promise.resolve({ value: undefined, stop: () => Promise.reject(new Error('socket busy')) });
  },
};

const countSettings = { fail: int({ doc: '1: throw on the first chunk', default: 0, min: 0, max: 1 }) };
/** Adds each chunk's record count to the tally it uses. */
const countOp: OperatorType<typeof countSettings, { tally: typeof usesTally }> = {
  name: 'countInto',
  kind: 'operator',
  doc: 'test: counts into a tally',
  unit: 'records',
  input: 'records',
  output: 'records',
  settings: countSettings,
  uses: { tally: usesTally },
  create: (c, ctx) => {
    const tally = ctx.services.tally;
    log.push(`create ${ctx.id}`);
    return (input) =>
      new Observable<Chunk>((sub) => {
        const inner = input
          .pipe(
            map((chunk) => {
              if (c.fail === 1) throw new Error('count failing as asked');
              const n = chunk.kind === 'records' ? chunk.count : 0;
              tally.n += n;
              ctx.counters.received += n;
              ctx.counters.sent += n;
              return chunk;
            }),
          )
          .subscribe(sub);
        return () => {
          log.push(`teardown ${ctx.id}`);
          inner.unsubscribe();
        };
      });
  },
};

const mayTally = mayUse<Tally>('tally', 'a counter, if any');
/** A source that may use a tally: emits one chunk of 3 records, noting whether it got one. */
const maybeSource: SourceType<Record<string, never>, { tally: typeof mayTally }> = {
  name: 'maybeTally',
  kind: 'source',
  doc: 'test: optional service',
  unit: 'records',
  output: 'records',
  settings: {},
  uses: { tally: mayTally },
  create: (_c, ctx) =>
    new Observable<Chunk>((sub) => {
      log.push(`maybe ${ctx.services.tally ? ctx.services.tally.label : 'none'}`);
      ctx.counters.received += 3;
      ctx.counters.sent += 3;
      sub.next(recordChunk('t', 4, 3, Buffer.alloc(12)));
      sub.complete();
    }),
};

/** A sink that may use a tally too. */
const sinkTally: SinkType<Record<string, never>, { tally: typeof mayTally }> = {
  name: 'tallySink',
  kind: 'sink',
  doc: 'test: takes records',
  unit: 'records',
  input: 'records',
  settings: {},
  uses: { tally: mayTally },
  create: (_c, ctx) => (input) =>
    new Observable<never>((sub) => {
      const s = input.subscribe({
        next: (chunk) => {
          const n = chunk.kind === 'records' ? chunk.count : 0;
          ctx.counters.received += n;
          ctx.counters.sent += n;
          if (ctx.services.tally) log.push(`sink sees ${ctx.services.tally.label}=${ctx.services.tally.n}`);
        },
        error: (e: unknown) => sub.error(e),
        complete: () => sub.complete(),
      });
      return () => s.unsubscribe();
    }),
};

const registry = testRegistry().register(tallyService).register(reporterService).register(serverService).register(chattyService).register(countOp).register(maybeSource).register(sinkTally);
const FILE = '/pipes/services.yaml';
const load = (text: string): LoadResult => parsePipeline(text, FILE, { registry, env: {} });
const problems = (text: string): Problem[] => {
  const r = load(text);
  if (r.ok) throw new Error('expected problems, the pipeline loaded');
  return r.problems;
};
const has = (ps: Problem[], line: number, re: RegExp): void => {
  const hit = ps.find((p) => p.line === line && re.test(p.message));
  assert.ok(hit, `no problem on line ${line} matching ${re}; got:\n${ps.map(formatProblem).join('\n')}`);
};

const GOOD = `pipeline: counted
services:
  count:
    type: tally
    label: seen
stages:
  src:
    type: recSource
    chunks: 2
    size: 5
  add:
    type: countInto
    inputs: [src]
    uses: [count]
  out:
    type: tallySink
    inputs: [add]
    uses: [count]
`;

const loading = suite('services: loading');

loading('a file declaring a service and stages using it loads; each use is tied to its slot', () => {
  const r = load(GOOD);
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  assert.equal([...r.pipeline.services.keys()], ['count']);
  assert.is(r.pipeline.services.get('count')?.config.label, 'seen');
  assert.equal([...(r.pipeline.stages.get('add')?.uses ?? [])], [['tally', 'count']]);
  assert.equal([...(r.pipeline.stages.get('src')?.uses ?? [])], []);
});

loading('a stage using a service the file does not declare fails at load, naming the line and the service', () => {
  const ps = problems(GOOD.replace(/services:\n {2}count:\n {4}type: tally\n {4}label: seen\n/, ''));
  // The stage's line, with the service type it needs and how to declare it.
  has(ps, 7, /stage 'add' \(countInto\) needs a 'tally' service \(the counter it adds to\); declare one under services: \(type: tally\) and list its id in uses:/);
  // And the id it lists, at its place.
  has(ps, 10, /stage 'add': uses 'count', which is not a service in this pipeline; declare it under services:/);
});

loading('a declared service the stage does not list is named in the fix', () => {
  has(problems(GOOD.replace('    uses: [count]\n  out:', '  out:')), 11, /stage 'add' \(countInto\) needs a 'tally' service .*; list it: uses: \[count\]/);
});

loading('unknown keys in a service entry are refused, with a suggestion', () => {
  has(problems(GOOD.replace('    label: seen', '    lable: seen')), 5, /unknown setting 'lable' for service type 'tally'.*label/);
  has(problems(GOOD.replace('    label: seen', '    inputs: [src]')), 5, /service 'count': a service takes no inputs/);
});

loading('unknown and misplaced types are refused', () => {
  has(problems(GOOD.replace('type: tally', 'type: taly')), 4, /unknown service type 'taly' \(did you mean 'tally'\?\)/);
  has(problems(GOOD.replace('type: tally', 'type: recSource')), 4, /'recSource' is a stage type; declare it under stages:/);
  has(problems(GOOD.replace('type: recSource', 'type: tally')), 8, /'tally' is a service type; declare it under services:/);
});

loading('a use of the wrong service type, or of a stage, is refused at its place', () => {
  const text = GOOD.replace('stages:\n', '  rep:\n    type: reporter\n    uses: [count]\nstages:\n').replace('    uses: [count]\n  out:', '    uses: [count, rep]\n  out:');
  has(problems(text), 17, /stage 'add' \(countInto\) uses no 'reporter' service \('rep'\); it uses: tally/);
  has(problems(GOOD.replace('    uses: [count]\n  out:', '    uses: [count, src]\n  out:')), 14, /stage 'add': 'src' is a stage, not a service/);
});

loading('a service declared and used by nothing is an error (a server excepted)', () => {
  const unused = GOOD.replace('stages:\n', '  spare:\n    type: tally\nstages:\n');
  has(problems(unused), 6, /service 'spare' \(tally\) is used by no stage or service; list it in a stage's uses:, or remove it/);
  const server = GOOD.replace('stages:\n', '  web:\n    type: testServer\nstages:\n');
  assert.ok(load(server).ok);
});

loading('a file of services alone loads; services using each other are ordered, cycles refused', () => {
  const alone = load('pipeline: alone\nservices:\n  web:\n    type: testServer\n');
  assert.ok(alone.ok);
  const ordered = load(GOOD.replace('services:\n', 'services:\n  rep:\n    type: reporter\n    uses: [count]\n').replace('  out:\n    type: tallySink\n    inputs: [add]\n    uses: [count]', '  out:\n    type: tallySink\n    inputs: [add]\n    uses: [count]\n'));
  // rep uses count, written after it: count starts first.
  if (!ordered.ok) throw new Error(ordered.problems.map(formatProblem).join('\n'));
  assert.equal([...ordered.pipeline.services.keys()], ['count', 'rep']);
  const clash = problems(GOOD.replace('  count:\n', '  src:\n').replace(/uses: \[count\]/g, 'uses: [src]'));
  has(clash, 3, /service id 'src' is also a stage id/);
});

loading.run();

const running = suite('services: the runner');

running('starts services before their users, injects them, stops them after the stages, in reverse order', async () => {
  log.length = 0;
  const r = load(GOOD.replace('services:\n', 'services:\n  rep:\n    type: reporter\n    uses: [count]\n  web:\n    type: testServer\n'));
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const result = await runPipeline(r.pipeline);
  assert.is(result.status, 'completed');
  assert.equal(result.counterProblems, []);
  assert.equal(log, ['start count', 'start rep (tally seen)', 'start web', 'create add', 'sink sees seen=5', 'sink sees seen=10', 'teardown add', 'stop web', 'stop rep', 'stop count']);
});

running('an optional service left out gives undefined; listed, the same started service reaches every user', async () => {
  log.length = 0;
  const none = load('pipeline: m\nstages:\n  s: { type: maybeTally }\n  o: { type: tallySink, inputs: [s] }\n');
  if (!none.ok) throw new Error(none.problems.map(formatProblem).join('\n'));
  assert.is((await runPipeline(none.pipeline)).status, 'completed');
  const some = load('pipeline: m\nservices:\n  t: { type: tally, label: one }\nstages:\n  s: { type: maybeTally, uses: [t] }\n  c: { type: countInto, inputs: [s], uses: [t] }\n  o: { type: tallySink, inputs: [c], uses: [t] }\n');
  if (!some.ok) throw new Error(some.problems.map(formatProblem).join('\n'));
  assert.is((await runPipeline(some.pipeline)).status, 'completed');
  assert.equal(log, ['maybe none', 'start t', 'create c', 'maybe one', 'sink sees one=3', 'teardown c', 'stop t']);
});

running('a failing stage: the services still stop, after the stage teardown', async () => {
  log.length = 0;
  const r = load(GOOD.replace('    uses: [count]\n  out:', '    uses: [count]\n    fail: 1\n  out:'));
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const result = await runPipeline(r.pipeline);
  assert.is(result.status, 'failed');
  assert.match(String(result.error?.message), /stage 'add': count failing as asked/);
  assert.equal(log, ['start count', 'create add', 'teardown add', 'stop count']);
});

running('a service that fails to start fails the run naming it; those started before stop; no stage is created', async () => {
  log.length = 0;
  const r = load(GOOD.replace('services:\n', 'services:\n  web:\n    type: testServer\n').replace('    label: seen', '    label: seen\n    fail_start: 1'));
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const result = await runPipeline(r.pipeline);
  assert.is(result.status, 'failed');
  assert.match(String(result.error?.message), /stage 'count': tally cannot start, as asked/);
  assert.equal(log, ['start web', 'stop web']);
});

running('services alone run until aborted, then stop', async () => {
  log.length = 0;
  const r = load('pipeline: alone\nservices:\n  web:\n    type: testServer\n');
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const ac = new AbortController();
  const done = runPipeline(r.pipeline, { signal: ac.signal });
  await new Promise((res) => setTimeout(res, 20));
  assert.equal(log, ['start web']);
  ac.abort();
  const result = await done;
  assert.is(result.status, 'aborted');
  assert.ok(result.clean);
  assert.equal(log, ['start web', 'stop web']);
});

running('a service reports each line at the level it states; a failed stop is a warning', async () => {
  const r = load('pipeline: chat\nservices:\n  c:\n    type: chatty\n');
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  const lines: [string, string, LogLevel][] = [];
  const ac = new AbortController();
  const done = runPipeline(r.pipeline, { signal: ac.signal, onReport: (id, message, level) => lines.push([id, message, level]) });
  await new Promise((res) => setTimeout(res, 20));
  ac.abort();
  assert.is((await done).status, 'aborted');
  assert.equal(lines, [
    ['c', 'the first push failed, the retry went through', 'info'],
    ['c', 'serving without a password', 'warn'],
    ['c', 'stop failed: socket busy', 'warn'],
  ]);
});

running.run();
