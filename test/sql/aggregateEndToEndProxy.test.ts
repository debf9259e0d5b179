/**
 * Aggregate pushdown end to end through the HD Proxy (issue #17 item 1, "Policy holds"): a DMS (in
 * this process), a real Proxy process, a real SCC and two Storage Nodes, and `hd run
 * pipelines/sql.yaml` in Proxy mode. The policy hides a numeric field (`bytes`) from the role
 * `guest` and enforces a constraint on it (`dst_port` = 443). With the aggregate pushed to the nodes
 * the guest's `sum(bytes)` reads as the zeros it may read, never the stored values, and its counts
 * cover only the records the constraint lets through — the same answers as with
 * HD_SQL_AGGREGATE_PUSHDOWN=false —, while an unrestricted role's sums are the stored ones. `WHERE
 * ts > 0` (the Proxy names the batches that exist) splits too.
 */
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { flowsFixture, flowsSchemaJson, ingestFlows } from './flowsFixture';
import { startProxyCluster, stopProxyCluster, untilBatchIndexHolds, type ProxyCluster } from './proxyCluster';
import { sqlProcessEnv } from './sqlProcessEnv';

const FIXTURE = flowsFixture(4, 300);
const { all, window: WINDOW } = FIXTURE;
/** Guests: `bytes` hidden (zeros), and only dst_port 443 (an enforced constraint). */
const POLICY =
  'package hd.authz\nimport rego.v1\ndefault allow := true\nhidden_fields contains "bytes" if input.role == "guest"\nconstraints contains {"field": "dst_port", "value": "443"} if input.role == "guest"\n';

const STATEMENTS: readonly string[] = [
  'SELECT count(*) AS n, sum(bytes) AS total, min(dst_port) AS lo, max(dst_port) AS hi FROM flows WHERE ts > 0',
  'SELECT min(ts) AS lo, max(ts) AS hi FROM flows WHERE ts > 0',
  `SELECT proto, count(*) AS n, sum(bytes) AS total, max(bytes) AS top FROM flows WHERE ${WINDOW} AND proto IN ('tcp', 'udp') GROUP BY proto ORDER BY proto`,
  `SELECT dst_port, sum(bytes) AS total FROM flows WHERE ${WINDOW} GROUP BY dst_port HAVING sum(bytes) >= 0 ORDER BY dst_port LIMIT 10`,
];

interface Sql {
  proc: HdProcess;
  pgPort: number;
}

interface Ctx extends ProxyCluster {
  sqls: Sql[];
}

async function startSql(ctx: Ctx, role: string, pushdown: boolean): Promise<Sql> {
  const [pgPort, returnPort] = [await freePort(), await freePort()];
  const proc = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv(
      { pgPort, returnPort, dms: { url: ctx.dms.url, ...ctx.files } },
      { HD_PROXY_ENDPOINT: ctx.proxyUrl, HD_SQL_PROXY_ROLE: role, HD_SQL_PROXY_EMAIL: `${role}@example.com`, HD_SQL_DEFAULT_LOOKBACK_SEC: '7200', HD_SQL_AGGREGATE_PUSHDOWN: String(pushdown), HD_SQL_EXPLAIN_PUSHDOWN: 'true' },
    ),
  );
  ctx.sqls.push({ proc, pgPort });
  await waitForPort('127.0.0.1', pgPort, proc, 60_000);
  return { proc, pgPort };
}

async function ask(sql: Sql, text: string): Promise<{ rows: unknown[]; notices: string[] }> {
  const c = new pg.Client({ host: '127.0.0.1', port: sql.pgPort, user: 'hd', database: 'hd' });
  const notices: string[] = [];
  c.on('notice', (n) => notices.push(n.message ?? ''));
  await c.connect();
  try {
    const r = await c.query({ text, rowMode: 'array' });
    return { rows: [r.fields.map((f) => `${f.name}:${f.dataTypeID}`), ...r.rows], notices };
  } finally {
    await c.end();
  }
}

const pushed = (notices: readonly string[]): boolean => notices.some((n) => /flows: aggregate pushed to the Storage Nodes/.test(n));
const real = (notices: readonly string[]): string[] => notices.filter((n) => !/: pushed down: |: aggregate /.test(n));

const px = suite<Ctx>('aggregate pushdown end to end through a Proxy process: a hidden field sums as zeros, an enforced constraint holds');
px.before(async (ctx) => {
  ctx.sqls = [];
  await startProxyCluster(ctx, flowsSchemaJson, 'hd-agg-proxy-', 'proxy-agg');
  const { dms, cluster } = ctx;
  assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY })).status, 200);
  await ingestFlows(cluster, FIXTURE);
  await untilBatchIndexHolds(cluster, FIXTURE.batches);
});
px.after(async (ctx) => {
  await Promise.all((ctx.sqls ?? []).map((s) => s.proc.stop()));
  await stopProxyCluster(ctx);
});

px('guest (bytes hidden, dst_port = 443 enforced): pushed aggregates read what the guest may read, the same as the record path; an analyst reads the stored sums', async (ctx) => {
  const [guestOn, guestOff, analystOn] = await Promise.all([startSql(ctx, 'guest', true), startSql(ctx, 'guest', false), startSql(ctx, 'analyst', true)]);
  const visible = all.filter((x) => x.dst_port === 443);
  const total = (xs: readonly { bytes: number }[]): string => String(xs.reduce((s, x) => s + x.bytes, 0));
  for (const text of STATEMENTS) {
    const [a, b] = [await ask(guestOn, text), await ask(guestOff, text)];
    assert.equal(a.rows, b.rows, text);
    assert.equal(real(a.notices), real(b.notices), `notices of ${text}`);
    assert.ok(pushed(a.notices), `${text}: ${a.notices.join('; ')}`);
    assert.not.ok(pushed(b.notices), `${text}: ${b.notices.join('; ')}`);
  }
  const g = await ask(guestOn, STATEMENTS[0] as string);
  assert.equal(g.rows.slice(1), [[String(visible.length), '0', 443, 443]], 'the constraint holds and bytes reads as zeros');
  const range = await ask(guestOn, STATEMENTS[1] as string);
  assert.is((range.rows[1] as unknown[]).length, 2);
  const byProto = await ask(guestOn, STATEMENTS[2] as string);
  assert.equal(
    byProto.rows.slice(1),
    ['tcp', 'udp'].map((p) => [p, String(visible.filter((x) => x.proto === p).length), '0', '0']),
    'grouped sums and maxima of the hidden field are zeros',
  );

  const an = await ask(analystOn, STATEMENTS[0] as string);
  assert.ok(pushed(an.notices), an.notices.join('; '));
  assert.equal(an.rows.slice(1), [[String(all.length), total(all), 22, 443]], 'an unrestricted role reads the stored values');
});

px.run();
