/**
 * Issue #19 item 7, the multi-host test: a DMS, an SCC, two Storage Nodes and a client, each in its
 * own Linux network namespace, cabled by veth pairs to two bridges (the control-plane subnet and the
 * data-plane subnet: test/deploy/netns.ts). Every node is started as a container would be, by
 * deploy/image/hd-node.js from the reference's container variables alone (PLATFORM_NODE_NAME,
 * PLATFORM_DMS_URL, PLATFORM_BOOTSTRAP_TOKEN, PLATFORM_CA_CERT_PEM, PLATFORM_CONTROL_PLANE_SUBNET,
 * PLATFORM_DATA_PLANE_SUBNET), with HD_NODE_SOURCES=1, each in its own process group. The client
 * (test/deploy/multiHostClient.ts) ingests while sn2's cables are pulled and plugged in again; every
 * acknowledged batch is then on both Storage Nodes, verify_hash clean, and a query from the client's
 * namespace (return address found from PLATFORM_DATA_PLANE_SUBNET) reads them all.
 * Skipped, loudly, where the machine forbids namespaces.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { verifySegment } from '../../engine-rs/index';
import type { NodeRole } from '../../control/dms/state';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { registerWithDms } from '../../net/registerWithDms';
import { buildTopology, netnsUnavailable, sweepStale, type Topology } from './netns';

const root = path.resolve(__dirname, '..', '..');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const PER_BATCH = 40;
const BATCHES = 10;
/** Batches acknowledged before sn2's cables are pulled, and while they are out. */
const BEFORE_CUT = 3;
const WHILE_CUT = 3;
const PORT = { command: 6986, production: 6987, observability: 8080, grpc: 6990 };
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
  const p: NodeProc = { name: host, proc, output: '' };
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
  };
}

const t = suite('multi-host: DMS, SCC, two Storage Nodes and a client in separate network namespaces');

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
  hdNode('scc', 'scc', { ...(await node('scc', 'scc')), QUERY_GRPC_ROLES: 'proxy,client', ACK_TIMEOUT_MS: '2000' });
  // The client's certificate (role client), issued by the DMS as any registration.
  assert.ok((await dms('PUT', '/v1/nodes/client', { role: 'client', addresses: { control: { host: topo.address('client', 'cp'), port: 1 } } })).status < 300);
  const reg = await registerWithDms({ dmsUrl, nodeName: 'client', role: 'client', caCertPem: admin.ca as string, credentials: { bootstrapToken: await token('client', 'client') }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  writeFileSync(path.join(dir, 'client-tls.json'), JSON.stringify({ ca: admin.ca, cert: reg.signed_cert_pem, key: reg.client_key_pem }));
  await until('the SCC reports sn1 and sn2 healthy', async () => (await replicaStates()) === 'sn1:healthy,sn2:healthy');
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

t("ingest across hosts with sn2's cables pulled and plugged in again: no acknowledged batch lost", async () => {
  if (skip) return;
  const tp = topo as Topology;
  const client = inNs('client', [process.execPath, '-r', 'tsx/cjs', 'test/deploy/multiHostClient.ts', 'ingest', '0', String(BATCHES)], clientEnv());
  const lines = readline.createInterface({ input: client.proc.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const acked: string[] = [];
  let cut = false;
  for (let b = 0; b < BATCHES; b++) {
    const line = await lines.next();
    const r = (line.done ? { failed: b, error: `client ended:\n${client.output}` } : JSON.parse(line.value as string)) as { acked?: string; failed?: number; error?: string };
    assert.ok(r.acked, `batch ${b} was not acknowledged: ${r.error ?? ''}`);
    acked.push(r.acked as string);
    if (b === BEFORE_CUT - 1) {
      tp.cut('sn2');
      cut = true;
    }
    if (b === BEFORE_CUT + WHILE_CUT - 1) {
      // Acknowledged while sn2 was cut off: by sn1 alone, with sn2 down on the SCC.
      assert.match(await replicaStates(), /sn1:healthy,sn2:(down|catching-up)/);
      tp.restore('sn2');
      cut = false;
    }
    client.proc.stdin?.write('next\n');
  }
  assert.not.ok(cut);
  assert.is(acked.length, BATCHES);
  await until('sn2 caught up and healthy again', async () => (await replicaStates()) === 'sn1:healthy,sn2:healthy');
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
