/**
 * The deployment the Proxy-mode SQL tests run against: a DMS (in this process), an SCC and two
 * Storage Nodes registered with it (so the Proxy reads the nodes' batch index over mutual TLS), the
 * dataset, a real Proxy process, and hd_sql's own DMS certificate.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import * as assert from 'uvu/assert';
import type { NodeRole } from '../../control/dms/state';
import { registerWithDms } from '../../net/registerWithDms';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { spawnProxyProcess } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { sqlProcessEnv } from './sqlProcessEnv';

export interface ProxyCluster {
  dms: TestDms;
  cluster: Cluster;
  proxy: HdProcess;
  proxyUrl: string;
  /** The Proxy's observability port. */
  proxyObs: number;
  /** hd_sql's client certificate and key, and the DMS CA. */
  files: { ca: string; cert: string; key: string };
  remove(): void;
}

/**
 * Starts the deployment of `schemaJson` (dataset `flows`, record size 64) with the Proxy named
 * `proxyName` (and `sccEnv` added to the SCC's environment), filling `ctx` as each part starts (so {@link stopProxyCluster} stops what started
 * even when a later step fails).
 */
export async function startProxyCluster(ctx: ProxyCluster, schemaJson: string, tempPrefix: string, proxyName: string, sccEnv: Record<string, string> = {}): Promise<void> {
  ctx.dms = await startTestDms();
  const { dms } = ctx;
  const t = tempDir(tempPrefix);
  ctx.remove = t.remove;
  const caFile = path.join(t.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
  const tokenFor = async (name: string, role: NodeRole): Promise<string> => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [schemaJson], dms: { url: dms.url, caFile, token: tokenFor, env: { PLATFORM_KEY_BITS: '2048', PLATFORM_CLUSTER: 'c1' } }, sccEnv });
  const { cluster } = ctx;
  // The topology the Proxy reads: the SCC (registered: mutual TLS) and the nodes' observability ports.
  const scc = await dms.call('PUT', '/v1/nodes/scc-test', dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: cluster.host, port: cluster.scc.productionPort }, grpc: { host: cluster.host, port: cluster.scc.queryGrpcPort } } });
  assert.ok(scc.status < 300, JSON.stringify(scc.body));
  for (const sn of cluster.sns) {
    const r = await dms.call('PUT', `/v1/nodes/${sn.name}`, dms.admin, { role: 'storageNode', cluster: 'c1', addresses: { observability: { host: cluster.host, port: sn.observabilityPort } } });
    assert.ok(r.status < 300, JSON.stringify(r.body));
  }
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: JSON.parse(schemaJson) })).status, 200);
  const proxy = await spawnProxyProcess(dms, caFile, proxyName);
  ctx.proxy = proxy.proc;
  ctx.proxyUrl = proxy.url;
  ctx.proxyObs = proxy.obs;
  const sqlToken = await tokenFor('hd-sql', 'sqlServer');
  const reg = await registerWithDms({ dmsUrl: dms.url, nodeName: 'hd-sql', role: 'sqlServer', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: sqlToken }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  ctx.files = { ca: caFile, cert: path.join(t.dir, 'sql.crt'), key: path.join(t.dir, 'sql.key') };
  writeFileSync(ctx.files.cert, reg.signed_cert_pem);
  writeFileSync(ctx.files.key, reg.client_key_pem, { mode: 0o600 });
}

/** Stops whatever {@link startProxyCluster} started. */
export async function stopProxyCluster(ctx: Partial<ProxyCluster>): Promise<void> {
  await ctx.proxy?.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
}

/** Resolves once every Storage Node lists `count` batches of `flows` in its batch index (what the Proxy reads for `ts > 0`). */
export async function untilBatchIndexHolds(cluster: Cluster, count: number): Promise<void> {
  for (const sn of cluster.sns) {
    for (;;) {
      const r = (await (await fetch(`http://${cluster.host}:${sn.observabilityPort}/v1/batches?dataset=flows`)).json()) as { batches: unknown[] };
      if (r.batches.length === count) break;
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}

/** Starts hd_sql in Proxy mode as `role`; resolves with it and its PostgreSQL port once it listens. */
export async function startProxySql(ctx: Pick<ProxyCluster, 'dms' | 'proxyUrl' | 'files'>, role: string, extra: Record<string, string> = {}): Promise<{ sql: HdProcess; pgPort: number }> {
  const [pgPort, ret] = [await freePort(), await freePort()];
  const sql = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv({ pgPort, returnPort: ret, dms: { url: ctx.dms.url, ...ctx.files } }, { HD_PROXY_ENDPOINT: ctx.proxyUrl, HD_SQL_PROXY_ROLE: role, HD_SQL_PROXY_EMAIL: `${role}@example.com`, ...extra }),
  );
  await waitForPort('127.0.0.1', pgPort, sql, 60_000);
  return { sql, pgPort };
}

/** The rows of `text` run over a fresh PostgreSQL connection to `pgPort`. */
export async function query(pgPort: number, text: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'hd', database: 'hd' });
  await c.connect();
  try {
    return (await c.query(text)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}
