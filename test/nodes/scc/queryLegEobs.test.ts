/**
 * A query leg takes a node's eobs answer (several batches completed at once) as an eob for each
 * listed batch of the leg; a listed batch not on the leg is ignored, and an eobs without the
 * query's block fails the leg.
 */
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BatchID } from '../../../engine-rs/batchId';
import { encodeFrame } from '../../../engine-rs/hdwp';
import { FrameDecoder } from '../../../engine-rs/hdwpDecoder';
import { parseHdQuery } from '../../../query/hdQuery';
import { QueryLeg, type BatchAnswer, type LegListener, type LegOutcome } from '../../../nodes/scc/queryLeg';

const B = (n: number): string => n.toString(16).padStart(128, '0');
const TOKEN = '0102030405060708090a0b0c0d0e0f10';
const query = parseHdQuery(JSON.stringify({ query_id: 4, dataset: 'flows', batch_ids: [B(1), B(2), B(3)], return_address: { host: '127.0.0.1', port: 9 }, token: TOKEN }));

/** A node that answers the query frame with `answer`'s frames. */
async function node(answer: (auth: { queryId: number; token: Uint8Array }) => Buffer[]): Promise<{ port: number; close: () => void }> {
  const server = net.createServer((s) => {
    const d = new FrameDecoder();
    s.on('data', (c) => {
      for (const f of d.push(c)) if (f.kind === 'query') for (const b of answer({ queryId: f.queryId, token: f.token })) s.write(b);
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

function run(port: number, batchIds: string[]): Promise<{ answers: [string, BatchAnswer][]; outcome: LegOutcome }> {
  return new Promise((resolve) => {
    const answers: [string, BatchAnswer][] = [];
    const listener: LegListener = { answer: (_l, hex, a) => void answers.push([hex, a]), end: (_l, outcome) => resolve({ answers, outcome }) };
    new QueryLeg({ node: { name: 'sn1', host: '127.0.0.1', controlPort: port, prodPort: port }, query, batchIds, recordSize: 150, listener }).start();
  });
}

const t = suite('QueryLeg eobs answers');

t('one eobs answers every listed batch of the leg; a listed batch not on the leg is ignored', async () => {
  const n = await node((auth) => [encodeFrame({ kind: 'eobs', batches: [B(1), B(9), B(3)].map((h) => ({ batchId: BatchID.fromHex(h), recordCount: 5 })), auth }), encodeFrame({ kind: 'eob', batchId: BatchID.fromHex(B(2)), recordCount: 0, closingHash: new Uint8Array(0), auth })]);
  try {
    const { answers, outcome } = await run(n.port, [B(1), B(2), B(3)]);
    assert.equal(answers, [[B(1), { kind: 'eob' }], [B(3), { kind: 'eob' }], [B(2), { kind: 'eob' }]]);
    assert.equal(outcome, { kind: 'done' });
  } finally {
    n.close();
  }
});

t('an eobs without the query block fails the leg, its batches re-routable', async () => {
  const n = await node(() => [encodeFrame({ kind: 'eobs', batches: [{ batchId: BatchID.fromHex(B(1)), recordCount: 1 }] })]);
  try {
    const { answers, outcome } = await run(n.port, [B(1)]);
    assert.equal(answers, []);
    assert.is(outcome.kind, 'failed');
    assert.ok(outcome.kind === 'failed' && outcome.retry);
    assert.match(outcome.kind === 'failed' ? outcome.message : '', /eobs from sn1 .* without this query's block/);
  } finally {
    n.close();
  }
});

t.run();
