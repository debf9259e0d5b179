/**
 * Issue #19 item 7, the multi-host test: a DMS, an SCC, two Storage Nodes, hd_sql and a client, each
 * in its own Linux network namespace, cabled by veth pairs to two bridges (the control-plane subnet
 * and the data-plane subnet: test/deploy/netns.ts). Every node is started as a container would be, by
 * deploy/image/hd-node.js from the reference's container variables alone (PLATFORM_NODE_NAME,
 * PLATFORM_DMS_URL, PLATFORM_BOOTSTRAP_TOKEN, PLATFORM_CA_CERT_PEM, PLATFORM_CONTROL_PLANE_SUBNET,
 * PLATFORM_DATA_PLANE_SUBNET), with HD_NODE_SOURCES=1, each in its own process group. hd_sql
 * (`hd-node sql`: `hd run pipelines/sql.yaml`) holds a DMS-issued `sqlServer` certificate (registered
 * as `hd up` registers it), takes its schemas from the DMS, reads straight from the SCC
 * (HD_SQL_SCC_TARGETS) with results over mutual TLS, and finds its result-listener address from
 * PLATFORM_DATA_PLANE_SUBNET. The client (test/deploy/multiHostClient.ts) ingests while sn2's cables
 * are pulled and plugged in again, asking hd_sql over the PostgreSQL wire for the counts before the
 * cut, while sn2 is cut off and after it caught up; every acknowledged batch is then on both Storage
 * Nodes, verify_hash clean, and an SDK query from the client's namespace (return address found from
 * PLATFORM_DATA_PLANE_SUBNET) reads them all. Skipped, loudly, where the machine forbids namespaces.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { verifySegment } from '../../engine-rs/index';
import type { NodeRole } from '../../control/dms/state';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { registerWithDms } from '../../net/registerWithDms';
import { waitForOutput, type HdProcess } from '../support/hdProcess';
import { buildTopology, netnsUnavailable, sweepStale, type Topology } from './netns';

const root = path.resolve(__dirname, '..', '..');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 40;
const BATCHES = 10;
/** Batches acknowledged before sn2's cables are pulled, and while they are out. */
const BEFORE_CUT = 3;
const WHILE_CUT = 3;
const PORT = { command: 6986, production: 6987, observability: 8080, grpc: 6990, pgwire: 5432, sqlReturn: 6989 };
/** hd_sql's node name at the DMS (its certificate's), on host `sql`. */
const SQL_NODE = 'hd-sql';
const schema = {
  id: 'mh',
  name: 'mh',
  record_size: 80,
  time_field: 'ts',
  time_index_interval: 60,
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'n', type: 'uint32', offset: 8, size: 4 },
  ],
};

const skip = netnsUnavailable();
if (skip) process.stderr.write(`\n*** SKIPPED test/deploy/multiHost.test.ts: ${skip} ***\n\n`);

interface NodeProc {
  readonly name: string;
  readonly proc: ChildProcess;
  /** Its exit code, or signal name. */
  readonly exited: Promise<number | string>;
  output: string;
}

let topo: Topology | undefined;
let dir = '';
const procs: NodeProc[] = [];
let admin: ClientTls;
let dmsUrl = '';

