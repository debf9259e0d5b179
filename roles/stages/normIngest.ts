import { isIP } from 'node:net';
import { normIngest } from '../../nodes/storageNode/normReceiver';
import { defineOperator } from '../../pipelines/registry';
import { int, oneOf, str } from '../../pipelines/settings';
import { usesStorageNode } from '../services/storageNode';

const settings = {
  replication: oneOf(['tcp', 'norm'] as const, { doc: "how the SCC replicates to this node (the cluster's REPLICATION): tcp, one HDWP stream per replica (this stage passes its input on), or norm, batches on the NORM multicast group (docs/replication-norm.md)", default: 'tcp' }),
  norm_group: str({ doc: 'NORM multicast group the SCC sends batches to (NORM_GROUP)', default: '239.192.0.88' }),
  norm_port: int({ doc: "NORM UDP port (NORM_PORT; the reference's 6988)", default: 6988, min: 1, max: 65535 }),
  norm_interface: str({ doc: 'interface the group is joined on (NORM_INTERFACE); empty: the default route\'s', default: '', allowEmpty: true }),
  norm_node_id: int({ doc: 'this node\'s NORM id, unique in the group (the SCC is 1); 0: a random one', default: 0, min: 0, max: 2 ** 31 - 1 }),
  eob_wait_ms: int({ doc: "how long an eob waits for the group's copy of its batch; then the SCC is asked to send the batch over TCP", default: 10_000, min: 10, max: 3_600_000 }),
};

/** `normIngest`: a Storage Node's batches from the SCC's NORM multicast group, merged with its TCP ingest (docs/replication-norm.md). */
export const normIngestStage = defineOperator({
  name: 'normIngest',
  kind: 'operator',
  doc: "With replication: norm, joins the SCC's NORM multicast group and merges its batches into the TCP ingest stream, holding each TCP eob until the group's copy of its batch is complete; with tcp, passes its input on.",
  unit: 'records',
  input: 'batched-records',
  output: 'batched-records',
  settings,
  uses: { node: usesStorageNode },
  create: (c, ctx) => {
    if (c.replication === 'tcp') return (input) => input;
    if (isIP(c.norm_group) === 0) throw new Error(`norm_group (NORM_GROUP) must be an IP address, got '${c.norm_group}'`);
    const node = ctx.services.node;
    return normIngest({
      receiver: { address: c.norm_group, port: c.norm_port, interface: c.norm_interface, nodeId: c.norm_node_id || 2 + Math.floor(Math.random() * (2 ** 31 - 3)) },
      eobWaitMs: c.eob_wait_ms,
      counters: ctx.counters,
      report: (m) => ctx.report(m),
      onHealth: (h) => node.observability.addHealthPart('replication', () => ({ status: 'ok', ...h() })),
    });
  },
});
