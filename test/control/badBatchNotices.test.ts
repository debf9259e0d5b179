/**
 * Bad batch notices on the DMS (control/dms/webux/badBatchRoutes.ts) and the SCC's reporter
 * (nodes/scc/badBatchReporter.ts): who may report (401 without a certificate, 403 for a client
 * certificate), what a report must hold (400 naming the key), aggregation per node, batch and code,
 * and the quarantine recording the node's notices when the administrator gives none.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MtlsIdentity } from '../../net/mtls';
import { BadBatchReporter } from '../../nodes/scc/badBatchReporter';
import { enrol } from '../security/proxyIdentitySupport';
import { startTestDms, type TestDms } from './support';

interface Ctx {
  dms: TestDms;
  scc: MtlsIdentity;
  client: MtlsIdentity;
}

const B1 = 'ab'.repeat(64);
const B2 = 'cd'.repeat(64);
const tlsOf = (dms: TestDms, id: MtlsIdentity) => ({ ca: dms.server.caCertPem, cert: id.material.certPem, key: id.material.keyPem });
const notice = (over: Record<string, unknown> = {}) => ({ node: 'sn-bad', batch_id: B1, dataset: 'q80', code: 13, reason: 'segment checksum mismatch', at: new Date().toISOString(), ...over });

const t = suite<Ctx>('bad batch notices: SCC reports on the DMS');

t.before(async (ctx) => {
  ctx.dms = await startTestDms();
  const { dms } = ctx;
  assert.is((await dms.call('PUT', '/v1/nodes/sn-bad', dms.admin, { role: 'storageNode', addresses: { control: { host: '127.0.0.1', port: 1 } } })).status < 300, true);
  ctx.scc = await enrol(dms, 'scc-r', 'scc');
  ctx.client = await enrol(dms, 'client-r', 'client');
});

t.after(async (ctx) => {
  await ctx.dms?.close();
});

t('401 without a client certificate, 403 for a client certificate, for both routes', async ({ dms, client }) => {
  const anon = await dms.call('POST', '/v1/bad-batch-notices', dms.anon, { notices: [notice()] });
  assert.is(anon.status, 401, JSON.stringify(anon.body));
  const asClient = await dms.call('POST', '/v1/bad-batch-notices', tlsOf(dms, client), { notices: [notice()] });
  assert.is(asClient.status, 403, JSON.stringify(asClient.body));
  assert.match((asClient.body as { message: string }).message, /scc or admin/);
  assert.is((await dms.call('GET', '/v1/bad-batch-notices', dms.anon)).status, 401);
  assert.is((await dms.call('GET', '/v1/bad-batch-notices', tlsOf(dms, client))).status, 403);
  // Nothing was kept from the refused reports.
  assert.equal((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body, { nodes: {} });
});

t('400 names what is wrong in a report', async ({ dms, scc }) => {
  const cases: [unknown, RegExp][] = [
    [{}, /'notices' must be an array of 1\.\.200/],
    [{ notices: [] }, /'notices' must be an array/],
    [{ notices: Array.from({ length: 201 }, () => notice()) }, /1\.\.200/],
    [{ notices: [notice({ batch_id: 'xyz' })] }, /'batch_id' must be 128 lowercase hex digits/],
    [{ notices: [notice({ code: -1 })] }, /'code' must be an integer 0\.\.65535/],
    [{ notices: [notice({ at: 'yesterday' })] }, /notices\[0\]\.at must be an ISO 8601 time/],
    [{ notices: [notice({ extra: 1 })] }, /notices\[0\] has unknown key 'extra'/],
    [{ notices: [notice(), notice({ node: '../x' })] }, /'node' must be 1\.\.64 letters/],
    [{ notices: [notice()], more: true }, /unknown key 'more'/],
  ];
  for (const [body, why] of cases) {
    const a = await dms.call('POST', '/v1/bad-batch-notices', tlsOf(dms, scc), body);
    assert.is(a.status, 400, JSON.stringify(body).slice(0, 200));
    assert.match((a.body as { message: string }).message, why);
  }
  assert.equal((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body, { nodes: {} });
});

t("the reporter aggregates per node, batch and code; unknown nodes are not kept; a quarantine records the node's notices", async ({ dms, scc }) => {
  const lines: string[] = [];
  const r = new BadBatchReporter({ dmsUrl: dms.url, identity: scc, intervalMs: 60_000, log: (l) => lines.push(l) });
  for (let i = 0; i < 3; i++) r.note({ node: 'sn-bad', batchId: B1, dataset: 'q80', code: 13, reason: 'segment checksum mismatch' });
  r.note({ node: 'sn-bad', batchId: B2, dataset: 'q80', code: 5, reason: 'timeout' });
  r.note({ node: 'not-a-node', batchId: B1, dataset: 'q80', code: 13, reason: 'x' });
  await r.flush();
  assert.equal(lines, []);
  assert.is(r.stats.reports, 1, 'one report for five notices');
  const got = (await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body as { nodes: Record<string, { batch_id: string; code: number; count: number; dataset: string; reason: string; reported_by: string }[]> };
  assert.equal(Object.keys(got.nodes), ['sn-bad']);
  const list = got.nodes['sn-bad'];
  assert.equal(
    list.map((x) => [x.batch_id, x.code, x.count, x.reported_by]).sort(),
    [[B1, 13, 3, 'scc-r'], [B2, 5, 1, 'scc-r']].sort(),
  );
  // Reported again later: the same record counts up.
  r.note({ node: 'sn-bad', batchId: B1, dataset: 'q80', code: 13, reason: 'segment checksum mismatch' });
  await r.stop();
  const again = (await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).body as typeof got;
  assert.is(again.nodes['sn-bad'].find((x) => x.batch_id === B1)?.count, 4);
  assert.is(again.nodes['sn-bad'].length, 2);

  const q = await dms.call('POST', '/v1/nodes/sn-bad/quarantine', dms.admin, { reason: 'bad batches' });
  assert.is(q.status, 200, JSON.stringify(q.body));
  const notices = (q.body as { quarantine: { notices: string[] } }).quarantine.notices;
  assert.is(notices.length, 2);
  assert.ok(notices.some((l) => l.includes(`batch ${B1.slice(0, 16)}`) && l.includes('code 13') && l.includes('(×4)')), notices.join('\n'));
});

t('an unreachable DMS: the notices are kept for the next report and the failure is logged once', async ({ dms, scc }) => {
  const lines: string[] = [];
  const r = new BadBatchReporter({ dmsUrl: 'https://127.0.0.1:1', identity: scc, intervalMs: 60_000, log: (l) => lines.push(l) });
  r.note({ node: 'sn-bad', batchId: B2, dataset: 'q80', code: 5, reason: 'timeout' });
  await r.flush();
  await r.flush();
  assert.is(lines.length, 1, lines.join('\n'));
  assert.match(lines[0], /could not reach the DMS \(kept for the next report\)/);
  assert.is(r.stats.reported, 0);
  assert.is(r.waiting, 1, 'the notice is kept');
  r.note({ node: 'sn-bad', batchId: B2, dataset: 'q80', code: 5, reason: 'timeout' });
  assert.is(r.waiting, 1, 'the same notice counts up');
  await r.stop();
  assert.is(r.stats.dropped, 0);
  assert.is((await dms.call('GET', '/v1/bad-batch-notices', dms.admin)).status, 200);
});

t.run();
