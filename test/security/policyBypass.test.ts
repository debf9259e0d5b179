/**
 * Security issue #14, item 4: the policy cannot be bypassed. Real processes: a DMS (in this
 * process), a registered SCC and Storage Node (`hd run`), a second registered SCC configured to
 * admit direct callers, and a Proxy process; the dataset has `overlay` fields over a hidden ipv4
 * (`src_ip_u32`, `src_hi`) and a hidden uint64 (`secret_lo`, `secret_view`).
 *
 * - SCC Dispatch: `client` and `sqlServer` certificates get PERMISSION_DENIED by default (the
 *   message names QUERY_GRPC_ROLES); an SCC whose QUERY_GRPC_ROLES names them serves them.
 * - The overlay probe: a guest's records come back with every byte of the hidden fields zero,
 *   overlays included; filters on overlay names select nothing (an admin's same filter selects the
 *   row: the filter itself works); `would_exclude_batches` never depends on a hidden range.
 * - `/v1/batch-filters` on the Storage Node: refused over plain HTTP, without a certificate and to
 *   any role but `proxy`; answers never include a range that shares a hidden byte.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { dispatchCredentials } from '../../net/grpcTls';
import { requestJson, type ClientTls } from '../../net/jsonClient';
import type { MtlsIdentity } from '../../net/mtls';
import { StorageNodeFilters } from '../../control/proxy/storageNodeFilters';
import type { NodeRole } from '../../control/dms/state';
import { Schema } from '../../engine-rs/schema';
import type { BatchFilterJson } from '../../nodes/storageNode/batchFilters';
import { DispatchError, QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { INGRESS, spawnProxyProcess } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { enrol } from './proxyIdentitySupport';

/** Overlays over a hidden ipv4 (bytes 8..12) and a hidden uint64 (bytes 12..20). */
const PROBE = {
  id: 'probe',
  name: 'overlay probe',
  record_size: 32,
  time_field: 'ts',
  time_index_interval: 60,
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'src_ip_u32', type: 'uint32', offset: 8, size: 4, overlay: true },
    { name: 'src_hi', type: 'uint16', offset: 10, size: 2, overlay: true },
    { name: 'src_ip', type: 'ipv4', offset: 8, size: 4, overlay: true },
    { name: 'secret_lo', type: 'uint32', offset: 12, size: 4, overlay: true },
    { name: 'secret_view', type: 'bytes', offset: 12, size: 8, overlay: true },
    { name: 'secret', type: 'uint64', offset: 12, size: 8, overlay: true },
    { name: 'bytes', type: 'uint32', offset: 20, size: 4 },
    { name: 'port', type: 'uint16', offset: 24, size: 2 },
  ],
};
const SCHEMA_JSON = JSON.stringify(PROBE);
const HIDDEN_BYTES = { offset: 8, size: 12 };
const POLICY = `package hd.authz
import rego.v1
default allow := true
hidden_fields contains "src_ip" if input.role != "admin"
hidden_fields contains "secret" if input.role != "admin"
`;
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const BATCHES = 3;
const PER_BATCH = 20;
const TOKEN = '00112233445566778899aabbccddeeff';
const KEY_BITS = '2048';

/** Record i of batch b: the hidden values differ per batch (secret b*1000+i, src_ip 10.b.0.i). */
const rec = (b: number, i: number): Record<string, string> => ({ ts: String(T0 + b * 60 + i), src_ip: `10.${b}.0.${i}`, secret: String(b * 1000 + i), bytes: String(i), port: '80' });
/** The little-endian u32 an ipv4 overlay reads for a.b.c.d (stored as the address's u32, little-endian). */
const u32Of = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  proxy: { proc: HdProcess; url: string };
  open: { proc: HdProcess; grpcPort: number; stateDir: string };
  ids: string[];
  certs: Map<string, MtlsIdentity>;
  /** A return address for raw Proxy queries. */
  ret: { port: number; close(): Promise<void> };
  remove(): void;
}

const tlsOf = (id: MtlsIdentity, servername?: string): ClientTls => ({ ca: id.material.caPem, cert: id.material.certPem, key: id.material.keyPem, ...(servername && { servername }) });

