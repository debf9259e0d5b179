/**
 * Quarantine end to end (issue #20) on a registered cluster of real processes (a DMS, an SCC and two
 * Storage Nodes, mutual TLS): an administrator quarantines sn2 on the DMS, the SCC learns of it from
 * its configuration feed and routes queries and new batches away from sn2 — queries are answered
 * whole by sn1 and sn2's query counter does not move; released, sn2 is caught up from the SCC's
 * catch-up log with every batch written meanwhile, and serves queries again (shown by quarantining
 * sn1 in turn: every row then comes from sn2).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDms } from '../control/support';
import type { ClusterSn } from '../support/cluster';
import { held, ingest, queryAll, queryBatches, startRegisteredCluster, stateOf, until, type RegisteredCluster } from './registeredClusterKit';

type Ctx = RegisteredCluster;

const t = suite<Ctx>('quarantine end to end: the SCC routes queries and batches away from a quarantined node (real processes)');

t.before(async (ctx) => {
  await startRegisteredCluster(ctx, await startTestDms({ configPollMs: 200 }), 'hd-quarantine-', 'quarantine-client');
});

t.after(async (ctx) => {
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

t('quarantined: queries answered whole by sn1, sn2 gets no query and no batch; released: caught up, then it serves', async (ctx) => {
  const { dms, cluster } = ctx;
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  await until('both replicas healthy', async () => (await stateOf(ctx, 'sn1')) === 'healthy' && (await stateOf(ctx, 'sn2')) === 'healthy');
  await ingest(ctx, 2);
  await until('sn2 holds the first 2 batches', async () => (await held(ctx, sn2)) === 2);

  const q = await dms.call('POST', '/v1/nodes/sn2/quarantine', dms.admin, { reason: 'bad batch notices from sn2' });
  assert.is(q.status, 200, JSON.stringify(q.body));
  await until('the SCC has sn2 quarantined', async () => (await stateOf(ctx, 'sn2')) === 'quarantined');
  // Acknowledged by sn1 alone; nothing reaches sn2.
  await ingest(ctx, 3);
  const sn2Before = await queryBatches(ctx, sn2);
  const sn1Before = await queryBatches(ctx, sn1, 'eob');
  assert.is(await queryAll(ctx), 5);
  assert.is(await queryBatches(ctx, sn2), sn2Before, "sn2's query counter moved while it was quarantined");
  assert.is((await queryBatches(ctx, sn1, 'eob')) - sn1Before, 5, 'sn1 answered every batch');
  assert.is(await held(ctx, sn2), 2, 'a quarantined node got new batches');

  const r = await dms.call('POST', '/v1/nodes/sn2/release', dms.admin, {});
  assert.is(r.status, 200, JSON.stringify(r.body));
  await until('sn2 healthy again', async () => (await stateOf(ctx, 'sn2')) === 'healthy');
  // Healthy only once caught up: it holds every batch written while it was quarantined.
  assert.is(await held(ctx, sn2), 5);

  // sn2 serves again: with sn1 quarantined in turn, every row comes from sn2.
  assert.is((await dms.call('POST', '/v1/nodes/sn1/quarantine', dms.admin, { reason: 'the other way round' })).status, 200);
  await until('the SCC has sn1 quarantined', async () => (await stateOf(ctx, 'sn1')) === 'quarantined');
  const sn1Quarantined = await queryBatches(ctx, sn1);
  const sn2Released = await queryBatches(ctx, sn2, 'eob');
  assert.is(await queryAll(ctx), 5);
  assert.is((await queryBatches(ctx, sn2, 'eob')) - sn2Released, 5, 'sn2 answered every batch');
  assert.is(await queryBatches(ctx, sn1), sn1Quarantined);
  assert.is((await dms.call('POST', '/v1/nodes/sn1/release', dms.admin, {})).status, 200);
  await until('sn1 healthy again', async () => (await stateOf(ctx, 'sn1')) === 'healthy');
});

t.run();
