/**
 * The `hd` command. `bin/hd.js` calls {@link main} from dist/. Commands: `run`, `validate`.
 * Exit codes: 0 success, or stopped in order by SIGINT / SIGTERM (sources stopped, stages drained
 * and torn down within 10 s); 1 the pipeline is invalid, its run failed, or a stop had to cut the
 * teardown short; 2 a usage error. A second SIGINT / SIGTERM during a stop ends the process at once.
 */
import { MAX_SERVICE_LINES_PER_MINUTE, ServiceLineBudget } from '../lib/logging/serviceLineBudget';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { Progress } from '../lib/progress';
import { builtinRegistry } from '../roles/builtins';
import { formatProblem, loadPipelineFile, type LoadResult } from '../pipelines/load';
import { DEFAULT_STOP_TIMEOUT_MS, runPipeline } from '../pipelines/run';
import { startNodeRuntime } from '../pipelines/runtime';
import { formatCounters } from '../pipelines/summary';
import { startTracing } from '../lib/tracing/tracingSetup';
import { EXIT, type CliIo, type Command } from './command';
import { downCommand, statusCommand, upCommand } from './upCommands';

export { EXIT, type CliIo } from './command';

const COMMANDS: Record<string, Command> = {
  run: {
    usage: 'hd run <pipeline.yaml> [--config <file>] [--quiet]',
    summary: 'run a pipeline until its sinks complete',
    help: [
      'Loads and checks the pipeline file, then runs it until every sink has completed.',
      'Shows a progress bar when stderr is a terminal (summary lines otherwise) and prints each',
      "stage's counters at the end. Ctrl-C (SIGINT) or SIGTERM stops it in order: sources stop,",
      'the stages finish what they hold and close (at most 10 s), then it exits 0. A second',
      'signal ends it at once.',
      '',
      'Options:',
      '  --config <file>  YAML or JSON map NAME: value; wins over the environment and the file\'s',
      '                   settings for ${NAME} references; ${CONFIG_FILE} is the file\'s path',
      '  -q, --quiet      no progress and no counter table (problems are still printed)',
      '  -h, --help       this help',
    ].join('\n'),
    options: { config: { type: 'string' }, quiet: { type: 'boolean', short: 'q' } },
    run: cmdRun,
  },
  validate: {
    usage: 'hd validate <pipeline.yaml> [--config <file>]',
    summary: 'check a pipeline file and report every problem with its line',
    help: [
      'Checks YAML syntax, stage types and settings, inputs, cycles and the element types of',
      'connected stages, and prints every problem as file:line:column: message.',
      '',
      'Options:',
      '  --config <file>  YAML map NAME: value used for ${NAME} references',
      '  -h, --help       this help',
    ].join('\n'),
    options: { config: { type: 'string' } },
    run: cmdValidate,
  },
  up: upCommand,
  status: statusCommand,
  down: downCommand,
};

/** The top-level help. */
export function topHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(([n, c]) => `  ${n.padEnd(width)}  ${c.summary}`);
  return [
    'hd — the Hyperscale Dataset Store',
    '',
    'Usage: hd <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Options:',
    '  -h, --help     this help; hd <command> --help for a command',
    '  -v, --version  print the version',
    '',
  ].join('\n');
}

function commandHelp(name: string): string {
  const c = COMMANDS[name];
  return `Usage: ${c.usage}\n\n${c.summary[0].toUpperCase()}${c.summary.slice(1)}.\n\n${c.help}\n`;
}

