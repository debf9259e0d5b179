import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Counter, Histogram } from 'prom-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Observability } from '../../lib/observability';
import { startOtlpMetrics } from '../../lib/otlpMetrics';
import { freePort, startHd, waitForPort } from '../support/hdProcess';
import { startOtlpMetricsReceiver } from './otlpMetricsReceiver';

const root = path.resolve(__dirname, '..', '..');

/** Metric names of the "Metrics" table of docs/observability.md. */
function documentedNames(): Set<string> {
  const doc = readFileSync(path.join(root, 'docs', 'observability.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Metrics'), doc.indexOf('\n## ', doc.indexOf('## Metrics') + 3));
  return new Set([...section.matchAll(/^\| `([a-z_:][a-z0-9_:]*)` \|/gm)].map((m) => m[1]));
}

/** Every `hd_*` metric name a non-test source file registers. */
function registeredNames(): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir)) {
      if (['node_modules', 'dist', 'test', '.git', 'engine-rs', 'web', 'bench'].includes(e)) continue;
      const p = path.join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const text = readFileSync(p, 'utf8');
        if (!/new (Counter|Gauge|Histogram|Summary)\b|PER_STAGE/.test(text)) continue;
        for (const m of text.matchAll(/'(hd_[a-z0-9_]+)'/g)) if (/_(total|seconds|bytes|open|lag_batches|held|active|version|nodes)$/.test(m[1])) out.add(m[1]);
      }
    }
  };
  walk(root);
  return out;
}

const docs = suite('docs/observability.md metrics table and the Grafana dashboard');
docs('every metric the code registers is documented, and every documented name follows Prometheus conventions', () => {
  const documented = documentedNames();
  assert.ok(documented.size >= 25, `${documented.size} names found`);
  for (const n of registeredNames()) assert.ok(documented.has(n), `${n} is registered but not in docs/observability.md`);
  for (const n of documented) assert.match(n, /^hd_[a-z0-9]+(_[a-z0-9]+)*$/);
});
docs('deploy/grafana/hd.json parses, covers the five areas, and uses only documented metrics', () => {
  const dash = JSON.parse(readFileSync(path.join(root, 'deploy', 'grafana', 'hd.json'), 'utf8')) as { panels: { type: string; title: string; targets?: { expr: string }[] }[] };
  const rows = dash.panels.filter((p) => p.type === 'row').map((p) => p.title);
  assert.equal(rows, ['Ingest', 'Queries', 'Replication', 'Storage', 'Errors']);
  const documented = documentedNames();
  const exprs = dash.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
  assert.ok(exprs.length > 10);
  let used = 0;
  for (const e of exprs)
    for (const m of e.matchAll(/\bhd_[a-z0-9_]+/g)) {
      used++;
      const base = m[0].replace(/_(bucket|sum|count)$/, '');
      assert.ok(documented.has(m[0]) || documented.has(base), `dashboard uses ${m[0]}, not in docs/observability.md`);
    }
  assert.ok(used >= exprs.length);
});

const otlp = suite('metrics over OTLP/gRPC');
otlp('a registry is exported to a real gRPC receiver: counter, labelled counter and histogram by name, with the node as resource', async () => {
  const rx = await startOtlpMetricsReceiver();
  const obs = new Observability({ role: 'test', nodeName: 'n1', port: 0 });
  try {
    new Counter({ name: 'hd_test_things_total', help: 'things', registers: [obs.registry] }).inc(3);
    new Counter({ name: 'hd_test_results_total', help: 'results', labelNames: ['result'], registers: [obs.registry] }).inc({ result: 'ok' });
    new Histogram({ name: 'hd_test_duration_seconds', help: 'durations', buckets: [0.1, 1], registers: [obs.registry] }).observe(0.5);
    const exp = startOtlpMetrics({ url: `grpc://127.0.0.1:${rx.port}`, service: 'test', node: 'n1', registries: () => [obs.registry], intervalMs: 60_000 });
    assert.ok(await exp.exportNow(), 'the receiver accepted the export');
    await exp.stop();
    const got = await rx.waitFor((e) => e.names.includes('hd_test_things_total'));
    assert.equal([...got.names].sort(), ['hd_test_duration_seconds', 'hd_test_results_total', 'hd_test_things_total']);
    assert.equal(got.resources[0]['service.instance.id'], 'n1');
    assert.equal(got.resources[0]['service.name'], 'test');
  } finally {
    await obs.close();
    await rx.close();
  }
});
otlp('a real `hd run` node with OTEL_GRPC_URL sends its /metrics names to the receiver', async () => {
  const rx = await startOtlpMetricsReceiver();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-otlp-'));
  const port = await freePort();
  const hd = startHd(['run', 'pipelines/dms.yaml', '--quiet'], {
    DMS_DATA_DIR: dir, COMMAND_INTERFACE: '127.0.0.1', COMMAND_PORT: String(port), OBSERVABILITY_INTERFACE: '127.0.0.1', OBSERVABILITY_PORT: '0',
    DMS_MIN_KEY_BITS: '2048', DMS_CA_KEY_BITS: '2048', DMS_WEBUX_PORT: '-1', NODE_NAME: 'dms-otlp',
    OTEL_GRPC_URL: `grpc://127.0.0.1:${rx.port}`, OTEL_METRIC_EXPORT_INTERVAL: '300',
  });
  try {
    await waitForPort('127.0.0.1', port, hd, 60_000);
    const got = await rx.waitFor((e) => e.names.includes('hd_dms_registrations_total'));
    assert.ok(got.names.includes('hd_dms_nodes'), got.names.join(','));
    assert.equal(got.resources[0]['service.instance.id'], 'dms-otlp');
    assert.equal(got.resources[0]['service.name'], 'dms');
  } finally {
    await hd.stop();
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

docs.run();
otlp.run();
