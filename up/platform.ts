/**
 * `hd up`, `hd status`, `hd down`: the whole platform on one machine, its state file and its
 * health. The command wiring is in bin/upCommands.ts.
 *
 * `hd up` starts the nodes (each in its own process group: up/supervisor.ts), prints where to
 * connect as soon as they answer, then loads the demo data in the background (up/demoLoad.ts),
 * resuming what an interrupted start left. Ctrl-C or SIGTERM stops the load and the nodes, the
 * last started first. Any fatal error ends it with one line and the log to read (up/upError.ts).
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ProgressStream } from '../lib/progress';
import { DmsAdmin, declarePlatform, ensurePolicy, platformKeyBits, registerSqlServer } from './controlPlane';
import { DataLoad } from './demoLoad';
import { ensureIngressSecret } from './ingressSecret';
import { platformLayout, type PlatformLayout } from './layout';
import { DATA_DIR_ENV, forgetPids, recordPids, stopLeftovers } from './leftovers';
import { waitReady } from './nodeReady';
import { hdCommand, packageRoot } from './packageRoot';
import { portInUse } from './portsFree';
import { readyMessage } from './readyMessage';
import { tracedNodes, traceReadyLines } from './traceOption';
import { ensureSqlPassword } from './sqlPassword';
import { Supervisor, type NodeSpec } from './supervisor';
import { fatalLine, UpError } from './upError';

/** Options of {@link runUp}. */
export interface UpOptions {
  readonly dataDir: string;
  /** `default` (flows + chess), `small` (a quick one for tests) or `none`. */
  readonly demo: 'default' | 'small' | 'none';
  readonly net?: string;
  /** `--trace`: every node's OTEL_GRPC_URL (up/traceOption.ts). */
  readonly trace?: string;
  /** Your own NDJSON file and its schema, ingested on start. */
  readonly ingest?: { readonly file: string; readonly schema: string };
  readonly out: { write(s: string): unknown };
  readonly err: ProgressStream;
  /** Resolves when the platform should stop; default: Ctrl-C (SIGINT) or SIGTERM. */
  readonly until?: Promise<unknown>;
  /** Called once every node answers (the data may still be loading). */
  onReady?(state: UpState): void;
}

/** What `hd up` writes to `<data-dir>/up.json` for `hd status` and `hd down`. */
export interface UpState {
  readonly pid: number;
  readonly startedAt: string;
  readonly dataDir: string;
  readonly nodes: readonly { readonly name: string; readonly role: string; readonly host: string; readonly port: number; readonly healthUrl: string; readonly log: string }[];
  readonly scc: PlatformLayout['scc'];
  readonly sql: PlatformLayout['sql'];
  /** The DMS and the files to administer it with (CA, administrator certificate and key). */
  readonly dms: { readonly url: string; readonly caCert: string; readonly adminCert: string; readonly adminKey: string };
  /** The HD Proxy. */
  readonly proxy: { readonly url: string };
  /** Where hd_sql sends its reads. */
  readonly sqlUpstream: 'proxy' | 'scc';
}

const STATE = 'up.json';
/**
 * Where hd_sql sends its reads: `proxy` (HD_PROXY_ENDPOINT, schemas from the DMS with the
 * certificate hd up has it issue) or `scc` (direct SCC mode over the schema directory).
 */
const SQL_UPSTREAM: 'proxy' | 'scc' = 'proxy';
/** How long a node may take to come up. */
const READY_MS = 60_000;

/** Reads `<dataDir>/up.json`, or undefined when no platform was started there. */
export function readUpState(dataDir: string): UpState | undefined {
  const file = path.join(dataDir, STATE);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as UpState;
}

/** Whether process `pid` is alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `<dataDir>/logs/up.log`: hd up's own messages, and the details of a fatal error. */
export function upLogFile(dataDir: string): string {
  return path.join(dataDir, 'logs', 'up.log');
}