/** The package version, from the package.json above this file (source tree or dist/). */
function version(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'hdstore') return pkg.version ?? 'unknown';
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/** Runs `hd` with `argv` (without node and the script); resolves to the exit status. */
export async function main(argv: string[], io: CliIo = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    if (first === 'help' && rest[0] && COMMANDS[rest[0]]) io.stdout.write(commandHelp(rest[0]));
    else io.stdout.write(topHelp());
    return first === undefined ? EXIT.usage : EXIT.ok;
  }
  if (first === '-v' || first === '--version') {
    io.stdout.write(`hd ${version()}\n`);
    return EXIT.ok;
  }
  const cmd = Object.prototype.hasOwnProperty.call(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (!cmd) {
    io.stderr.write(`hd: unknown command '${first}'\n\n${topHelp()}`);
    return EXIT.usage;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...cmd.options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  } catch (err) {
    io.stderr.write(`hd ${first}: ${err instanceof Error ? err.message : String(err)}\n\n${commandHelp(first)}`);
    return EXIT.usage;
  }
  if (parsed.values.help) {
    io.stdout.write(commandHelp(first));
    return EXIT.ok;
  }
  const wanted = cmd.positionals ?? 1;
  if (parsed.positionals.length !== wanted) {
    const what = wanted === 1 ? 'one pipeline file' : 'no arguments';
    io.stderr.write(`hd ${first}: expected ${what}, got ${parsed.positionals.length}\n\n${commandHelp(first)}`);
    return EXIT.usage;
  }
  return cmd.run(parsed.positionals, parsed.values as Record<string, string | boolean | undefined>, io);
}

/**
 * Reads `--config`: a YAML (or JSON) map. Scalars become `${NAME}` values; lists and maps (a
 * Storage Node's `storage_devices`) become their JSON text; null is refused. The file's absolute
 * path is `${CONFIG_FILE}` unless the file sets that name, so a stage can read the whole file
 * (the Storage Node's `segmentStore` takes `config: ${CONFIG_FILE}`).
 */
async function readConfig(file: string | undefined): Promise<{ ok: true; values: Record<string, string> } | { ok: false; message: string }> {
  if (file === undefined) return { ok: true, values: {} };
  let doc: unknown;
  try {
    doc = parseYaml(await readFile(file, 'utf8'));
  } catch (err) {
    return { ok: false, message: `${file}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` };
  }
  if (doc === null || doc === undefined) return { ok: true, values: {} };
  if (typeof doc !== 'object' || Array.isArray(doc)) return { ok: false, message: `${file}: a config file is a map of NAME: value` };
  const values: Record<string, string> = { CONFIG_FILE: path.resolve(file) };
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    if (v === null) return { ok: false, message: `${file}: ${k} takes a string, number, boolean, list or map, got null` };
    values[k] = typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  return { ok: true, values };
}

async function load(file: string, configFile: string | undefined, io: CliIo): Promise<LoadResult | undefined> {
  const config = await readConfig(configFile);
  if (!config.ok) {
    io.stderr.write(`hd: --config ${config.message}\n`);
    return undefined;
  }
  return loadPipelineFile(file, { registry: io.registry ?? builtinRegistry(), env: io.env, overrides: config.values });
}

async function cmdValidate(positionals: string[], values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  const file = positionals[0];
  const r = await load(file, values.config as string | undefined, io);
  if (!r) return EXIT.failed;
  if (!r.ok) {
    for (const p of r.problems) io.stderr.write(`${formatProblem(p)}\n`);
    io.stderr.write(`${file}: ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}\n`);
    return EXIT.failed;
  }
  const stages = [...r.pipeline.stages.values()];
  const count = (k: string): number => stages.filter((s) => s.type.kind === k).length;
  const services = [...r.pipeline.services.values()].map((s) => `${s.id} (${s.type.name})`);
  const withServices = services.length > 0 ? ` and ${services.length} service${services.length === 1 ? '' : 's'}: ${services.join(', ')}` : '';
  io.stdout.write(`${file}: ok, pipeline '${r.pipeline.name}' with ${stages.length} stages (${count('source')} sources, ${count('operator')} operators, ${count('sink')} sinks)${withServices}\n`);
  return EXIT.ok;
}

