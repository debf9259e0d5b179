/**
 * Open and long time windows straight to the SCCs (issue #17 item 4, direct SCC mode) over real
 * processes: a DMS (in this process), an SCC and two Storage Nodes registered with it (mutual TLS
 * everywhere; the DMS hands the SCC its nodes' observability addresses), hd_sql with
 * HD_SQL_SCC_TARGETS and an SDK client with setSccTargets. Four one-minute batches lie years and
 * months apart. `WHERE ts > 0` and a statement with no bound under a lookback of a year go to the SCC
 * as HDQuery `time_window`; the SCC names exactly the batches that exist (its
 * `hd_scc_window_batches_total` counter, and the SDK's Dispatch reply) and the answers are exact.
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { query, startProxyCluster, stopProxyCluster, type ProxyCluster } from './proxyCluster';
import { sqlProcessEnv } from './sqlProcessEnv';
import { NOW, PER_BATCH, schemaJson, sendWindowBatches, STARTS, YEAR } from './windowBatches';


type Ctx = ProxyCluster;

/** The SCC's `hd_scc_window_batches_total` (batch ids it named for windows). */
async function sccNamed(ctx: Ctx): Promise<number> {
  const text = await (await fetch(`http://${ctx.cluster.host}:${ctx.cluster.scc.observabilityPort}/metrics`)).text();
  return Number(/^hd_scc_window_batches_total (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** Runs `text` through hd_sql and says how many batch ids the SCC named for it. */
async function counted(ctx: Ctx, pgPort: number, text: string): Promise<{ rows: Record<string, unknown>[]; named: number }> {
  const before = await sccNamed(ctx);
  const rows = await query(pgPort, text);
  return { rows, named: (await sccNamed(ctx)) - before };
}

/** An SDK client straight to the SCC, with hd_sql's certificate (a role QUERY_GRPC_ROLES lets in). */
function directClient(ctx: Ctx): PlatformQueryClient {
  const q = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined, dispatchTls: { ca: readFileSync(ctx.files.ca, 'utf8'), cert: readFileSync(ctx.files.cert, 'utf8'), key: readFileSync(ctx.files.key, 'utf8') } });
  q.loadDatasetSchema(schemaJson);
  q.setSccTargets([{ host: ctx.cluster.host, port: ctx.cluster.scc.productionPort, grpcPort: ctx.cluster.scc.queryGrpcPort }]);
  return q;
}

const dw = suite<Ctx>('open and long windows straight to the SCC: it names the batches its replicas hold');
dw.before(async (ctx) => {
  try {
    await startProxyCluster(ctx, schemaJson, 'hd-direct-window-', 'proxy-dw', { QUERY_GRPC_ROLES: 'proxy,sqlServer' });
    await sendWindowBatches(ctx.cluster, () => '443');
    // The SCC learns its nodes' observability addresses from its configuration on the DMS (read
    // every DMS_CONFIG_POLL_MS): until then a window is refused with FAILED_PRECONDITION.
    await using q = directClient(ctx);
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await q.executeDataset({ start_time: 1, end_time: NOW });
        break;
      } catch (err) {
        if (!/FAILED_PRECONDITION: .*knows no observability address/.test(String(err)) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } catch (err) {
    console.error('before failed:', err);
    throw err;
  }
});
dw.after((ctx) => stopProxyCluster(ctx));

dw('SDK, direct: ts > 0 goes as time_window; the reply names the four batches and the accounting waits for exactly them', async (ctx) => {
  await using q = directClient(ctx);
  const before = await sccNamed(ctx);
  const t = await q.executeDataset({ start_time: 1, end_time: NOW });
  assert.is(t.numRows, PER_BATCH * STARTS.length);
  assert.is((await sccNamed(ctx)) - before, STARTS.length, 'one id per batch that exists, of 29 million intervals');
  assert.equal(q.getFoundBatchIds().map((b) => b.toHex()).sort(), STARTS.map((s) => q.generateBatchIdsTime(s, s)[0]?.toHex()).sort());
  assert.equal(q.getMissingBatchIds(), []);
  assert.not.ok(q.hadErrors());
  // A window where nothing exists completes at once with nothing.
  const none = await q.executeDataset({ start_time: NOW + YEAR, end_time: NOW + 2 * YEAR });
  assert.is(none.numRows, 0);
  assert.equal(q.getFoundBatchIds(), []);
});

dw('hd_sql, direct: ts > 0 and no time bound with a year of lookback answer exactly, one batch id named per batch that exists', async (ctx) => {
  const [pgPort, ret] = [await freePort(), await freePort()];
  const sql: HdProcess = startHd(
    ['run', 'pipelines/sql.yaml', '--quiet'],
    sqlProcessEnv(
      { pgPort, returnPort: ret, dms: { url: ctx.dms.url, ...ctx.files } },
      { HD_SQL_SCC_TARGETS: `${ctx.cluster.host}:${ctx.cluster.scc.productionPort}:${ctx.cluster.scc.queryGrpcPort}`, HD_SQL_RESULT_TLS: 'true', HD_SQL_DEFAULT_LOOKBACK_SEC: String(YEAR) },
    ),
  );
  try {
    await waitForPort('127.0.0.1', pgPort, sql, 60_000);
    const all = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(ts)::BIGINT AS lo, max(ts)::BIGINT AS hi FROM flows WHERE ts > 0');
    assert.equal(all.rows, [{ n: PER_BATCH * STARTS.length, lo: String(STARTS[0]), hi: String((STARTS[3] as number) + PER_BATCH - 1) }]);
    assert.is(all.named, STARTS.length);

    const lookback = await counted(ctx, pgPort, 'SELECT count(*)::INTEGER AS n, min(ts)::BIGINT AS lo FROM flows');
    assert.equal(lookback.rows, [{ n: PER_BATCH * 3, lo: String(STARTS[1]) }], 'the batch two years back is outside the lookback');
    assert.is(lookback.named, 3);

    const none = await counted(ctx, pgPort, `SELECT count(*)::INTEGER AS n FROM flows WHERE ts > ${NOW + 10 * YEAR}`);
    assert.equal(none.rows, [{ n: 0 }]);
    assert.is(none.named, 0);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

dw.run();