/** Runs `args` inside host `host`'s namespace, in a process group of its own. */
function inNs(host: string, args: readonly string[], env: Record<string, string>): NodeProc {
  const t = topo as Topology;
  const proc = spawn('ip', ['netns', 'exec', t.ns(host), ...args], { cwd: root, env: { ...process.env, ...env }, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<number | string>((r) => proc.once('exit', (code, signal) => r(code ?? signal ?? 'unknown')));
  const p: NodeProc = { name: host, proc, exited, output: '' };
  proc.stdout?.on('data', (d: Buffer) => (p.output += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (p.output += d.toString()));
  procs.push(p);
  return p;
}

/** `hd-node <role>` on host `host` with the container variables and `env`. */
function hdNode(host: string, role: string, env: Record<string, string>): NodeProc {
  const t = topo as Topology;
  return inNs(host, [process.execPath, 'deploy/image/hd-node.js', role], {
    HD_NODE_SOURCES: '1',
    HD_DATA_DIR: path.join(dir, host),
    PLATFORM_NODE_NAME: host,
    PLATFORM_CONTROL_PLANE_SUBNET: t.subnet.cp,
    PLATFORM_DATA_PLANE_SUBNET: t.subnet.dp,
    PLATFORM_KEY_BITS: '2048',
    ...env,
  });
}

/** Stops a process group: SIGTERM, SIGKILL after 10 s; resolves once its leader exited. */
async function stopGroup(p: NodeProc): Promise<void> {
  if (p.proc.exitCode !== null || p.proc.signalCode !== null || p.proc.pid === undefined) return;
  const gone = new Promise<void>((r) => p.proc.once('exit', () => r()));
  const kill = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-(p.proc.pid as number), sig);
    } catch {
      // already gone
    }
  };
  kill('SIGTERM');
  const t = setTimeout(() => kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(t);
  kill('SIGKILL');
}

/** `p` as test/support/hdProcess.ts's HdProcess, for {@link waitForOutput}. */
function asHdProcess(p: NodeProc): HdProcess {
  const kill9 = async (): Promise<number | string> => {
    try {
      process.kill(-(p.proc.pid as number), 'SIGKILL');
    } catch {
      // already gone
    }
    return p.exited;
  };
  return { proc: p.proc, output: () => p.output, exited: p.exited, stop: async () => (await stopGroup(p), p.exited), kill9 };
}

/** Resolves with `p`'s start-up line matching `pattern` (waitForOutput, given up early if `p` exits); fails showing its output. */
async function startupLine(p: NodeProc, pattern: RegExp, ms = 60_000): Promise<RegExpExecArray> {
  await Promise.race([waitForOutput(asHdProcess(p), pattern, ms), p.exited]);
  const m = pattern.exec(p.output);
  if (!m) assert.unreachable(`${p.name} printed no line matching ${String(pattern)}${p.proc.exitCode !== null ? ` (exited ${String(p.proc.exitCode)})` : ''}:\n${p.output.slice(-3000)}`);
  return m as RegExpExecArray;
}

/** Whether IPv4 `host` lies in `cidr`. */
function inSubnet(host: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const block = new net.BlockList();
  block.addSubnet(base as string, Number(bits), 'ipv4');
  return block.check(host, 'ipv4');
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves once `cond()` holds; fails naming `what` (and the node logs) after `ms`. */
async function until(what: string, cond: () => Promise<boolean>, ms = 45_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond().catch(() => false))) {
    if (Date.now() > deadline) assert.unreachable(`${what}; logs:\n${procs.map((p) => `--- ${p.name}\n${p.output.slice(-2000)}`).join('\n')}`);
    const dead = procs.find((p) => p.name !== 'client' && p.proc.exitCode !== null);
    if (dead) assert.unreachable(`${dead.name} exited (${String(dead.proc.exitCode)}) waiting for ${what}:\n${dead.output.slice(-3000)}`);
    await sleep(100);
  }
}

const dms = (method: 'GET' | 'POST' | 'PUT', route: string, body?: unknown): Promise<JsonAnswer> => requestJson(method, `${dmsUrl}${route}`, admin, body);
const http = async <T>(host: string, route: string): Promise<T> => (await (await fetch(`http://${(topo as Topology).address(host, 'dp')}:${PORT.observability}${route}`, { signal: AbortSignal.timeout(3000) })).json()) as T;
type Replicas = { replicas: { replicas: { name: string; state: string }[] } };
const replicaStates = async (): Promise<string> => ((await http<Replicas>('scc', '/health')).replicas.replicas.map((r) => `${r.name}:${r.state}`).sort().join(','));

async function token(name: string, role: NodeRole): Promise<string> {
  const r = await dms('POST', '/v1/bootstrap-tokens', { node_name: name, role });
  assert.ok(r.status < 300, JSON.stringify(r.body));
  return (r.body as { token: string }).token;
}

/** The client's environment: where the SCC is, the schema, its DMS-issued certificate. */
function clientEnv(): Record<string, string> {
  const t = topo as Topology;
  return {
    PLATFORM_DATA_PLANE_SUBNET: t.subnet.dp,
    MH_SCC: `${t.address('scc', 'dp')}:${PORT.production}`,
    MH_SCC_GRPC: `${t.address('scc', 'cp')}:${PORT.grpc}`,
    MH_SCHEMA: JSON.stringify(schema),
    MH_TLS: path.join(dir, 'client-tls.json'),
    MH_T0: String(T0),
    MH_PER_BATCH: String(PER_BATCH),
    MH_SQL: `${t.address('sql', 'dp')}:${PORT.pgwire}`,
    MH_SQL_PASSWORD_FILE: path.join(dir, 'sql-password'),
  };
}

/** hd_sql's start-up lines, once it printed them (setUp). */
let sqlStartup = '';