/** Calls CancelQuery for a query that does not exist: NOT_FOUND means the SCC took the call. */
async function probe(address: string, id: MtlsIdentity, sccName: string): Promise<{ status: string; details: string }> {
  const c = new QueryDispatchClient(address, { credentials: dispatchCredentials(id.material, sccName), deadlineMs: 10_000 });
  try {
    await c.cancelQuery(987_654, TOKEN);
    return { status: 'OK', details: '' };
  } catch (err) {
    if (!(err instanceof DispatchError)) throw err;
    return { status: err.status, details: err.details };
  } finally {
    c.close();
  }
}

/** A TCP listener that takes result streams and drops them (a return address for raw Proxy queries). */
async function sink(): Promise<{ port: number; close(): Promise<void> }> {
  const socks = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    socks.add(s);
    s.on('error', () => undefined);
    s.resume();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { port: (srv.address() as net.AddressInfo).port, close: () => new Promise((r) => { for (const s of socks) s.destroy(); srv.close(() => r()); }) };
}

const t = suite<Ctx>('security #14.4: the policy cannot be bypassed (real processes)');
t.before(async (ctx) => {
  ctx.dms = await startTestDms();
  const { dms } = ctx;
  const dir = tempDir('hd-sec-bypass-');
  const caFile = path.join(dir.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  assert.is((await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true })).status, 200);
  assert.is((await dms.call('PUT', '/v1/clusters/c2', dms.admin, { primary: false })).status, 200);
  assert.is((await dms.call('PUT', '/v1/datasets/probe', dms.admin, { schema: PROBE })).status, 200);
  assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY })).status, 200);
  const tokenFor = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({ recordSize: 32, storageNodes: 1, schemas: [SCHEMA_JSON], dms: { url: dms.url, caFile, token: tokenFor, env: { PLATFORM_KEY_BITS: KEY_BITS, PLATFORM_CLUSTER: 'c1' } } });
  const { cluster } = ctx;
  ctx.ids = [];
  {
    await using ingest = new PlatformIngestClient();
    ingest.loadDatasetSchema(SCHEMA_JSON);
    ingest.setSccTargets([`${cluster.host}:${cluster.scc.productionPort}`]);
    for (let b = 0; b < BATCHES; b++) {
      const id = ingest.generateBatchIdTime(T0 + b * 60, T0 + b * 60 + 60);
      ctx.ids.push(id.toHex());
      const recs = Array.from({ length: PER_BATCH }, (_, i) => ingest.convertRecordToBinary(rec(b, i)));
      assert.ok(await ingest.streamInsert(id, recs), String(ingest.lastError));
      assert.ok(await ingest.sendEob(id), String(ingest.lastError));
    }
  }
  const sn = cluster.sns[0];
  for (;;) {
    const r = (await (await fetch(`http://${cluster.host}:${sn?.observabilityPort}/v1/batches?dataset=probe`)).json()) as { batches?: unknown[] };
    if (r.batches?.length === BATCHES) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  // A second SCC, in a cluster of its own, configured to admit hd_sql and SDK clients directly.
  const [prod, cmd, obs, grpcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'hd-scc-open-'));
  const open = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: '127.0.0.1',
    PRODUCTION_PORT: String(prod),
    COMMAND_PORT: String(cmd),
    OBSERVABILITY_PORT: String(obs),
    QUERY_GRPC_PORT: String(grpcPort),
    RECORD_SIZE: '32',
    NODE_NAME: 'scc-open',
    SN_TARGETS: `${sn?.name}:127.0.0.1:${sn?.commandPort}:${sn?.productionPort}`,
    DMS_URL: dms.url,
    PLATFORM_CA_CERT_PEM: caFile,
    PLATFORM_BOOTSTRAP_TOKEN: await tokenFor('scc-open', 'scc'),
    PLATFORM_KEY_BITS: KEY_BITS,
    PLATFORM_CLUSTER: 'c2',
    STATE_DIR: stateDir,
    QUERY_GRPC_ROLES: 'proxy,sqlServer,client',
  });
  await waitForPort('127.0.0.1', grpcPort, open, 60_000);
  ctx.open = { proc: open, grpcPort, stateDir };
  ctx.proxy = await spawnProxyProcess(dms, caFile, 'proxy-bypass', 300);
  ctx.certs = new Map();
  for (const role of ['proxy', 'client', 'sqlServer'] as NodeRole[]) ctx.certs.set(role, await enrol(dms, `bypass-${role.toLowerCase()}`, role));
  ctx.remove = () => {
    dir.remove();
    rmSync(stateDir, { recursive: true, force: true });
  };
  ctx.ret = await sink();
  // The Proxy serves once it has read the Storage Node and the SCC from the DMS (and the verdict has the node's filters).
  for (let i = 0; ; i++) {
    const r = await requestJson('POST', `${ctx.proxy.url}/v1/query`, { ca: dms.server.caCertPem }, { query_id: 1, dataset: 'probe', batch_ids: ctx.ids, return_address: { host: '127.0.0.1', port: ctx.ret.port }, token: TOKEN }, { headers: { ...INGRESS, 'x-forwarded-role': 'admin', 'x-forwarded-email': 'a@x' } });
    if (r.status === 200 && (r.body as { bloomrf_mode: string }).bloomrf_mode === 'minmax') break;
    if (i > 300) throw new Error(`the Proxy never gave a minmax verdict: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
});
t.after(async (ctx) => {
  await ctx.proxy?.proc.stop();
  await ctx.ret?.close();
  await ctx.open?.proc.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

/** An SDK client in Proxy mode as `role` (the ingress secret makes it the ingress). */
function proxyClient(ctx: Ctx, role: string): PlatformQueryClient {
  const q = new PlatformQueryClient(ctx.proxy.url, '127.0.0.1', '', { listenPort: 0, log: () => undefined, controlTls: { ca: ctx.dms.server.caCertPem } });
  q.loadDatasetSchema(SCHEMA_JSON);
  for (const [k, v] of Object.entries({ ...INGRESS, 'x-forwarded-role': role, 'x-forwarded-email': `${role}@example.com` })) q.addControlHeader(k, v);
  return q;
}

const WINDOW = { start_time: T0, end_time: T0 + BATCHES * 60 - 1 };

t('SCC Dispatch: client and sqlServer certificates are refused by default, naming QUERY_GRPC_ROLES; an SCC that lists them serves them', async (ctx) => {
  const scc = `${ctx.cluster.host}:${ctx.cluster.scc.queryGrpcPort}`;
  for (const role of ['client', 'sqlServer']) {
    const r = await probe(scc, ctx.certs.get(role) as MtlsIdentity, 'scc-test');
    assert.is(r.status, 'PERMISSION_DENIED', `${role}: ${r.details}`);
    assert.match(r.details, new RegExp(`is ${role} 'bypass-${role.toLowerCase()}'; only proxy certificates may query this SCC .*add '${role}' to QUERY_GRPC_ROLES`));
  }
  assert.is((await probe(scc, ctx.certs.get('proxy') as MtlsIdentity, 'scc-test')).status, 'NOT_FOUND', 'the Proxy is served');
  // An SDK client in direct mode gets no record past the policy.
  const client = ctx.certs.get('client') as MtlsIdentity;
  const material = { ca: client.material.caPem, cert: client.material.certPem, key: client.material.keyPem };
  {
    await using direct = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, dispatchTls: material });
    direct.loadDatasetSchema(SCHEMA_JSON);
    direct.setSccTargets([{ host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort }]);
    const refused = await direct.executeDataset(WINDOW).then(
      (tb) => `answered ${tb.numRows} rows`,
      (err: unknown) => String(err),
    );
    assert.match(refused, /PERMISSION_DENIED|QUERY_GRPC_ROLES/);
  }
  // Explicitly allowed (QUERY_GRPC_ROLES=proxy,sqlServer,client): served, and the client reads.
  const openAddr = `127.0.0.1:${ctx.open.grpcPort}`;
  for (const role of ['client', 'sqlServer']) assert.is((await probe(openAddr, ctx.certs.get(role) as MtlsIdentity, 'scc-open')).status, 'NOT_FOUND', role);
  {
    await using direct = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, dispatchTls: material });
    direct.loadDatasetSchema(SCHEMA_JSON);
    direct.setSccTargets([{ host: '127.0.0.1', port: ctx.cluster.scc.productionPort, grpcPort: ctx.open.grpcPort }]);
    const table = await direct.executeDataset(WINDOW);
    assert.is(table.numRows, BATCHES * PER_BATCH);
  }
});

/** True when a decoded value is all zero (numbers, bigints, addresses, byte strings). */
function isZero(v: unknown): boolean {
  if (typeof v === 'bigint') return v === 0n;
  if (typeof v === 'number') return v === 0;
  if (typeof v === 'string') return /^0(\.0\.0\.0)?$|^(00)+$/.test(v);
  if (v instanceof Uint8Array) return v.every((b) => b === 0);
  return false;
}

t('the overlay probe: a guest gets the hidden bytes as zeros under every name, and filters on overlay names never select rows by a hidden value', async (ctx) => {
  await using guest = proxyClient(ctx, 'guest');
  const rows = (await guest.executeDataset(WINDOW)).toArray().map((r) => r.toJSON() as Record<string, unknown>);
  assert.is(rows.length, BATCHES * PER_BATCH);
  for (const r of rows) {
    for (const f of ['src_ip', 'src_ip_u32', 'src_hi', 'secret', 'secret_lo', 'secret_view']) assert.ok(isZero(r[f]), `${f} = ${String(r[f])} reached a guest`);
  }
  // Visible fields are intact.
  assert.equal([...new Set(rows.map((r) => Number(r.bytes)))].sort((a, b) => a - b), Array.from({ length: PER_BATCH }, (_, i) => i));
  // The admin sees the true values (the probe data is not all zero).
  await using admin = proxyClient(ctx, 'admin');
  const adminRows = (await admin.executeDataset(WINDOW)).toArray().map((r) => r.toJSON() as Record<string, unknown>);
  assert.ok(adminRows.some((r) => !isZero(r.secret_lo) && !isZero(r.src_ip_u32)));

  // Filters on the overlay names: the probe the red team used to select the rows of one hidden value.
  const target = rec(1, 5);
  const probes: [string, Record<string, unknown>][] = [
    ['secret_lo eq', { field: 'secret_lo', op: 'eq', value: target.secret }],
    ['secret_lo between', { field: 'secret_lo', op: 'between', values: [target.secret, target.secret] }],
    ['src_ip_u32 eq', { field: 'src_ip_u32', op: 'eq', value: String(u32Of(target.src_ip as string)) }],
    ['src_hi eq', { field: 'src_hi', op: 'eq', value: String(Math.floor(u32Of(target.src_ip as string) / 65536)) }],
    ['secret_view masked_eq', { field: 'secret_view', op: 'masked_eq', value: Buffer.from(BigInt(target.secret).toString(16).padStart(16, '0'), 'hex').reverse().toString('hex'), mask: 'ff'.repeat(8) }],
  ];
  for (const [what, filter] of probes) {
    const q = { ...WINDOW, sub_queries: [{ filters: [filter] }] };
    // The filter works: the admin (who may see the field) gets exactly the target row...
    const a = await admin.executeDataset(q);
    assert.ok(a.numRows >= 1, `${what}: the admin's filter selects the target (${a.numRows} rows)`);
    // ...while the guest's same filter selects nothing: which rows come back never depends on a hidden value.
    const g = await guest.executeDataset(q);
    assert.is(g.numRows, 0, `${what}: a guest's filter on an overlay selected ${g.numRows} rows by a hidden value`);
  }
});

