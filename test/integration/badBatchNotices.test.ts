/**
 * Bad batch notices reach the DMS by themselves (issue #20): on a registered cluster of real
 * processes (a DMS, an SCC and two Storage Nodes, mutual TLS) one segment of sn2 is cut short; the
 * queries that place that batch on sn2 get a bbn from it, the SCC reads the batch from sn1 instead
 * (every query is answered whole) and reports the notice, with sn2's name, to the DMS
 * (nodes/scc/badBatchReporter.ts), where `GET /v1/bad-batch-notices` lists it under sn2 and nothing
 * under sn1.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestDms } from '../control/support';
import type { ClusterSn } from '../support/cluster';
import { sleep } from './ingestKit';
import { held, ingest, queryAll, queryBatches, startRegisteredCluster, stateOf, until, type RegisteredCluster } from './registeredClusterKit';

type Ctx = RegisteredCluster;

const t = suite<Ctx>('bad batch notices end to end: a real SCC reports a corrupted segment of one node to the DMS (real processes)');

t.before(async (ctx) => {
  await startRegisteredCluster(ctx, await startTestDms({ configPollMs: 200 }), 'hd-bbn-', 'bbn-client');
});

t.after(async (ctx) => {
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});


/** The segment files under `dir`, by batch id (file name `<hex>.hdseg`). */
function segments(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) for (const [k, v] of segments(p)) out.set(k, v);
    else if (name.endsWith('.hdseg')) out.set(name.slice(0, -'.hdseg'.length), p);
  }
  return out;
}

interface Reported {
  batch_id: string;
  dataset: string;
  code: number;
  reason: string;
  count: number;
  reported_by: string;
}

t('a corrupted segment on sn2: queries stay whole, and the DMS lists the bbn under sn2 with batch, dataset, code and reason', async (ctx) => {
  const { dms, cluster } = ctx;
  const [sn1, sn2] = cluster.sns as [ClusterSn, ClusterSn];
  await until('both replicas healthy', async () => (await stateOf(ctx, 'sn1')) === 'healthy' && (await stateOf(ctx, 'sn2')) === 'healthy');
  await ingest(ctx, 2);
  await until('sn2 holds both batches', async () => (await held(ctx, sn2)) === 2);
  const onSn2 = segments(sn2.dir);
  assert.is(onSn2.size, 2, [...onSn2.values()].join(', '));
  // Both of sn2's segments cut short: the query spreads its two batches over both nodes, so one is asked of sn2.
  for (const file of onSn2.values()) {
    const seg = readFileSync(file);
    writeFileSync(file, seg.subarray(0, Math.floor(seg.length / 2)));
  }
  assert.equal((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body, { nodes: {} });

  // Placement rotates over the replicas: within a few queries the cut batch is asked of sn2.
  let listed: Record<string, Reported[]> = {};
  for (let i = 0; i < 8 && !listed.sn2; i++) {
    assert.is(await queryAll(ctx), 2);
    for (let k = 0; k < 30 && !listed.sn2; k++) {
      await sleep(100);
      listed = ((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body as { nodes: Record<string, Reported[]> }).nodes;
    }
  }
  assert.ok(listed.sn2, 'the bbn of sn2 never reached the DMS');
  assert.is(listed.sn1, undefined, 'sn1 holds every batch whole; nothing is reported of it');
  const [n] = listed.sn2 as [Reported];
  assert.ok(onSn2.has(n.batch_id), `a batch sn2 held: ${n.batch_id}`);
  assert.is(new Set(listed.sn2.map((x) => x.batch_id)).size, listed.sn2.length, 'one record per batch and code');
  assert.is(n.dataset, 'q80');
  assert.is(n.code, 13, `code 13 (batch unreadable): ${JSON.stringify(n)}`);
  assert.match(n.reason, /^13 /);
  assert.not.match(n.reason, /is not held by node/);
  assert.is(n.reported_by, 'scc-test');
  assert.ok((await queryBatches(ctx, sn1, 'eob')) > 0);

  // The administrator quarantines sn2 without typing notices: the record carries the reported one.
  const q = await dms.call('POST', '/v1/nodes/sn2/quarantine', dms.admin, { reason: 'corrupted segment' });
  assert.is(q.status, 200, JSON.stringify(q.body));
  const notices = (q.body as { quarantine: { notices: string[] } }).quarantine.notices;
  assert.is(notices.length, listed.sn2.length);
  assert.match(notices[0], / q80 batch [0-9a-f]{16}… code 13: /);
});

t.run();
