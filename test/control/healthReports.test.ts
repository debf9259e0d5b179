/**
 * Node health reports, in this process: what a node makes of its own /health document (including
 * malformed ones), the reporter against a real DMS, and the DMS's down-marking of silent nodes
 * (which nodes it watches, quarantine left alone, a restarted DMS's grace).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HealthWatch } from '../../control/dms/healthWatch';
import type { DmsContext } from '../../control/dms/context';
import { HealthReporter, reportFromHealthUrl } from '../../net/healthReporter';
import { startServiceHealth } from '../../net/serviceHealth';
import { MtlsIdentity } from '../../net/mtls';
import { registerWithDms } from '../../net/registerWithDms';
import type { NodeRole } from '../../control/dms/state';
import { startTestDms, type TestDms } from './support';

/** A plain HTTP server answering every request with `body` (status 200). */
async function serve(body: string): Promise<{ url: string; close(): Promise<void> }> {
  const srv = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/health`, close: () => new Promise((r) => srv.close(() => r())) };
}

const doc = suite("a node's own /health document as a report");

doc('status and document are taken as they are; a large document is cut to each part status', async () => {
  const small = await serve(JSON.stringify({ status: 'degraded', node: 'sn1', devices: { status: 'degraded', free: 3 }, batches: { open: 1 } }));
  const big = await serve(JSON.stringify({ status: 'ok', replicas: { status: 'ok', list: 'x'.repeat(20_000) }, batches: { open: 0 }, node: 'sn1' }));
  try {
    assert.equal(await reportFromHealthUrl(small.url), { status: 'degraded', detail: { status: 'degraded', node: 'sn1', devices: { status: 'degraded', free: 3 }, batches: { open: 1 } } });
    assert.equal(await reportFromHealthUrl(big.url), { status: 'ok', detail: { status: 'ok', replicas: 'ok', batches: 'ok', node: 'sn1' } });
  } finally {
    await small.close();
    await big.close();
  }
});

doc('malformed or unreachable /health: degraded, saying why', async () => {
  for (const body of ['not json', '', '[1,2]', '{"status":"splendid"}', 'null']) {
    const s = await serve(body);
    try {
      const r = await reportFromHealthUrl(s.url);
      assert.is(r.status, 'degraded', body);
    } finally {
      await s.close();
    }
  }
  const gone = await reportFromHealthUrl('http://127.0.0.1:1/health');
  assert.is(gone.status, 'degraded');
  assert.match(JSON.stringify(gone.detail), /127\.0\.0\.1:1\/health/);
  // While the node is still starting its /health may not listen yet: initializing, not degraded.
  assert.is((await reportFromHealthUrl('http://127.0.0.1:1/health', 2000, 'initializing')).status, 'initializing');
});

doc.run();

// ---------------------------------------------------------------------------------------------

async function enrol(dms: TestDms, name: string, role: NodeRole): Promise<MtlsIdentity> {
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  assert.is(r.health_interval_ms, 200, 'the registration answer names the report period');
  return MtlsIdentity.fromRegistration(r);
}

const stateOf = (dms: TestDms, name: string): string | undefined => dms.server.state.nodes[name]?.state;

const w = suite<{ dms: TestDms }>('health reports reach the DMS; silent nodes are marked down');
w.before(async (ctx) => {
  ctx.dms = await startTestDms({ healthIntervalMs: 200, healthMissedReports: 2 });
});
w.after(async (ctx) => {
  await ctx.dms?.close();
});

w('a reporter moves its node to ready, degraded and back; a refused report is logged once', async ({ dms }) => {
  const id = await enrol(dms, 'sn-h', 'storageNode');
  let status: 'ok' | 'degraded' = 'ok';
  const lines: string[] = [];
  const rep = new HealthReporter({ nodeName: 'sn-h', identity: id, dmsUrl: dms.url, intervalMs: 60_000, source: async () => ({ status, detail: { devices: 1 } }), log: (l) => lines.push(l) });
  assert.is(await rep.reportNow(), 'ready');
  assert.equal(dms.server.state.nodes['sn-h']?.health?.detail, { devices: 1 });
  status = 'degraded';
  assert.is(await rep.reportNow(), 'degraded');
  // Reporting as another node is refused by the DMS (the certificate names sn-h).
  const impostor = new HealthReporter({ nodeName: 'sn-other', identity: id, dmsUrl: dms.url, intervalMs: 60_000, source: async () => ({ status: 'ok' }), log: (l) => lines.push(l) });
  for (let i = 0; i < 2; i++) {
    const e = await impostor.reportNow().then(
      () => 'accepted',
      (err: unknown) => String(err),
    );
    assert.match(e, /HTTP 403 forbidden/);
  }
  assert.is(lines.filter((l) => l.includes('health report to the DMS failed')).length, 1, lines.join('\n'));
});

w('a node that stops reporting is marked down with the reason; clients, never-reported and quarantined nodes are left alone', async ({ dms }) => {
  const sccId = await enrol(dms, 'scc-h', 'scc');
  await enrol(dms, 'client-h', 'client');
  await enrol(dms, 'sn-silent', 'storageNode');
  const quarantined = await enrol(dms, 'sn-q', 'storageNode');
  const reporter = (id: MtlsIdentity, name: string): HealthReporter => new HealthReporter({ nodeName: name, identity: id, dmsUrl: dms.url, intervalMs: 100, source: async () => ({ status: 'ok' }), log: () => undefined });
  const live = reporter(sccId, 'scc-h');
  await reporter(quarantined, 'sn-q').reportNow();
  assert.is((await dms.call('PUT', '/v1/nodes/sn-q', dms.admin, { role: 'storageNode', state: 'quarantined' })).status, 200);
  assert.is(await live.reportNow(), 'ready');
  live.stop();
  const deadline = Date.now() + 20_000;
  while (stateOf(dms, 'scc-h') !== 'down' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const n = dms.server.state.nodes['scc-h'];
  assert.is(n?.state, 'down');
  assert.is(n?.health?.status, 'down');
  assert.match(String((n?.health?.detail as { reason: string }).reason), /^no health report since .* \(2 reports of every 200 ms missed\)$/);
  assert.is(stateOf(dms, 'client-h'), 'registered');
  assert.is(stateOf(dms, 'sn-silent'), 'registered', 'never reported: not watched');
  assert.is(stateOf(dms, 'sn-q'), 'quarantined');
  // Its next report brings it back.
  assert.is(await live.reportNow(), 'ready');
});

w('a service holding a pre-issued certificate (hd_sql) reports under its certificate name', async ({ dms }) => {
  const id = await enrol(dms, 'hd-sql-h', 'sqlServer');
  const m = id.material;
  const lines: string[] = [];
  const health = startServiceHealth({ dmsUrl: dms.url, tls: { ca: m.caPem, cert: m.certPem, key: m.keyPem }, intervalMs: 100, source: async () => ({ status: 'ok', detail: { upstream: 'proxy' } }), log: (l) => lines.push(l) });
  try {
    assert.is(health.nodeName, 'hd-sql-h');
    const deadline = Date.now() + 20_000;
    while (stateOf(dms, 'hd-sql-h') !== 'ready' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.is(stateOf(dms, 'hd-sql-h'), 'ready', lines.join('\n'));
    assert.equal(dms.server.state.nodes['hd-sql-h']?.health?.detail, { upstream: 'proxy' });
  } finally {
    health.stop();
  }
  // Material that does not fit together is refused at once.
  assert.throws(() => startServiceHealth({ dmsUrl: dms.url, tls: { ca: m.caPem, cert: m.certPem, key: dms.admin.key as string }, source: async () => ({ status: 'ok' }), log: () => undefined }), /the private key does not belong to the certificate/);
});

w.run();

// ---------------------------------------------------------------------------------------------

const g = suite('a restarted DMS gives every node one full allowance before marking it down');

g('HealthWatch.sweep marks nothing before the allowance has passed since the DMS started', async () => {
  const dms = await startTestDms({ healthIntervalMs: 60_000, healthMissedReports: 3 });
  try {
    const id = await enrol2(dms);
    await new HealthReporter({ nodeName: 'sn-g', identity: id, dmsUrl: dms.url, intervalMs: 60_000, source: async () => ({ status: 'ok' }), log: () => undefined }).reportNow();
    const ctx = { store: { get: () => dms.server.state, update: () => Promise.reject(new Error('no write expected')) }, settings: { healthIntervalMs: 60_000, healthMissedReports: 3 }, log: () => undefined } as unknown as DmsContext;
    const watch = new HealthWatch(ctx);
    // The node's report is hours old in this sweep's clock, but the watch itself has just started.
    assert.equal(await watch.sweep(Date.now() + 60_000), []);
  } finally {
    await dms.close();
  }
});

async function enrol2(dms: TestDms): Promise<MtlsIdentity> {
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'sn-g', role: 'storageNode' })).body as { token: string }).token;
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'sn-g', role: 'storageNode', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
  assert.ok(r.success, r.error_message);
  return MtlsIdentity.fromRegistration(r);
}

g.run();
