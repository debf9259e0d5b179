import { serverLink } from '../../net/nodeLinks';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../../hdwp/hdwpServer';
import { DEFAULT_MAX_QUERIES, queryListener } from '../../sources/queryListener';
import { defineSource } from '../../pipelines/registry';
import { int } from '../../pipelines/settings';
import { usesIdentity } from '../services/nodeIdentity';
import { usesStorageNode } from '../services/storageNode';

const settings = {
  max_queries: int({ doc: 'queries running on the node at once; more are refused with error 6 (overloaded)', default: DEFAULT_MAX_QUERIES, min: 1, max: 65535 }),
  handshake_timeout_ms: int({ doc: 'a connection must send hello within this long (0: no limit)', default: DEFAULT_HANDSHAKE_TIMEOUT_MS, min: 0, max: 2 ** 31 - 1 }),
};

/** `queryListener`: the Storage Node's query control port (docs/query.md, docs/storage-node.md "Queries"). */
export const queryListenerStage = defineSource({
  name: 'queryListener',
  kind: 'source',
  doc: "Accepts SCC control connections (hello role scc) on the Storage Node's command_port (HDWP query and cancel frames); emits one element per valid query, answers bad ones with error 11.",
  unit: 'records',
  output: 'queries',
  settings,
  // The node's config.json gives the address: production_ip:command_port.
  uses: { node: usesStorageNode, identity: usesIdentity },
  create: (c, ctx) => {
    const { node, identity: id } = ctx.services;
    return queryListener({
      host: node.config.productionIp,
      port: node.config.commandPort,
      maxQueries: c.max_queries,
      handshakeTimeoutMs: c.handshake_timeout_ms,
      counters: ctx.counters,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w),
      // Registered with the DMS: only SCC certificates from our CA reach the command port.
      ...(id && { link: serverLink(id, 'command', ['scc']) }),
    });
  },
});