/**
 * hd_sql on host `sql`, as a container runs it (`hd-node sql`): the DMS-CA identity of node hd-sql
 * (role sqlServer) in files, registered as `hd up` registers it (up/controlPlane.ts); schemas from
 * the DMS; reads straight to the SCC's QueryDispatch; results over mutual TLS on the address found in
 * PLATFORM_DATA_PLANE_SUBNET; the PostgreSQL wire door on every interface, behind a password.
 */
async function startSql(): Promise<NodeProc> {
  const tp = topo as Topology;
  const reg = await registerWithDms({ dmsUrl, nodeName: SQL_NODE, role: 'sqlServer', caCertPem: admin.ca as string, credentials: { bootstrapToken: await token(SQL_NODE, 'sqlServer') }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  const files = { ca: path.join(dir, 'sql-ca.pem'), cert: path.join(dir, 'sql.crt'), key: path.join(dir, 'sql.key'), password: path.join(dir, 'sql-password') };
  writeFileSync(files.ca, admin.ca as string);
  writeFileSync(files.cert, reg.signed_cert_pem);
  writeFileSync(files.key, reg.client_key_pem, { mode: 0o600 });
  writeFileSync(files.password, `${randomBytes(12).toString('hex')}\n`, { mode: 0o600 });
  return hdNode('sql', 'sql', {
    PLATFORM_NODE_NAME: SQL_NODE,
    HD_DMS_ENDPOINT: dmsUrl,
    HD_DMS_CA_FILE: files.ca,
    HD_DMS_CLIENT_CERT_FILE: files.cert,
    HD_DMS_CLIENT_KEY_FILE: files.key,
    HD_SQL_SCC_TARGETS: `${tp.address('scc', 'cp')}:${PORT.production}:${PORT.grpc}`,
    HD_SQL_RESULT_TLS: 'true',
    // Not set: the address is discovered in PLATFORM_DATA_PLANE_SUBNET (hdNode sets it).
    PLATFORM_DATA_RETURN_HOST: '',
    PLATFORM_DATA_RETURN_PORT: String(PORT.sqlReturn),
    HD_SQL_PGWIRE_ADDRESS: `:${PORT.pgwire}`,
    HD_SQL_PGWIRE_PASSWORD_FILE: files.password,
    HD_SQL_HTTP_ENABLED: 'false',
    HD_SQL_FLIGHTSQL_ENABLED: 'false',
    HD_SQL_THREADS: '1',
    // A read that hangs fails the test in its time, not after the default 5 minutes.
    HD_SQL_QUERY_TIMEOUT_MS: '20000',
  });
}

const t = suite('multi-host: DMS, SCC, two Storage Nodes, hd_sql and a client in separate network namespaces');

t.before(async () => {
  if (skip) return;
  await setUp().catch((err: unknown) => {
    process.stderr.write(`multiHost setup failed: ${err instanceof Error ? err.message : String(err)}\n`);
    throw err;
  });
});

/** The hosts, the DMS with cluster c1 and the dataset, the nodes registered, the client's certificate. */
async function setUp(): Promise<void> {
  sweepStale();
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-multihost-'));
  topo = buildTopology([
    { name: 'dms', planes: ['cp'] },
    { name: 'scc', planes: ['cp', 'dp'] },
    { name: 'sn1', planes: ['cp', 'dp'] },
    { name: 'sn2', planes: ['cp', 'dp'] },
    { name: 'sql', planes: ['cp', 'dp'] },
    { name: 'client', planes: ['cp', 'dp'] },
  ]);
  const cp = topo.address('dms', 'cp');
  dmsUrl = `https://${cp}:${PORT.command}`;
  hdNode('dms', 'dms', { DMS_MIN_KEY_BITS: '2048', DMS_CA_KEY_BITS: '2048', DMS_CONFIG_POLL_MS: '300' });
  const dmsDir = path.join(dir, 'dms', 'dms');
  await until('the DMS answers on its control-plane address', async () => {
    const ca = readFileSync(path.join(dmsDir, 'ca', 'ca.cert.pem'), 'utf8');
    admin = { ca, cert: readFileSync(path.join(dmsDir, 'admin', 'admin.cert.pem'), 'utf8'), key: readFileSync(path.join(dmsDir, 'admin', 'admin.key.pem'), 'utf8') };
    return (await dms('GET', '/v1/datasets')).status === 200;
  });
  assert.is((await dms('PUT', '/v1/clusters/c1', { primary: true })).status, 200);
  assert.is((await dms('PUT', `/v1/datasets/${schema.id}`, { schema })).status, 200);
  // Registered nodes need nothing but the container variables (and the cluster they join).
  const node = async (name: string, role: NodeRole): Promise<Record<string, string>> => ({
    PLATFORM_DMS_URL: dmsUrl,
    PLATFORM_BOOTSTRAP_TOKEN: await token(name, role),
    PLATFORM_CA_CERT_PEM: admin.ca as string,
    PLATFORM_CLUSTER: 'c1',
  });
  hdNode('sn1', 'storage-node', await node('sn1', 'storageNode'));
  hdNode('sn2', 'storage-node', await node('sn2', 'storageNode'));
  // hd_sql in direct SCC mode dispatches with its sqlServer certificate, the SDK client with its client one.
  hdNode('scc', 'scc', { ...(await node('scc', 'scc')), QUERY_GRPC_ROLES: 'proxy,client,sqlServer', ACK_TIMEOUT_MS: '2000' });
  const sql = await startSql();
  // The client's certificate (role client), issued by the DMS as any registration.
  assert.ok((await dms('PUT', '/v1/nodes/client', { role: 'client', addresses: { control: { host: topo.address('client', 'cp'), port: 1 } } })).status < 300);
  const reg = await registerWithDms({ dmsUrl, nodeName: 'client', role: 'client', caCertPem: admin.ca as string, credentials: { bootstrapToken: await token('client', 'client') }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  writeFileSync(path.join(dir, 'client-tls.json'), JSON.stringify({ ca: admin.ca, cert: reg.signed_cert_pem, key: reg.client_key_pem }));
  await until('the SCC reports sn1 and sn2 healthy', async () => (await replicaStates()) === 'sn1:healthy,sn2:healthy');
  // Its last start-up line follows every bind it describes.
  await startupLine(sql, /\/health and \/metrics on \S+/);
  sqlStartup = sql.output;
}

t.after(async () => {
  for (const p of [...procs].reverse()) await stopGroup(p);
  topo?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

t('every node took its addresses from the subnets: the DMS lists them on their data-plane addresses', async () => {
  if (skip) return;
  const tp = topo as Topology;
  const health = await http<{ settings?: { record_size?: unknown } }>('sn1', '/health');
  assert.ok(health, 'sn1 answers on its data-plane address');
  type Member = { name: string; addresses?: { production?: { host: string } } };
  const topology = (await dms('GET', '/v1/topology')).body as { clusters: { id: string; sccs: Member[]; storage_nodes: Member[] }[] };
  const c1 = topology.clusters.find((c) => c.id === 'c1');
  const hosts = Object.fromEntries([...(c1?.sccs ?? []), ...(c1?.storage_nodes ?? [])].map((n) => [n.name, n.addresses?.production?.host]));
  assert.equal(hosts, { scc: tp.address('scc', 'dp'), sn1: tp.address('sn1', 'dp'), sn2: tp.address('sn2', 'dp') }, JSON.stringify(topology).slice(0, 800));
});

t('hd_sql found its result-listener address in PLATFORM_DATA_PLANE_SUBNET and took its schemas from the DMS', async () => {
  if (skip) return;
  const tp = topo as Topology;
  const ret = /results from the Storage Nodes arrive at (\S+):(\d+)/.exec(sqlStartup);
  assert.ok(ret, sqlStartup);
  const [, host, port] = ret as RegExpExecArray;
  assert.is(host, tp.address('sql', 'dp'), `the address chosen is sql's own on the data plane:\n${sqlStartup}`);
  assert.ok(inSubnet(host as string, tp.subnet.dp), `${host} is in PLATFORM_DATA_PLANE_SUBNET ${tp.subnet.dp}`);
  assert.is(Number(port), PORT.sqlReturn);
  assert.match(sqlStartup, `1 dataset(s) (mh) from the DMS at ${dmsUrl}`);
  assert.match(sqlStartup, `SCC ${tp.address('scc', 'cp')}:${PORT.production} (gRPC ${PORT.grpc}) (mutual TLS)`);
  type Health = { status: string; upstream?: { mode: string; targets: { address: string; reachable: boolean }[] }; schemas?: { datasets: string[] } };
  const health = await http<Health>('sql', '/health');
  assert.equal(health.schemas?.datasets, ['mh']);
  assert.equal(health.upstream?.targets, [{ address: `${tp.address('scc', 'cp')}:${PORT.grpc}`, reachable: true }], JSON.stringify(health));
  // Known to the DMS as a registered node, reporting its health there with its certificate. Its first
  // report may say degraded (sent at its start, maybe before the SCC listened; the next comes 10 s on).
  type Node = { name: string; role: string; mtls?: boolean; health?: { status: string; detail?: { upstream?: string } } };
  const sqlNode = async (): Promise<Node | undefined> => ((await dms('GET', '/v1/topology')).body as { nodes: Node[] }).nodes.find((n) => n.name === SQL_NODE);
  await until(`the DMS has ${SQL_NODE}'s health report`, async () => (await sqlNode())?.health !== undefined, 15_000);
  const n = await sqlNode();
  assert.equal([n?.role, n?.mtls], ['sqlServer', true], JSON.stringify(n));
  assert.match(n?.health?.detail?.upstream ?? '', `SCC ${tp.address('scc', 'cp')}:${PORT.production}`, JSON.stringify(n));
});

t("ingest across hosts with sn2's cables pulled and plugged in again: no acknowledged batch lost, hd_sql counts right throughout", async () => {
  if (skip) return;
  const tp = topo as Topology;
  const client = inNs('client', [process.execPath, '-r', 'tsx/cjs', 'test/deploy/multiHostClient.ts', 'ingest', '0', String(BATCHES)], clientEnv());
  // An SQL client of hd_sql, from the client's host: one round of statements per line it is sent.
  const sqlClient = inNs('client', [process.execPath, '-r', 'tsx/cjs', 'test/deploy/multiHostClient.ts', 'sql'], clientEnv());
  const sqlLines = readline.createInterface({ input: sqlClient.proc.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  /** hd_sql's answers now: every record of the window, those with n >= 30, those with n = 7. */
  const sqlCounts = async (batches: number, when: string): Promise<void> => {
    sqlClient.proc.stdin?.write('count\n');
    const line = await sqlLines.next();
    const r = (line.done ? { error: `the SQL client ended:\n${sqlClient.output}` } : JSON.parse(line.value as string)) as Record<string, unknown>;
    assert.equal(r, { all: batches * PER_BATCH, some: batches * 10, sevens: batches, allSeven: true }, `hd_sql over the PostgreSQL wire ${when}`);
  };
  const lines = readline.createInterface({ input: client.proc.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const acked: string[] = [];
  let cut = false;
  for (let b = 0; b < BATCHES; b++) {
    const line = await lines.next();
    const r = (line.done ? { failed: b, error: `client ended:\n${client.output}` } : JSON.parse(line.value as string)) as { acked?: string; failed?: number; error?: string };
    assert.ok(r.acked, `batch ${b} was not acknowledged: ${r.error ?? ''}`);
    acked.push(r.acked as string);
    if (b === BEFORE_CUT - 1) {
      await sqlCounts(BEFORE_CUT, 'before the cut');
      tp.cut('sn2');
      cut = true;
    }
    if (b === BEFORE_CUT + WHILE_CUT - 1) {
      // Acknowledged while sn2 was cut off: by sn1 alone, with sn2 down on the SCC.
      assert.match(await replicaStates(), /sn1:healthy,sn2:(down|catching-up)/);
      await sqlCounts(BEFORE_CUT + WHILE_CUT, 'with sn2 cut off');
      tp.restore('sn2');
      cut = false;
    }
    client.proc.stdin?.write('next\n');
  }
  assert.not.ok(cut);
  assert.is(acked.length, BATCHES);
  await until('sn2 caught up and healthy again', async () => (await replicaStates()) === 'sn1:healthy,sn2:healthy');
  await sqlCounts(BATCHES, 'after sn2 was plugged in again and caught up');
  sqlClient.proc.stdin?.end();
  for (const sn of ['sn1', 'sn2']) {
    const listed = (await http<{ batches: { batch_id: string; path: string }[] }>(sn, `/v1/batches?dataset=${schema.id}`)).batches;
    assert.equal(listed.map((e) => e.batch_id).sort(), [...acked].sort(), `${sn} holds every acknowledged batch`);
    for (const e of listed) {
      const v = await verifySegment(e.path);
      assert.ok(v.ok, `${sn} ${e.path}: ${JSON.stringify(v)}`);
      if (v.ok) assert.is(v.records, PER_BATCH, `${sn} ${e.batch_id}`);
    }
  }
});

t('a query from the client host reads every batch, its return address found from PLATFORM_DATA_PLANE_SUBNET', async () => {
  if (skip) return;
  const tp = topo as Topology;
  const q = inNs('client', [process.execPath, '-r', 'tsx/cjs', 'test/deploy/multiHostClient.ts', 'query'], clientEnv());
  const code = await new Promise<number | null>((r) => q.proc.once('exit', (c) => r(c)));
  assert.is(code, 0, q.output);
  const r = JSON.parse(q.output.trim().split('\n').pop() as string) as { returnHost: string; all: number; some: number };
  assert.equal(r, { returnHost: tp.address('client', 'dp'), all: BATCHES * PER_BATCH, some: BATCHES * 10 });
});

t.run();
