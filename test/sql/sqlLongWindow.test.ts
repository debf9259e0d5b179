/**
 * Open and long time windows (issue #17 item 4) over real processes: a DMS (in this process), an SCC
 * and two Storage Nodes registered with it, a Proxy process and hd_sql in Proxy mode. Four one-minute
 * batches lie years and months apart. `WHERE ts > 0` (the window [1, now]: 29 million intervals) and
 * a statement with no time bound under a lookback of a year answer right, and the Proxy names
 * exactly the batches that exist (its `hd_proxy_window_batches_total` counter moves by the number of
 * batches, resolved from the nodes' batch index, never by enumeration). A constraint the policy
 * enforces still holds over the resolved batches.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { query, startProxyCluster, startProxySql, stopProxyCluster, type ProxyCluster } from './proxyCluster';
import { NOW, PER_BATCH, schemaJson, sendWindowBatches, STARTS, YEAR } from './windowBatches';

/** Analysts only see dst_port 443 (an enforced constraint); admins see everything. */
const POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\nconstraints contains {"field": "dst_port", "value": "443"} if input.role == "analyst"\n';

type Ctx = ProxyCluster;

/** The Proxy's `hd_proxy_window_batches_total` by `resolved_by`. */
async function named(ctx: Ctx): Promise<{ batch_index: number; enumeration: number }> {
  const text = await (await fetch(`http://127.0.0.1:${ctx.proxyObs}/metrics`)).text();
  const of = (how: string): number => Number(new RegExp(`hd_proxy_window_batches_total\\{resolved_by="${how}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return { batch_index: of('batch_index'), enumeration: of('enumeration') };
}

/** Runs `text` and says how many batch ids the Proxy named for it, and how. */
async function counted(ctx: Ctx, pgPort: number, text: string): Promise<{ rows: Record<string, unknown>[]; batchIndex: number; enumeration: number }> {
  const before = await named(ctx);
  const rows = await query(pgPort, text);
  const after = await named(ctx);
  return { rows, batchIndex: after.batch_index - before.batch_index, enumeration: after.enumeration - before.enumeration };
}

const lw = suite<Ctx>('open and long windows through hd_sql and a Proxy process: the batches that exist, not every interval');
lw.before(async (ctx) => {
  try {
    await setUp(ctx);
  } catch (err) {
    console.error('before failed:', err);
    throw err;
  }
});
async function setUp(ctx: Ctx): Promise<void> {
  await startProxyCluster(ctx, schemaJson, 'hd-long-window-', 'proxy-lw');
  const { dms, cluster } = ctx;
  assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY })).status, 200);
  await sendWindowBatches(cluster, (i) => (i % 2 === 0 ? '443' : '53'));
}
lw.after((ctx) => stopProxyCluster(ctx));

lw('ts > 0 and no time bound with a year of lookback: right answers, one batch id named per batch that exists', async (ctx) => {
  const { sql, pgPort } = await startProxySql(ctx, 'admin', { HD_SQL_DEFAULT_LOOKBACK_SEC: String(YEAR) });
  try {
    const all = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(ts)::BIGINT AS lo, max(ts)::BIGINT AS hi FROM flows WHERE ts > 0');
    assert.equal(all.rows, [{ n: PER_BATCH * STARTS.length, lo: String(STARTS[0]), hi: String((STARTS[3] as number) + PER_BATCH - 1) }]);
    assert.is(all.batchIndex, STARTS.length, 'one id per batch that exists');
    assert.is(all.enumeration, 0);

    const lookback = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(ts)::BIGINT AS lo FROM flows');
    assert.equal(lookback.rows, [{ n: PER_BATCH * 3, lo: String(STARTS[1]) }], 'the batch two years back is outside the lookback');
    assert.is(lookback.batchIndex, 3);
    assert.is(lookback.enumeration, 0);

    const none = await counted(ctx, pgPort, `SELECT count(*)::INTEGER AS n FROM flows WHERE ts > ${NOW + 10 * YEAR}`);
    assert.equal(none.rows, [{ n: 0 }], 'a window where no batch exists reads nothing');
    assert.is(none.batchIndex, 0);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

lw('an enforced constraint still holds over the resolved batches', async (ctx) => {
  const { sql, pgPort } = await startProxySql(ctx, 'analyst');
  try {
    const r = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(dst_port)::INTEGER AS lo, max(dst_port)::INTEGER AS hi FROM flows WHERE ts > 0');
    assert.equal(r.rows, [{ n: (PER_BATCH / 2) * STARTS.length, lo: 443, hi: 443 }]);
    assert.is(r.batchIndex, STARTS.length);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

lw.run();
