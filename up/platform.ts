/**
 * `hd up`, `hd status`, `hd down`: the whole platform on one machine, its state file and its
 * health. The command wiring is in bin/upCommands.ts.
 */
import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Progress, type ProgressStream } from '../lib/progress';
import { checkReachable } from '../lib/reachability';
import { chessDataset, flowsDataset, type DemoDataset } from './demoData';
import { ingestNdjson, type IngestSummary } from './demoIngest';
import { DmsAdmin, declarePlatform, ensurePolicy, platformKeyBits, registerSqlServer } from './controlPlane';
import { ensureIngressSecret } from './ingressSecret';
import { platformLayout, type PlatformLayout } from './layout';
import { hdCommand, packageRoot } from './packageRoot';
import { readyMessage } from './readyMessage';
import { ensureSqlPassword } from './sqlPassword';
import { Supervisor, type NodeSpec } from './supervisor';

/** Options of {@link runUp}. */
export interface UpOptions {
  readonly dataDir: string;
  /** `default` (flows + chess), `small` (a quick one for tests) or `none`. */
  readonly demo: 'default' | 'small' | 'none';
  readonly net?: string;
  /** Your own NDJSON file and its schema, ingested on start. */
  readonly ingest?: { readonly file: string; readonly schema: string };
  readonly out: { write(s: string): unknown };
  readonly err: ProgressStream;
  /** Resolves when the platform should stop (Ctrl-C, SIGTERM); default: those signals. */
  readonly until?: Promise<unknown>;
  /** Called once everything is up and demo data is in (tests). */
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
const DEMO = 'demo.json';

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

/** The last lines of a node's log, for an error message. */
function logTail(file: string, lines = 8): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n');
  } catch {
    return '    (no log)';
  }
}

/** Whether the node's /health answers ok or degraded (its listeners are open once it does). */
async function healthAnswers(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    const status = ((await r.json()) as { status?: string }).status;
    return status === 'ok' || status === 'degraded';
  } catch {
    return false;
  }
}

