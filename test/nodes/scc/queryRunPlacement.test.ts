/**
 * QueryRun's placement reads replica health once for all of a query's batches (it was read once per
 * batch), and still places by it: a replica that is not healthy gets none of them.
 */
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseHdQuery } from '../../../query/hdQuery';
import { QueryRun } from '../../../nodes/scc/queryRun';
import type { ReplicaState } from '../../../nodes/scc/replicas';

const B = (n: number): string => n.toString(16).padStart(128, '0');
const t = suite('QueryRun placement');

t('one look at replica health places every batch, on healthy replicas only', async () => {
  // Nodes that accept and say nothing: the legs stay open until the run is cancelled.
  const server = net.createServer(() => undefined);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const ids = Array.from({ length: 60 }, (_, i) => B(i + 1));
  const query = parseHdQuery(JSON.stringify({ query_id: 1, dataset: 'flows', batch_ids: ids, return_address: { host: '127.0.0.1', port: 9 }, token: '0102030405060708090a0b0c0d0e0f10' }));
  let looks = 0;
  const states: Record<string, ReplicaState> = { sn1: 'healthy', sn2: 'down', sn3: 'healthy' };
  const run = new QueryRun({
    query,
    targets: ['sn1', 'sn2', 'sn3'].map((name) => ({ name, host: '127.0.0.1', controlPort: port, prodPort: port })),
    recordSize: 150,
    health: () => {
      looks++;
      return states;
    },
    maxQueryMs: 0,
    onFinished: () => undefined,
  });
  try {
    const placed = run.start();
    assert.is(looks, 1, 'health read once for 60 batches');
    assert.is(placed.batches, 60);
    assert.equal(placed.nodes.sort(), ['sn1', 'sn3']);
    assert.equal(placed.missing, []);
  } finally {
    run.cancel();
    server.close();
  }
});

t.run();
