/**
 * The `hd up`, `hd status` and `hd down` commands (the platform on one machine; up/platform.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { alive, platformStatus, readUpState, runUp } from '../up/platform';
import { parseTraceOption } from '../up/traceOption';
import type { CliIo, Command } from './command';

const DATA_DIR_HELP = '  --data-dir <dir>  where the platform keeps its data, state and logs (default ./.hd)';

function dataDir(values: Record<string, string | boolean | undefined>): string {
  return path.resolve(typeof values['data-dir'] === 'string' ? values['data-dir'] : '.hd');
}

/** `hd up`. */
export const upCommand: Command = {
  usage: 'hd up [--data-dir <dir>] [--demo default|small|none] [--ingest <file.ndjson> --schema <schema.json>] [--trace <otlp-grpc-url>]',
  summary: 'run the whole platform on this machine, with demo data',
  help: [
    'Starts every node (the DMS with its CA, the Proxy, an SCC, two Storage Nodes, the SQL server) as',
    "its own process, in its own process group, on its own loopback address (127.0.x.y), so each keeps",
    "the reference's standard ports; declares the topology, the dataset schemas and (first start only)",
    'an allow-all policy to the DMS; prints where to connect as soon as the nodes answer, then loads the',
    'demo datasets in the background with a progress bar (queries see each batch as it lands). The demo',
    'is the same on every start of a data directory: a first start interrupted at any point (Ctrl-C, a',
    'kill) resumes on the next, sending only the batches that had not landed; once complete it is not',
    'loaded again. Runs until Ctrl-C or `hd down`, which stop the nodes in order. A node that crashes is',
    'restarted and the restart is logged. A fatal error ends it with a non-zero status, one line saying',
    "why and the log to read (a node's, or <data-dir>/logs/up.log). The DMS administrator credential is",
    '<data-dir>/dms/admin/.',
    '',
    'Options:',
    DATA_DIR_HELP,
    '  --demo <which>    default: network flows (2M records) and chess games; small; none',
    '  --ingest <file>   also ingest this NDJSON file (with --schema, its dataset schema JSON)',
    '  --schema <file>   the dataset schema of --ingest',
    '  --net <a.b>       first two octets of the loopback addresses (default 127.0)',
    '  --trace <url>     start every node with OTEL_GRPC_URL=<url> (grpc://host:4317): traces and metrics go to that collector',
    '  -h, --help        this help',
  ].join('\n'),
  positionals: 0,
  options: { 'data-dir': { type: 'string' }, demo: { type: 'string' }, ingest: { type: 'string' }, schema: { type: 'string' }, net: { type: 'string' }, trace: { type: 'string' } },
  async run(_positionals, values, io) {
    const demo = (values.demo as string | undefined) ?? 'default';
    if (demo !== 'default' && demo !== 'small' && demo !== 'none') {
      io.stderr.write(`hd up: --demo takes default, small or none, got "${demo}"\n`);
      return 2;
    }
    const ingest = values.ingest as string | undefined;
    const schema = values.schema as string | undefined;
    if ((ingest === undefined) !== (schema === undefined)) {
      io.stderr.write('hd up: --ingest and --schema go together (the file and its dataset schema)\n');
      return 2;
    }
    for (const [flag, file] of [['--ingest', ingest], ['--schema', schema]] as const) {
      if (file !== undefined && !existsSync(file)) {
        io.stderr.write(`hd up: ${flag} ${file}: no such file\n`);
        return 2;
      }
    }
    const trace = typeof values.trace === 'string' ? parseTraceOption(values.trace) : undefined;
    if (trace && 'error' in trace) {
      io.stderr.write(`hd up: ${trace.error}\n`);
      return 2;
    }
    return runUp({
      dataDir: dataDir(values),
      ...(trace && { trace: trace.url }),
      demo,
      ...(typeof values.net === 'string' ? { net: values.net } : {}),
      ...(ingest && schema ? { ingest: { file: ingest, schema } } : {}),
      out: io.stdout,
      err: io.stderr,
    });
  },
};

/** `hd status`. */
export const statusCommand: Command = {
  usage: 'hd status [--data-dir <dir>]',
  summary: 'show the nodes of the platform `hd up` runs, and their health',
  help: ['Reads the state `hd up` keeps in the data directory and asks each node for /health.', '', 'Options:', DATA_DIR_HELP, '  -h, --help        this help'].join('\n'),
  positionals: 0,
  options: { 'data-dir': { type: 'string' } },
  async run(_positionals, values, io: CliIo) {
    const state = readUpState(dataDir(values));
    if (!state || !alive(state.pid)) {
      io.stderr.write(`hd status: no platform is running from ${dataDir(values)}; start one with 'hd up'\n`);
      return 1;
    }
    const rows = await platformStatus(state);
    const w = Math.max(...rows.map((r) => r.address.length));
    io.stdout.write(`hd up (pid ${state.pid}) since ${state.startedAt}, data in ${state.dataDir}\n`);
    for (const r of rows) io.stdout.write(`  ${r.name.padEnd(5)} ${r.role.padEnd(13)} ${r.address.padEnd(w)}  ${r.health}\n`);
    return rows.every((r) => r.health === 'ok') ? 0 : 1;
  },
};

/** `hd down`. */
export const downCommand: Command = {
  usage: 'hd down [--data-dir <dir>]',
  summary: 'stop the platform `hd up` runs',
  help: ['Asks the `hd up` process to stop (SIGTERM) and waits until every node has exited.', '', 'Options:', DATA_DIR_HELP, '  -h, --help        this help'].join('\n'),
  positionals: 0,
  options: { 'data-dir': { type: 'string' } },
  async run(_positionals, values, io) {
    const state = readUpState(dataDir(values));
    if (!state || !alive(state.pid)) {
      io.stderr.write(`hd down: no platform is running from ${dataDir(values)}\n`);
      return 1;
    }
    process.kill(state.pid, 'SIGTERM');
    const deadline = Date.now() + 30_000;
    while (alive(state.pid)) {
      if (Date.now() > deadline) {
        io.stderr.write(`hd down: pid ${state.pid} still running after 30 s\n`);
        return 1;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    io.stdout.write(`hd down: stopped (pid ${state.pid})\n`);
    return 0;
  },
};
