import { bindAddress } from '../../nodes/scc/node';
import { tlsLegs } from '../../nodes/scc/linkTls';
import { QueryDispatcher } from '../../nodes/scc/queryDispatcher';
import { QueryService } from '../../nodes/scc/queryService';
import { QueryWindowResolver } from '../../nodes/scc/queryWindow';
import type { ServiceType } from '../../pipelines/registry';
import { clientTlsOptions } from '../../net/mtls';
import { int } from '../../pipelines/settings';
import { sccSetting } from '../stages/sccSetting';
import { usesIdentity } from './nodeIdentity';
import { usesSccNode } from './sccNode';
import { processLogger } from '../../lib/logging';

const settings = {
  query_grpc_port: sccSetting<number>('QUERY_GRPC_PORT'),
  max_queries: int({ doc: 'queries running at once; a query of query_qos q is admitted below max_queries × (1/2 + (q − 1)/508)', default: 256, min: 1, max: 65_536 }),
  query_roles: sccSetting<string[]>('QUERY_GRPC_ROLES', 'with a DMS identity: certificate roles (OU) that may call QueryDispatch, comma-separated (default proxy only); others get PERMISSION_DENIED — QUERY_GRPC_ROLES'),
  leg_idle_ms: int({ doc: 'how long an idle query-leg connection to a Storage Node is kept for the next query (0: a connection per leg, closed after it) — QUERY_LEG_IDLE_MS', default: 10_000, min: 0, max: 600_000 }),
  max_query_ms: int({ doc: 'a query still running after this long is cancelled and its unfinished batches fail with code 5 (0: never)', default: 3_600_000, min: 0, max: 86_400_000 }),
};

/**
 * `queryDispatch`: the SCC's query side (docs/query.md, "Dispatch"), a server service. Serves the
 * gRPC service QueryDispatch on QUERY_GRPC_PORT (bound on the SCC node's COMMAND_INTERFACE) and
 * spreads each query's batches over the healthy replicas of the `sccNode` service it uses. When the
 * run stops, running queries are cancelled on their nodes and the service closes.
 */
export const queryDispatchType: ServiceType<typeof settings, { identity: typeof usesIdentity; scc: typeof usesSccNode }, undefined> = {
  name: 'queryDispatch',
  kind: 'service',
  server: true,
  doc: 'Serves gRPC QueryDispatch (Dispatch, CancelQuery) on QUERY_GRPC_PORT: checks the return address, admits by query_qos, splits batches over healthy replicas, re-routes on failure, cancels on every node.',
  settings,
  uses: { identity: usesIdentity, scc: usesSccNode },
  start: async (c, ctx) => {
    const { identity: id, scc } = ctx.services;
    const roles = c.query_roles;
    // A query's time_window is resolved from the healthy replicas' batch index (docs/scc.md, "Time windows at the SCC").
    const windows = new QueryWindowResolver({
      nodeName: scc.nodeName,
      targets: () => scc.targets,
      health: () => scc.replicas.states(),
      observabilityOf: scc.observabilityOf,
      ...(id && { identity: id.identity }),
      log: (m, level) => ctx.report(m, level),
      registry: scc.node.observability.registry,
    });
    const dispatcher = new QueryDispatcher({
      nodeName: scc.nodeName,
      targets: () => scc.targets,
      recordSize: scc.recordSize,
      recordSizeOf: (dataset) => scc.recordSizes.sizeOf(dataset),
      health: () => scc.replicas.states(),
      maxQueries: c.max_queries,
      maxQueryMs: c.max_query_ms,
      legConnections: { idleMs: c.leg_idle_ms },
      // Registered with the DMS: query legs to the Storage Nodes are mutual TLS, and notices to a
      // client listening with mutual TLS go with the SCC's certificate.
      ...(id && { legTls: tlsLegs(id), resultTls: () => clientTlsOptions(id.identity) }),
      onEvent: (m, level) => ctx.report(m, level),
      ...(scc.badBatches && { onBadBatch: (n) => scc.badBatches?.note(n) }),
      windows,
    });
    // Registered: the gRPC port is mutual TLS too, open to the certificate roles of query_roles.
    const service = new QueryService(dispatcher, id ? { node: id, roles } : undefined);
    const stop = (): Promise<void> => {
      dispatcher.close();
      windows.close();
      return service.close();
    };
    const host = bindAddress(scc.commandInterface);
    let port: number;
    try {
      port = await service.listen(host, c.query_grpc_port);
    } catch (err) {
      await stop().catch(() => undefined);
      throw err;
    }
    const nodes = scc.targets.map((t) => `${t.name} ${t.host}:${t.controlPort}`).join(', ');
    processLogger().info(`scc '${scc.nodeName}': query dispatch (gRPC QueryDispatch${id ? `, mutual TLS for ${roles.join(', ')}` : ''}) on ${host}:${port}; queries go to the control ports of ${nodes}`);
    return { value: undefined, stop };
  },
};
