import { DEFAULT_RESULT_CONNECT_TIMEOUT_MS, resultStream } from '../../sinks/resultStream';
import { clientTlsOptions } from '../../net/mtls';
import { defineSink } from '../../pipelines/registry';
import { byteSize, int } from '../../pipelines/settings';
import { usesIdentity } from '../services/nodeIdentity';
import { usesStorageNode } from '../services/storageNode';

const settings = {
  connect_timeout_ms: int({ doc: "time to connect to a query's return address and exchange hello", default: DEFAULT_RESULT_CONNECT_TIMEOUT_MS, min: 100, max: 600_000 }),
  idle_ms: int({ doc: "how long a finished query's result connection to a return address is kept for the next query to it — RESULT_STREAM_IDLE_MS (ours); 0: a connection per query", default: 10_000, min: 0, max: 600_000 }),
  max_frame_bytes: byteSize({ doc: 'largest records frame written to a client, header included', default: 1024 * 1024, min: 4096, max: 16 * 1024 * 1024 }),
};

/** `resultStream`: writes each query's results to its return address (docs/query.md, "Storage Node scan and result streams"). */
export const resultStreamStage = defineSink({
  name: 'resultStream',
  kind: 'sink',
  doc: "Streams each query's results to its return address over HDWP (hello role 4, query block on every frame, credit flow control); echoes every eob / bbn to the SCC.",
  unit: 'records',
  input: 'query-results',
  settings,
  uses: { node: usesStorageNode, identity: usesIdentity },
  create: (c, ctx) => {
    const id = ctx.services.identity;
    return resultStream({
      connectTimeoutMs: c.connect_timeout_ms,
      idleMs: c.idle_ms,
      maxFrameBytes: c.max_frame_bytes,
      // The node's name, in messages.
      nodeName: ctx.services.node.config.nodeName,
      counters: ctx.counters,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w),
      // Registered: a client listening with mutual TLS (return_address.tls) gets the node's certificate.
      ...(id && { tls: () => clientTlsOptions(id.identity) }),
    });
  },
});
