import { Observable } from 'rxjs';
import { SccNode } from '../../nodes/scc/node';
import { registerReplicaHealth } from '../../nodes/scc/queryHealth';
import { ReplicaSet } from '../../nodes/scc/replicas';
import type { SnTarget } from '../../nodes/scc/settings';
import { tlsReplicaConnector } from '../../nodes/scc/linkTls';
import { replicate } from '../../nodes/scc/replicate';
import type { SinkType } from '../../pipelines/registry';
import { byteSize, int } from '../../pipelines/settings';
import { withNodeIdentity } from './nodeTls';
import { sccSetting } from './sccSetting';

const settings = {
  sn_targets: { ...sccSetting<SnTarget[]>('SN_TARGETS'), required: true, fallback: undefined },
  record_size: sccSetting<number>('RECORD_SIZE'),
  node_name: sccSetting<string>('NODE_NAME'),
  production_ip: sccSetting<string>('PRODUCTION_IP', 'address the ingest listener binds (shown in the start-up line and /health) — PRODUCTION_IP'),
  production_port: sccSetting<number>('PRODUCTION_PORT', 'ingest port (shown in the start-up line and /health) — PRODUCTION_PORT'),
  production_interface: sccSetting<string>('PRODUCTION_INTERFACE'),
  observability_interface: sccSetting<string>('OBSERVABILITY_INTERFACE'),
  observability_port: sccSetting<number>('OBSERVABILITY_PORT'),
  command_interface: sccSetting<string>('COMMAND_INTERFACE'),
  command_port: sccSetting<number>('COMMAND_PORT'),
  log_level: sccSetting<string>('LOG_LEVEL'),
  dms_url: sccSetting<string>('DMS_URL'),
  otel_grpc_url: sccSetting<string>('OTEL_GRPC_URL'),
  master_cpuset: sccSetting<number[]>('MASTER_CPUSET'),
  transport_cores: sccSetting<number>('TRANSPORT_CORES'),
  kv_cores: sccSetting<number>('KV_CORES'),
  platform_opt_in: sccSetting<string>('PLATFORM_OPT_IN'),
  max_lag_bytes: byteSize({ doc: 'record bytes a replica may have unsent before records wait for it', default: 64 * 1024 * 1024, min: 1024 * 1024, max: 16 * 1024 ** 3 }),
  ack_timeout_ms: int({ doc: 'a replica past the lag bound, or not acknowledging an eob, this long is marked down', default: 30_000, min: 100, max: 3_600_000 }),
  catch_up_log_bytes: byteSize({ doc: 'record bytes kept to catch up replicas that were down', default: 256 * 1024 * 1024, min: 0, max: 64 * 1024 ** 3 }),
  max_pending_closes: int({ doc: 'end-of-batch answers awaited at once before the stream waits', default: 64, min: 1, max: 4096 }),
};

/** `replicate`: the SCC's sink — replicates to SN_TARGETS, answers eobs once durable, serves /health and the command API. */
export const replicateStage: SinkType<typeof settings> = {
  name: 'replicate',
  kind: 'sink',
  doc: 'Sends every batch to every healthy replica of SN_TARGETS; acknowledges an eob once every healthy replica has it durable; catches up replicas that were down.',
  unit: 'records',
  input: 'batched-records',
  settings,
  create: (c, ctx) => (input) =>
    withNodeIdentity(c.node_name, (id) =>
      new Observable<never>((subscriber) => {
        const replicas = new ReplicaSet({
          // Registered with the DMS: replication streams are mutual TLS (docs/control-plane.md).
          ...(id && { connect: tlsReplicaConnector(id) }),
          targets: c.sn_targets,
          recordSize: c.record_size,
          maxLagBytes: c.max_lag_bytes,
          ackTimeoutMs: c.ack_timeout_ms,
          logBytes: c.catch_up_log_bytes,
          onEvent: (m) => ctx.report(m),
          onLag: (name, batches) => node.metrics.replicaLag.set({ replica: name }, batches),
        });
        // The queryDispatch stage reads replica health from here (nodes/scc/queryHealth.ts).
        const unregisterHealth = registerReplicaHealth(c.node_name, replicas);
        const node = new SccNode({
          nodeName: c.node_name,
          replicas,
          targets: c.sn_targets,
          production: { ip: c.production_ip, port: c.production_port, interface: c.production_interface },
          observability: { interface: c.observability_interface, port: c.observability_port },
          command: { interface: c.command_interface, port: c.command_port },
          facts: { record_size: c.record_size, log_level: c.log_level, dms_url: c.dms_url },
        });
        if (id) node.observability.addHealthPart('identity', () => id.health());
        let active = true;
        const sub = { inner: undefined as { unsubscribe(): void } | undefined };
        node.start().then(
          () => {
            if (!active) return;
            sub.inner = replicate({
              replicas,
              flow: ctx.flow,
              counters: ctx.counters,
              maxPendingCloses: c.max_pending_closes,
              onProblem: (m) => ctx.report(m),
              onDurable: (records) => {
                node.metrics.recordsIngested.inc(records);
                node.metrics.batchesClosed.inc();
                ctx.progress.addRecords(records);
              },
            })(input).subscribe(subscriber);
          },
          (err: unknown) => subscriber.error(err),
        );
        return () => {
          active = false;
          unregisterHealth();
          sub.inner?.unsubscribe();
          ctx.trackTeardown(replicas.close().then(() => node.stop()));
        };
      }),
    ),
};
