/**
 * A statement's time through the Proxy (as `hd up` runs hd_sql): DMS, SCC and two Storage Nodes over
 * mutual TLS, a real Proxy, hd_sql in Proxy mode; the same statements also with hd_sql pointed
 * straight at the SCC, in one run. `npx tsx bench/proxyPath.bench.ts [--minutes M] [--runs R]`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { median } from './peers/workload';
import { ingestMinutes } from '../test/support/ingestMinutes';
import { startProxyCluster, startProxySql, stopProxyCluster, untilBatchIndexHolds, type ProxyCluster } from '../test/sql/proxyCluster';

const arg = (name: string, d: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};

async function main(): Promise<void> {
  const minutes = arg('minutes', 10);
  const runs = arg('runs', 21);
  const schemaJson = readFileSync(path.resolve(__dirname, '../pipelines/examples/data/flows.schema.json'), 'utf8');
  const T0 = 1_700_000_000 - (1_700_000_000 % 60);
  const ctx = {} as ProxyCluster;
  try {
    await startProxyCluster(ctx, schemaJson, 'hd-proxybench-', 'proxy-bench');
    const allowAll = 'package hd.authz\nimport rego.v1\ndefault allow := true\n';
    if ((await ctx.dms.call('PUT', '/v1/policy', ctx.dms.admin, { rego: allowAll })).status !== 200) throw new Error('the DMS refused the policy');
    await ingestMinutes(ctx.cluster, schemaJson, T0, minutes, (b) => Array.from({ length: 1000 }, (_, i) => ({ ts: String(T0 + b * 60 + (i % 60)), src_ip: `10.0.${b % 250}.${i % 250}`, dst_ip: '10.9.9.9', src_port: '1000', dst_port: i % 2 === 0 ? '443' : '53', proto: i % 3 === 0 ? 'udp' : 'tcp', packets: '1', bytes: String(i), duration_ms: '5' })));
    await untilBatchIndexHolds(ctx.cluster, minutes);
    const { sql, pgPort } = await startProxySql(ctx, 'analyst');
    const c = new pg.Client({ host: '127.0.0.1', port: pgPort, user: 'hd', database: 'hd' });
    await c.connect();
    const window = `ts >= ${T0} AND ts < ${T0 + minutes * 60}`;
    for (const q of [`SELECT count(*) FROM flows WHERE ${window}`, `SELECT proto, count(*), sum(bytes) FROM flows WHERE ${window} GROUP BY proto`, `SELECT ts, src_ip, bytes FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 60} AND dst_port = 443 AND bytes < 20`]) {
      const ms: number[] = [];
      for (let k = 0; k < runs; k++) {
        const t = performance.now();
        await c.query(q);
        ms.push(performance.now() - t);
      }
      console.log(`${median(ms).toFixed(2)} ms median of ${runs} (Proxy mode): ${q}`);
    }
    await c.end();
    await sql.stop();
  } finally {
    await stopProxyCluster(ctx);
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