t('the overlay probe: would_exclude_batches never depends on a hidden range', async (ctx) => {
  const ret = ctx.ret;
  let queryId = 100;
  {
    const ask = async (role: string, filters: Record<string, unknown>[]): Promise<{ would_exclude_batches: string[]; bloomrf_mode: string; rewrite: { hidden_fields: string[] } }> => {
      const r = await requestJson('POST', `${ctx.proxy.url}/v1/query`, { ca: ctx.dms.server.caCertPem }, { query_id: queryId++, dataset: 'probe', batch_ids: ctx.ids, return_address: { host: '127.0.0.1', port: ret.port }, token: TOKEN, sub_queries: [{ filters }] }, { headers: { ...INGRESS, 'x-forwarded-role': role, 'x-forwarded-email': `${role}@x` } });
      assert.is(r.status, 200, JSON.stringify(r.body));
      return r.body as { would_exclude_batches: string[]; bloomrf_mode: string; rewrite: { hidden_fields: string[] } };
    };
    // Batches 0 and 1 hold secrets below 2000: the ranges would tell.
    const leak = [{ field: 'secret_lo', op: 'ge', value: '2000' }];
    const admin = await ask('admin', leak);
    assert.equal(admin.would_exclude_batches, [ctx.ids[0], ctx.ids[1]], 'the verdict reads the ranges for who may see them');
    assert.is(admin.bloomrf_mode, 'minmax');
    for (const filters of [leak, [{ field: 'src_ip_u32', op: 'lt', value: String(u32Of('10.1.0.0')) }], [{ field: 'src_hi', op: 'gt', value: '0' }]]) {
      const g = await ask('guest', filters);
      assert.equal(g.would_exclude_batches, [], `${JSON.stringify(filters)}: the guest's verdict excluded batches by a hidden range`);
      assert.is(g.bloomrf_mode, 'minmax');
      assert.equal(g.rewrite.hidden_fields, ['src_ip_u32', 'src_hi', 'src_ip', 'secret_lo', 'secret_view', 'secret']);
    }
    // A guest's filter on a visible field still gets a verdict.
    assert.equal((await ask('guest', [{ field: 'bytes', op: 'ge', value: '1000' }])).would_exclude_batches, ctx.ids);
  }
});