/** Resolves on the first SIGINT or SIGTERM; later ones only say it is stopping already. */
function stopSignals(err: ProgressStream): { readonly signalled: Promise<unknown>; dispose(): void } {
  let count = 0;
  let resolve!: (v: unknown) => void;
  const signalled = new Promise((r) => (resolve = r));
  const on = (sig: NodeJS.Signals): void => {
    if (count++ === 0) resolve(sig);
    else err.write(`hd up: ${sig}: already stopping the nodes (each gets up to 10 s)\n`);
  };
  process.on('SIGINT', on);
  process.on('SIGTERM', on);
  return {
    signalled,
    dispose() {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
    },
  };
}

/** Starts the platform, loads the data in the background, and runs until `until` resolves or a fatal error. */
export async function runUp(opts: UpOptions): Promise<number> {
  const dataDir = path.resolve(opts.dataDir);
  mkdirSync(path.join(dataDir, 'logs'), { recursive: true });
  const upLog = upLogFile(dataDir);
  const say = (line: string): void => {
    opts.err.write(`${line}\n`);
    appendFileSync(upLog, `${new Date().toISOString()} ${line}\n`);
  };
  const previous = readUpState(dataDir);
  if (previous && previous.pid !== process.pid && alive(previous.pid)) {
    opts.err.write(`hd up: a platform is already running from ${dataDir} (pid ${previous.pid}); 'hd status' shows it, 'hd down' stops it\n`);
    return 1;
  }
  let keyBits: number;
  try {
    keyBits = platformKeyBits();
  } catch (err) {
    opts.err.write(`hd up: ${(err as Error).message}\n`);
    return 2;
  }
  const signals = opts.until ? undefined : stopSignals(opts.err);
  const stop = new AbortController();
  void (opts.until ?? signals?.signalled)?.then(() => stop.abort(new Error('stopped')));
  let sup: Supervisor | undefined;
  let load: Promise<unknown> | undefined;
  try {
    // An earlier hd up that was killed leaves its nodes running (their own process groups).
    const left = await stopLeftovers(dataDir);
    if (left.length > 0) say(`hd up: stopped ${left.join(', ')}, left running by an earlier 'hd up' of ${dataDir}`);
    const planned = platformLayout({ dataDir, sqlUpstream: SQL_UPSTREAM, ...(opts.net ? { net: opts.net } : {}), ...(opts.ingest ? { schemaFiles: [opts.ingest.schema] } : {}) });
    const layout = opts.trace ? { ...planned, nodes: tracedNodes(planned.nodes, opts.trace) } : planned;
    let taken = await portInUse(layout.nodes);
    // Nodes just stopped may still be releasing their sockets (the kernel tears a killed process
    // group down member by member): their ports get a few seconds to come free.
    for (const until = Date.now() + 5000; taken && left.length > 0 && Date.now() < until; taken = await portInUse(layout.nodes)) {
      await new Promise((r) => setTimeout(r, 100));
    }
    if (taken) throw new Error(taken);
    // hd_sql's doors ask for a password, made on the first start (up/sqlPassword.ts).
    ensureSqlPassword(dataDir);
    const data = new DataLoad({ dataDir, demo: opts.demo, ...(opts.ingest ? { ingest: opts.ingest } : {}) });
    const started = new Supervisor(hdCommand(packageRoot()), packageRoot(), path.join(dataDir, 'logs'), (e) => {
      if (e.kind === 'crashed') say(`hd up: ${e.node} exited (${e.code}); restarting in ${e.restartInMs} ms — log: ${started.logFile(e.node)}`);
      if (e.kind === 'started') recordPids(dataDir, started.pids());
    });
    sup = started;
    const state = stateOf(dataDir, layout, started);
    writeFileSync(path.join(dataDir, STATE), `${JSON.stringify(state, null, 2)}\n`);
    say(`hd up: starting ${layout.nodes.length} nodes (data in ${dataDir}, logs in ${path.join(dataDir, 'logs')})`);
    const policy = await startNodes(layout, started, dataDir, keyBits, say, stop.signal);
    const loading = data.pending();
    const sdkDataset = sdkDatasetOf(data, opts, layout);
    opts.out.write(readyMessage(state, { loaded: data.done, loading }, policy, sdkDataset && { packageDir: packageRoot(), ...sdkDataset }));
    if (opts.trace) opts.out.write(traceReadyLines(opts.trace));
    opts.onReady?.(state);
    if (data.resuming()) say('hd up: an earlier start was interrupted while loading the demo; resuming it');
    else if (loading.length === 0 && data.done.length > 0) say(`hd up: data from an earlier start found in ${dataDir}; not ingesting again`);
    load = data.run({ scc: { host: layout.scc.host, port: layout.scc.port }, log: say, progressStream: opts.err, signal: stop.signal }).then(
      (all) => {
        if (loading.length > 0) say(`hd up: data loaded: ${all.map((s) => `${s.dataset} ${s.records.toLocaleString('en-US')} records in ${s.batches} batches`).join(', ')}`);
      },
      (err: unknown) => {
        throw new UpError(`loading the data failed: ${err instanceof Error ? err.message : String(err)}; what landed stays, and the next 'hd up' resumes the demo`, upLog);
      },
    );
    // Runs until stopped; a load that fails is fatal (the next start resumes it).
    await Promise.race([new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true })), load]);
    await new Promise((resolve) => (stop.signal.aborted ? resolve(undefined) : stop.signal.addEventListener('abort', resolve, { once: true })));
    say('hd up: stopping...');
    return 0;
  } catch (err) {
    if (stop.signal.aborted) {
      say('hd up: stopping...');
      return 0;
    }
    appendFileSync(upLog, `${new Date().toISOString()} fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    opts.err.write(fatalLine(err, upLog));
    return 1;
  } finally {
    stop.abort(new Error('stopped'));
    signals?.dispose();
    await load?.catch(() => undefined);
    await sup?.stopAll();
    forgetPids(dataDir);
    rmSync(path.join(dataDir, STATE), { force: true });
  }
}

/** The state file's content. */
function stateOf(dataDir: string, layout: PlatformLayout, sup: Supervisor): UpState {
  return {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    dataDir,
    nodes: layout.nodes.map((n) => ({ name: n.name, role: n.role, host: n.host, port: n.readyPort, healthUrl: n.healthUrl, log: sup.logFile(n.name) })),
    scc: layout.scc,
    sql: layout.sql,
    dms: { url: layout.dms.url, caCert: layout.dms.files.caCert, adminCert: layout.dms.files.adminCert, adminKey: layout.dms.files.adminKey },
    proxy: { url: layout.proxy.url },
    sqlUpstream: layout.sqlUpstream,
  };
}

/** The dataset the ready message's SDK example queries: the demo's flows, else the --ingest one. */
function sdkDatasetOf(data: DataLoad, opts: UpOptions, layout: PlatformLayout): { dataset: string; schemaFile: string } | undefined {
  const names = [...data.done.map((s) => s.dataset), ...data.pending().filter((l) => l.demo).map((l) => l.name)];
  if (names.includes('flows')) return { dataset: 'flows', schemaFile: path.join(layout.schemaDir, 'flows.json') };
  if (opts.ingest) {
    const id = (JSON.parse(readFileSync(opts.ingest.schema, 'utf8')) as { id?: string }).id;
    if (id) return { dataset: id, schemaFile: path.join(layout.schemaDir, `${id}.json`) };
  }
  return undefined;
}

/**
 * Starts the nodes in order and resolves with the DMS's policy once every one answers: the DMS
 * first (its CA and the administrator credential are made on its first start), then what every
 * node needs from it (the topology, the schemas, a policy); the Storage Nodes and the SCC register
 * (their links are mutual TLS), then the Proxy and hd_sql.
 */
async function startNodes(layout: PlatformLayout, sup: Supervisor, dataDir: string, keyBits: number, say: (line: string) => void, signal: AbortSignal): Promise<{ version: number; installed: boolean }> {
  // Set once the DMS is up; the Proxy and hd_sql get fresh credentials from it before every start.
  let admin: DmsAdmin | undefined;
  const dms = (): DmsAdmin => {
    if (!admin) throw new Error('the DMS is not up yet');
    return admin;
  };
  const nodes: NodeSpec[] = layout.nodes.map((plain) => {
    // The data directory in every node's environment marks it as ours (up/leftovers.ts).
    const n = { ...plain, env: { ...plain.env, [DATA_DIR_ENV]: dataDir } };
    // Bootstrap tokens are single-use: each start of the Proxy (a crash restart too) gets a new one.
    // Its ingress secret is made once per data directory (up/ingressSecret.ts).
    if (n.role === 'proxy') return { ...n, prepare: async () => (ensureIngressSecret(dataDir), { PLATFORM_BOOTSTRAP_TOKEN: await dms().bootstrapToken(layout.proxy.nodeName) }) };
    // The SCC and the Storage Nodes keep the certificate they got (a restart presents it); the token
    // is for a first start, or a state directory that was wiped.
    if (n.role === 'scc') return { ...n, prepare: async () => ({ PLATFORM_BOOTSTRAP_TOKEN: await dms().bootstrapToken(layout.sccName) }) };
    if (n.role === 'storage-node') return { ...n, prepare: async () => ({ PLATFORM_BOOTSTRAP_TOKEN: await dms().bootstrapToken(n.name) }) };
    if (n.role === 'sql' && layout.sqlUpstream === 'proxy') return { ...n, prepare: async () => (await registerSqlServer(dms(), dataDir, keyBits), {}) };
    return n;
  });
  const ready = (role: string): Promise<unknown> => Promise.all(nodes.filter((x) => x.role === role).map((x) => waitReady(x, sup, READY_MS, signal)));
  const startRole = (role: string): void => nodes.filter((x) => x.role === role).forEach((x) => sup.start(x));
  const step = async <T>(p: Promise<T>): Promise<T> => {
    signal.throwIfAborted();
    const v = await p;
    signal.throwIfAborted();
    return v;
  };
  startRole('dms');
  await ready('dms');
  admin = DmsAdmin.open(layout);
  const declared = await step(declarePlatform(admin, layout));
  const policy = await step(ensurePolicy(admin));
  say(`hd up: DMS ready: cluster c1 with ${layout.storageNodes.length} Storage Nodes, datasets ${declared.datasets.join(', ')}; policy version ${policy.version}${policy.installed ? ' (the default: allow everything)' : ''}`);
  startRole('storage-node');
  await ready('storage-node');
  startRole('scc');
  await ready('scc');
  startRole('proxy');
  startRole('sql');
  for (const n of nodes) await waitReady(n, sup, READY_MS, signal);
  return policy;
}

/** One row of `hd status`. */
export interface NodeStatus {
  readonly name: string;
  readonly role: string;
  readonly address: string;
  readonly health: string;
}

/** Asks every node of a running platform for its /health. */
export async function platformStatus(state: UpState): Promise<NodeStatus[]> {
  return Promise.all(
    state.nodes.map(async (n) => {
      let health: string;
      try {
        const r = await fetch(n.healthUrl, { signal: AbortSignal.timeout(2000) });
        const body = (await r.json()) as { status?: string };
        health = body.status ?? `HTTP ${r.status}`;
      } catch (err) {
        health = `unreachable (${err instanceof Error ? err.message : String(err)})`;
      }
      return { name: n.name, role: n.role, address: `${n.host}:${n.port}`, health };
    }),
  );
}