async function waitReady(n: NodeSpec, sup: Supervisor, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (sup.exits(n.name) >= 3) throw new Error(`${n.name} keeps exiting while it starts; the end of ${sup.logFile(n.name)}:\n${logTail(sup.logFile(n.name))}`);
    // A Storage Node's ports take only the SCC's certificate: a bare probe there would show up in its
    // refused-handshake count, so it is asked over its /health instead.
    const ok = n.role === 'storage-node' ? await healthAnswers(n.healthUrl) : (await checkReachable(n.host, n.readyPort)) === undefined;
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${n.name} did not open ${n.host}:${n.readyPort} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function demoDatasets(demo: UpOptions['demo']): DemoDataset[] {
  if (demo === 'none') return [];
  if (demo === 'small') return [flowsDataset(20_000, 3600), chessDataset(10, 2, 3600)];
  return [flowsDataset(2_000_000), chessDataset(150, 20)];
}

/** Starts the platform, ingests demo data on the first start, and runs until `until` resolves. */
export async function runUp(opts: UpOptions): Promise<number> {
  const dataDir = path.resolve(opts.dataDir);
  mkdirSync(dataDir, { recursive: true });
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
  const layout = platformLayout({ dataDir, sqlUpstream: SQL_UPSTREAM, ...(opts.net ? { net: opts.net } : {}), ...(opts.ingest ? { schemaFiles: [opts.ingest.schema] } : {}) });
  // hd_sql's doors ask for a password, made on the first start (up/sqlPassword.ts).
  ensureSqlPassword(dataDir);
  // Set once the DMS is up; the Proxy and hd_sql get fresh credentials from it before every start.
  let admin: DmsAdmin | undefined;
  const dms = (): DmsAdmin => {
    if (!admin) throw new Error('the DMS is not up yet');
    return admin;
  };
  const nodes: NodeSpec[] = layout.nodes.map((n) => {
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
  const root = packageRoot();
  const sup = new Supervisor(hdCommand(root), root, path.join(dataDir, 'logs'), (e) => {
    if (e.kind === 'crashed') opts.err.write(`hd up: ${e.node} exited (${e.code}); restarting in ${e.restartInMs} ms — log: ${sup.logFile(e.node)}\n`);
  });
  const state: UpState = {
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
  writeFileSync(path.join(dataDir, STATE), `${JSON.stringify(state, null, 2)}\n`);
  const until = opts.until ?? new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  try {
    opts.err.write(`hd up: starting ${layout.nodes.length} nodes (data in ${dataDir}, logs in ${path.join(dataDir, 'logs')})\n`);
    const ready = (role: string): Promise<unknown> => Promise.all(nodes.filter((x) => x.role === role).map((x) => waitReady(x, sup, 60_000)));
    const startRole = (role: string): void => nodes.filter((x) => x.role === role).forEach((x) => sup.start(x));
    // The DMS first (its CA and the administrator credential are made on its first start), then
    // what every node needs from it: the topology, the schemas and a policy. The Storage Nodes and
    // the SCC register (their links are mutual TLS), then the Proxy and hd_sql.
    startRole('dms');
    await ready('dms');
    admin = DmsAdmin.open(layout);
    const declared = await declarePlatform(admin, layout);
    const policy = await ensurePolicy(admin);
    opts.err.write(`hd up: DMS ready: cluster c1 with ${layout.storageNodes.length} Storage Nodes, datasets ${declared.datasets.join(', ')}; policy version ${policy.version}${policy.installed ? ' (the default: allow everything)' : ''}\n`);
    startRole('storage-node');
    await ready('storage-node');
    startRole('scc');
    await ready('scc');
    startRole('proxy');
    startRole('sql');
    for (const n of nodes) await waitReady(n, sup, 60_000);
    const summaries = await ingestOnFirstStart(dataDir, layout, opts);
    opts.out.write(readyMessage(state, summaries, policy));
    opts.onReady?.(state);
    await until;
    opts.err.write('hd up: stopping...\n');
    return 0;
  } catch (err) {
    opts.err.write(`hd up: ${err instanceof Error ? err.message : String(err)}\nNode logs: ${path.join(dataDir, 'logs')}\n`);
    return 1;
  } finally {
    await sup.stopAll();
    rmSync(path.join(dataDir, STATE), { force: true });
  }
}

async function ingestOnFirstStart(dataDir: string, layout: PlatformLayout, opts: UpOptions): Promise<IngestSummary[]> {
  const marker = path.join(dataDir, DEMO);
  const done: IngestSummary[] = existsSync(marker) ? (JSON.parse(readFileSync(marker, 'utf8')) as IngestSummary[]) : [];
  const scc = { host: layout.scc.host, port: layout.scc.port };
  const endTime = Math.floor(Date.now() / 1000);
  const work: { name: string; schemaJson: string; blocks: Iterable<string> | AsyncIterable<string>; lagSec: number }[] = [];
  for (const d of demoDatasets(opts.demo)) {
    if (!done.some((s) => s.dataset === d.id)) work.push({ name: d.id, schemaJson: d.schemaJson, blocks: d.blocks(endTime), lagSec: d.id === 'chess' ? 600 : 0 });
  }
  if (opts.ingest) {
    const { file, schema } = opts.ingest;
    work.push({ name: path.basename(file), schemaJson: readFileSync(schema, 'utf8'), blocks: createReadStream(file, { encoding: 'utf8', highWaterMark: 4 << 20 }), lagSec: 3600 });
  }
  if (work.length === 0) {
    if (done.length > 0) opts.err.write(`hd up: data from an earlier start found in ${dataDir}; not ingesting again\n`);
    return done;
  }
  for (const w of work) {
    const progress = new Progress({ stream: opts.err, label: `ingest ${w.name}` });
    progress.start();
    let shown = 0;
    try {
      const s = await ingestNdjson(w.blocks, {
        scc,
        schemaJson: w.schemaJson,
        lagSec: w.lagSec,
        progress,
        onRejected: (line, reason) => {
          if (shown++ < 5) opts.err.write(`hd up: ${w.name} line ${line}: ${reason}\n`);
        },
      });
      done.push(s);
    } finally {
      progress.stop();
    }
    writeFileSync(marker, `${JSON.stringify(done, null, 2)}\n`);
  }
  return done;
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