async function cmdRun(positionals: string[], values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  const file = positionals[0];
  const quiet = values.quiet === true;
  const r = await load(file, values.config as string | undefined, io);
  if (!r) return EXIT.failed;
  if (!r.ok) {
    for (const p of r.problems) io.stderr.write(`${formatProblem(p)}\n`);
    return EXIT.failed;
  }
  const pipeline = r.pipeline;
  // Logging (LOG_LEVEL, LOG_FORMAT), error tracking and OTLP metrics: docs/observability.md.
  const runtime = startNodeRuntime(pipeline, io.env, io.stderr);
  // Traces to OTEL_GRPC_URL (none when unset), flushed when this function returns: docs/observability.md, "Traces".
  await using _tracing = startTracing({ service: `hd-${pipeline.name}`, env: io.env });
  const abort = new AbortController();
  let signal: NodeJS.Signals | undefined;
  const onSignal = (s: NodeJS.Signals): void => {
    signal = s;
    // A second SIGINT / SIGTERM meets Node's default handling and ends the process at once.
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    runtime.logger.info(`hd: ${s}: stopping (sources stop, stages finish and close; a second signal ends at once)`);
    abort.abort();
  };
  if (io.handleSignals !== false) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  const progress = quiet || !runtime.plainOutput ? undefined : new Progress({ stream: io.stderr, label: pipeline.name });
  progress?.start();
  // Data problems (malformed lines) are printed, a bounded number per stage, so a bad file cannot flood
  // the terminal. A service (an SCC, a Storage Node) reports events for as long as it runs: bounded per
  // minute instead, so a long-running node never goes quiet about replicas or queries.
  const reported = new Map<string, number>();
  const MAX_REPORTS = 20;
  const serviceLines = new ServiceLineBudget(MAX_SERVICE_LINES_PER_MINUTE, (id, suppressed) => runtime.logger.warn(`${pipeline.file}: service '${id}': ${suppressed} more line(s) in the last minute were not printed`));
  let result;
  try {
    result = await runPipeline(pipeline, {
      signal: abort.signal,
      progress,
      // Each line at the level its stage or service gave (docs/observability.md, "Logs").
      onReport: (id, message, level) => {
        if (pipeline.services.has(id)) {
          if (serviceLines.take(id)) runtime.logger.log(level, `${pipeline.file}: service '${id}': ${message}`);
          return;
        }
        const n = (reported.get(id) ?? 0) + 1;
        reported.set(id, n);
        if (n <= MAX_REPORTS) runtime.logger.log(level, `${pipeline.file}: stage '${id}': ${message}`);
        else if (n === MAX_REPORTS + 1) runtime.logger.warn(`${pipeline.file}: stage '${id}': more problems; see its counters`);
      },
    });
  } finally {
    progress?.stop();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  if (result.status === 'failed') runtime.fail(result.error);
  await runtime.stop();
  if (!quiet && runtime.plainOutput) io.stderr.write(formatCounters(pipeline, result.counters));
  else if (!quiet && pipeline.stages.size > 0) runtime.logger.info(formatCounters(pipeline, result.counters).trimEnd());
  if (!result.clean && result.status !== 'aborted') runtime.logger.error(`hd: ${pipeline.file}: the stages did not finish closing within ${DEFAULT_STOP_TIMEOUT_MS / 1000} s`);
  for (const p of result.counterProblems) runtime.logger.error(`hd: counter rule broken: ${p}`);
  switch (result.status) {
    case 'completed':
      return result.counterProblems.length > 0 ? EXIT.failed : EXIT.ok;
    case 'failed':
      runtime.logger.error(`hd: ${pipeline.file}: ${result.error?.message ?? 'failed'}`);
      return EXIT.failed;
    case 'aborted':
      if (!result.clean) {
        runtime.logger.error(`hd: ${pipeline.file}: stopped by ${signal ?? 'abort'}, but the stages did not finish closing within ${DEFAULT_STOP_TIMEOUT_MS / 1000} s; cut off`);
        return EXIT.failed;
      }
      runtime.logger.info(`hd: ${pipeline.file}: stopped by ${signal ?? 'abort'}`);
      return EXIT.ok;
  }
}

