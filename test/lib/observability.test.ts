import { Registry } from 'prom-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ingestMetrics, Observability } from '../../lib/observability';

async function req(base: string, p: string, method = 'GET'): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${base}${p}`, { method });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

const http = suite('Observability over HTTP');
http('health: 503 while initializing, 200 once ok; parts can degrade it', async () => {
  const obs = new Observability({ role: 'scc', nodeName: 'scc1', host: '127.0.0.1', port: 0 });
  let replicas: 'ok' | 'degraded' = 'ok';
  obs.addHealthPart('replicas', () => ({ status: replicas, healthy: replicas === 'ok' ? 2 : 1 }));
  const { host, port } = await obs.listen();
  const base = `http://${host}:${port}`;
  try {
    let r = await req(base, '/health');
    assert.is(r.status, 503);
    let h = JSON.parse(r.body);
    assert.is(h.status, 'initializing');
    assert.is(h.node, 'scc1');
    assert.is(h.role, 'scc');
    assert.equal(h.replicas, { status: 'ok', healthy: 2 });

    obs.setStatus('ok');
    r = await req(base, '/health');
    assert.is(r.status, 200);
    assert.is(JSON.parse(r.body).status, 'ok');

    replicas = 'degraded';
    h = JSON.parse((await req(base, '/health')).body);
    assert.is(h.status, 'degraded');
    assert.is(h.replicas.healthy, 1);
  } finally {
    await obs.close();
  }
});
http('a failing part degrades health instead of failing the endpoint', async () => {
  const obs = new Observability({ role: 'storageNode', nodeName: 'sn', host: '127.0.0.1', port: 0 });
  obs.setStatus('ok');
  obs.addHealthPart('disk', () => {
    throw new Error('statfs failed');
  });
  const { host, port } = await obs.listen();
  try {
    const r = await req(`http://${host}:${port}`, '/health');
    assert.is(r.status, 200);
    assert.equal(JSON.parse(r.body).disk, { status: 'degraded', error: 'statfs failed' });
    assert.is(JSON.parse(r.body).status, 'degraded');
  } finally {
    await obs.close();
  }
});
http('metrics in Prometheus text; routes, 404 and 405', async () => {
  const obs = new Observability({ role: 'storageNode', nodeName: 'sn', host: '127.0.0.1', port: 0 });
  const m = ingestMetrics(obs.registry);
  obs.addRoute('/v1/echo', (q) => ({ status: q.has('x') ? 200 : 400, body: { x: q.get('x') } }));
  const { host, port } = await obs.listen();
  const base = `http://${host}:${port}`;
  try {
    m.recordsIngested.inc(5);
    m.batchesDiscarded.inc({ reason: 'bbn' });
    m.replicaLag.set({ replica: 'sn2' }, 3);
    m.fsyncSeconds.observe(0.002);
    const r = await req(base, '/metrics');
    assert.is(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(r.body, /^hd_records_ingested_total 5$/m);
    assert.match(r.body, /^hd_batches_discarded_total\{reason="bbn"\} 1$/m);
    assert.match(r.body, /^hd_replica_lag_batches\{replica="sn2"\} 3$/m);
    assert.match(r.body, /^hd_fsync_duration_seconds_count 1$/m);
    assert.equal(JSON.parse((await req(base, '/v1/echo?x=1')).body), { x: '1' });
    assert.is((await req(base, '/v1/echo')).status, 400);
    assert.is((await req(base, '/v1/none')).status, 404);
    const post = await req(base, '/health', 'POST');
    assert.is(post.status, 405);
    assert.is(post.headers.get('allow'), 'GET, HEAD');
  } finally {
    await obs.close();
  }
});
http('a busy port rejects listen; close is idempotent', async () => {
  const a = new Observability({ role: 'x', nodeName: 'a', host: '127.0.0.1', port: 0 });
  const { port } = await a.listen();
  const b = new Observability({ role: 'x', nodeName: 'b', host: '127.0.0.1', port });
  try {
    await b.listen();
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /EADDRINUSE/);
  } finally {
    await a.close();
    await a.close();
  }
});
http.run();

const metrics = suite('ingestMetrics');
metrics('registers once per registry and returns the same metrics', () => {
  const reg = new Registry();
  const a = ingestMetrics(reg);
  const b = ingestMetrics(reg);
  assert.is(a.recordsIngested, b.recordsIngested);
  assert.is(reg.getMetricsAsArray().length, 7);
});
metrics('reserved names are refused', () => {
  const obs = new Observability({ role: 'x', nodeName: 'a' });
  assert.throws(() => obs.addHealthPart('status', () => ({})), /reserved/);
  assert.throws(() => obs.addRoute('/metrics', () => ({ status: 200, body: null })), /served by Observability/);
});
metrics.run();
