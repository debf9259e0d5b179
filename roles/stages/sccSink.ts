import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Observable } from 'rxjs';
import { Observability } from '../../lib/observability';
import { sccSink, type SccTarget } from '../../sinks/sccSink';
import { sccSinkMetrics } from '../../sinks/sccSinkMetrics';
import { defineSink } from '../../pipelines/registry';
import { bool, int, str, type Setting } from '../../pipelines/settings';
import { usesDeliveryLedger } from '../services/deliveryLedger';
import { processLogger } from '../../lib/logging';

const TARGETS_EXPECTED = 'comma-separated SCC data-plane addresses host:port (the first is primary), at least one';

/** `host:port[,host:port...]`; an IPv6 host is written in brackets. */
const targetsSetting: Setting<readonly SccTarget[]> = {
  expects: TARGETS_EXPECTED,
  doc: 'SCC data-plane addresses (PRODUCTION_IP:PRODUCTION_PORT); without broadcast only the first gets data',
  required: true,
  parse(v) {
    if (typeof v.value !== 'string') return { ok: false, expected: TARGETS_EXPECTED };
    const out: SccTarget[] = [];
    for (const item of v.value.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
      const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(item);
      const port = m ? Number(m[3]) : NaN;
      if (!m || port < 1 || port > 65535) return { ok: false, expected: `${TARGETS_EXPECTED}; '${item}' is not host:port` };
      out.push({ host: m[1] ?? m[2], port });
    }
    if (out.length === 0) return { ok: false, expected: TARGETS_EXPECTED };
    return { ok: true, value: out };
  },
};

const settings = {
  targets: targetsSetting,
  broadcast: bool({ doc: "send every batch to every target (the SDK's broadcast); false: the first target only", default: false }),
  connect_timeout_ms: int({ doc: 'keep trying to reach a target at start this long', default: 30_000, min: 100, max: 3_600_000 }),
  max_pending_batches: int({ doc: 'batches awaiting their acknowledgement at once before the stream waits', default: 64, min: 1, max: 4096 }),
  tls_ca_file: str({ doc: 'HDWP over TLS: PEM file of the CA of the SCCs\' certificates (empty: plain TCP)', default: '', allowEmpty: true }),
  tls_cert_file: str({ doc: 'HDWP over TLS: this ingester\'s certificate (PEM), for mutual TLS', default: '', allowEmpty: true }),
  tls_key_file: str({ doc: 'HDWP over TLS: this ingester\'s private key (PEM)', default: '', allowEmpty: true }),
  node_name: str({ doc: 'name in /health', default: '', allowEmpty: true }),
  observability: bool({ doc: 'serve /health and /metrics', default: true }),
  observability_host: str({ doc: 'address /health and /metrics bind', default: '0.0.0.0' }),
  observability_port: int({ doc: 'port of /health and /metrics (0: a free one)', default: 8080, min: 0, max: 65535 }),
};

/** `sccSink`: the ingester's sink — batches to the SCCs over HDWP; resolves acknowledgements for the sources' commits. */
export const sccSinkStage = defineSink({
  name: 'sccSink',
  kind: 'sink',
  doc: 'Sends batched records to SCCs over HDWP (first target, or all with broadcast); a batch counts once the SCC acknowledged it durable, and sources commit only then.',
  unit: 'records',
  input: 'batched-records',
  settings,
  // The sources using the same ledger commit only what this sink has acknowledged durable.
  uses: { delivery: usesDeliveryLedger },
  create: (c, ctx) => (input) =>
    new Observable<never>((subscriber) => {
      const tls = c.tls_ca_file
        ? { ca: readFileSync(c.tls_ca_file), ...(c.tls_cert_file ? { cert: readFileSync(c.tls_cert_file), key: readFileSync(c.tls_key_file) } : {}) }
        : undefined;
      const obs = c.observability ? new Observability({ role: 'ingester', nodeName: c.node_name || os.hostname(), host: c.observability_host, port: c.observability_port, processMetrics: true }) : undefined;
      const metrics = obs ? sccSinkMetrics(obs.registry, ctx.pipelineCounters) : undefined;
      obs?.addHealthPart('scc', () => ({ targets: c.targets.map((t) => `${t.host}:${t.port}`), broadcast: c.broadcast }));
      let active = true;
      const name = c.node_name || os.hostname();
      // The data path starts at once (sources connect only after every sink subscribed); the
      // observability server comes up beside it.
      obs?.listen().then(
        (addr) => {
          if (!active) return;
          obs.setStatus('ok');
          processLogger().info(`ingester '${name}': sending to ${c.targets.map((t) => `${t.host}:${t.port}`).join(', ')}${c.broadcast ? ' (broadcast)' : ''}; /health and /metrics on ${addr.host}:${addr.port}`);
        },
        (err: unknown) => subscriber.error(new Error(`observability server on ${c.observability_host}:${c.observability_port}: ${(err as Error).message}`)),
      );
      const inner = sccSink({
        targets: c.targets,
        broadcast: c.broadcast,
        connectTimeoutMs: c.connect_timeout_ms,
        maxPendingBatches: c.max_pending_batches,
        tls,
        flow: ctx.flow,
        counters: ctx.counters,
        report: (m) => ctx.report(m),
        onTracker: (t) => ctx.services.delivery.attach(t),
        trackTeardown: (w) => ctx.trackTeardown(w),
        onDurable: (records, bytes, broadcast) => {
          metrics?.batchesClosed.inc();
          if (!broadcast) {
            metrics?.recordsIngested.inc(records);
            metrics?.bytesIngested.inc(bytes);
          }
          ctx.progress.addRecords(records);
        },
      })(input).subscribe(subscriber);
      return () => {
        active = false;
        inner.unsubscribe();
        if (obs) ctx.trackTeardown(obs.close());
      };
    }),
});