t('/v1/batch-filters: only over mutual TLS to the proxy role, and never a hidden range', async (ctx) => {
  const sn = ctx.cluster.sns[0];
  const qs = `dataset=probe&batch_ids=${ctx.ids.join(',')}`;
  const plain = await fetch(`http://${ctx.cluster.host}:${sn?.observabilityPort}/v1/batch-filters?${qs}`);
  assert.is(plain.status, 403, 'plain HTTP is refused');
  assert.not.match(await plain.text(), /"min"/);
  const url = `https://${ctx.cluster.host}:${sn?.observabilityPort}/v1/batch-filters?${qs}`;
  const noCert = await requestJson('GET', url, { ca: ctx.dms.server.caCertPem, servername: sn?.name });
  assert.is(noCert.status, 401, JSON.stringify(noCert.body));
  for (const role of ['client', 'sqlServer']) {
    const r = await requestJson('GET', url, tlsOf(ctx.certs.get(role) as MtlsIdentity, sn?.name));
    assert.is(r.status, 403, `${role}: ${JSON.stringify(r.body)}`);
    assert.not.ok(JSON.stringify(r.body).includes('"min"'));
  }
  // The Proxy's certificate is served; with the identity's hidden ranges nothing overlapping them comes back.
  const proxy = ctx.certs.get('proxy') as MtlsIdentity;
  const all = await requestJson('GET', url, tlsOf(proxy, sn?.name));
  assert.is(all.status, 200, JSON.stringify(all.body));
  const hiddenSeen = (body: unknown): boolean =>
    Object.values((body as { filters: Record<string, BatchFilterJson> }).filters).some((f) => f.fields.some((r) => r.offset < HIDDEN_BYTES.offset + HIDDEN_BYTES.size && HIDDEN_BYTES.offset < r.offset + r.size));
  assert.ok(hiddenSeen(all.body), 'without hidden ranges the node answers every zone (the check below means something)');
  const masked = await requestJson('GET', `${url}&hidden=${HIDDEN_BYTES.offset}:${HIDDEN_BYTES.size}`, tlsOf(proxy, sn?.name));
  assert.is(masked.status, 200);
  assert.is(Object.keys((masked.body as { filters: object }).filters).length, BATCHES);
  assert.not.ok(hiddenSeen(masked.body), JSON.stringify(masked.body));
  // The Proxy's reader names no field sharing a hidden byte.
  const reader = new StorageNodeFilters({ nodes: () => [{ name: sn?.name as string, host: ctx.cluster.host, port: sn?.observabilityPort as number }], schema: () => Schema.parse(PROBE), identity: proxy, timeoutMs: 5000 });
  try {
    const got = await reader.filters('probe', ctx.ids, [HIDDEN_BYTES]);
    assert.is(got.size, BATCHES);
    for (const bf of got.values()) {
      assert.equal(Object.keys(bf).filter((k) => ['src_ip', 'src_ip_u32', 'src_hi', 'secret', 'secret_lo', 'secret_view'].includes(k)), []);
      assert.ok('bytes' in bf && 'port' in bf, JSON.stringify(bf));
    }
  } finally {
    reader.close();
  }
});

t.run();
