import { Observable } from 'rxjs';
import { bindAddress } from '../../nodes/scc/node';
import { registerLegIdentity } from '../../nodes/scc/linkTls';
import { QueryDispatcher } from '../../nodes/scc/queryDispatcher';
import { replicaHealthOf } from '../../nodes/scc/queryHealth';
import { QueryService } from '../../nodes/scc/queryService';
import type { SnTarget } from '../../nodes/scc/settings';
import type { SinkType } from '../../pipelines/registry';
import { clientTlsOptions } from '../../net/mtls';
import { int } from '../../pipelines/settings';
import { withNodeIdentity } from './nodeTls';
import { sccSetting } from './sccSetting';

const settings = {
  sn_targets: { ...sccSetting<SnTarget[]>('SN_TARGETS'), required: true, fallback: undefined },
  record_size: sccSetting<number>('RECORD_SIZE'),
  node_name: sccSetting<string>('NODE_NAME'),
  command_interface: sccSetting<string>('COMMAND_INTERFACE', 'interface or address the gRPC query service binds; empty: all — COMMAND_INTERFACE'),
  query_grpc_port: sccSetting<number>('QUERY_GRPC_PORT'),
  max_queries: int({ doc: 'queries running at once; a query of query_qos q is admitted below max_queries × (1/2 + (q − 1)/508)', default: 256, min: 1, max: 65_536 }),
  query_roles: sccSetting<string[]>('QUERY_GRPC_ROLES', 'with a DMS identity: certificate roles (OU) that may call QueryDispatch, comma-separated (default proxy only); others get PERMISSION_DENIED — QUERY_GRPC_ROLES'),
  leg_idle_ms: int({ doc: 'how long an idle query-leg connection to a Storage Node is kept for the next query (0: a connection per leg, closed after it) — QUERY_LEG_IDLE_MS', default: 10_000, min: 0, max: 600_000 }),
  max_query_ms: int({ doc: 'a query still running after this long is cancelled and its unfinished batches fail with code 5 (0: never)', default: 3_600_000, min: 0, max: 86_400_000 }),
};

/**
 * `queryDispatch`: the SCC's query side (docs/query.md, "Dispatch"), a standalone sink (a service
 * without inputs). Serves the gRPC service QueryDispatch on QUERY_GRPC_PORT and spreads each query's
 * batches over the healthy replicas (the health the `replicate` stage registers under NODE_NAME).
 * When the run stops, running queries are cancelled on their nodes and the service closes.
 */
export const queryDispatchStage: SinkType<typeof settings> = {
  name: 'queryDispatch',
  kind: 'sink',
  standalone: true,
  doc: 'Serves gRPC QueryDispatch (Dispatch, CancelQuery) on QUERY_GRPC_PORT: checks the return address, admits by query_qos, splits batches over healthy replicas, re-routes on failure, cancels on every node.',
  unit: 'records',
  input: 'batched-records',
  settings,
  create: (c, ctx) => {
    const roles = c.query_roles;
    return (input) =>
      withNodeIdentity(c.node_name, (id) =>
        new Observable<never>((subscriber) => {
          // Registered with the DMS: query legs to the Storage Nodes are mutual TLS.
          const unregisterTls = id ? registerLegIdentity(c.sn_targets, id) : (): void => undefined;
          const dispatcher = new QueryDispatcher({
            nodeName: c.node_name,
            targets: c.sn_targets,
            recordSize: c.record_size,
            health: () => replicaHealthOf(c.node_name)?.states(),
            maxQueries: c.max_queries,
            maxQueryMs: c.max_query_ms,
            legConnections: { idleMs: c.leg_idle_ms },
            // Registered: notices to a client listening with mutual TLS go with the SCC's certificate.
            ...(id && { resultTls: () => clientTlsOptions(id.identity) }),
            onEvent: (m) => ctx.report(m),
          });
          // Registered: the gRPC port is mutual TLS too, open to the certificate roles of query_roles.
          const service = new QueryService(dispatcher, id ? { node: id, roles } : undefined);
          let active = true;
          const host = bindAddress(c.command_interface);
          service.listen(host, c.query_grpc_port).then(
            (port) => {
              if (!active) return;
              const nodes = c.sn_targets.map((t) => `${t.name} ${t.host}:${t.controlPort}`).join(', ');
              process.stderr.write(`scc '${c.node_name}': query dispatch (gRPC QueryDispatch${id ? `, mutual TLS for ${roles.join(', ')}` : ''}) on ${host}:${port}; queries go to the control ports of ${nodes}\n`);
            },
            (err: unknown) => {
              if (active) subscriber.error(err);
            },
          );
          const stop = (): Promise<void> => {
            active = false;
            dispatcher.close();
            unregisterTls();
            return service.close();
          };
          // Standalone: the input carries nothing and completes when the run stops.
          const sub = input.subscribe({
            error: (err: unknown) => subscriber.error(err),
            complete: () => void stop().then(() => subscriber.complete()),
          });
          return () => {
            sub.unsubscribe();
            if (active) ctx.trackTeardown(stop());
          };
        }),
      );
  },
};
