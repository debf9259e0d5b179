import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { HashChain } from '../../../engine-rs/hashChain';
import { HdwpClient } from '../../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../../hdwp/hdwpStreamError';
import { freePort, startHd, waitForOutput, waitForPort } from '../../support/hdProcess';
import { FakeSn } from './fakeSn';

const RS = 150;
const recordsOf = (count: number, seed: number): Buffer => {
  const b = Buffer.alloc(count * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 13 + seed) & 0xff;
  return b;
};

const scc = suite('hd run pipelines/scc.yaml (real process, real sockets)');
scc('ingest through the SCC lands byte-identical on both replicas, with the closing hash; /health and the command port answer', async () => {
  const sns = [new FakeSn(RS), new FakeSn(RS)];
  for (const s of sns) await s.start();
  const [prod, obs, cmd] = [await freePort(), await freePort(), await freePort()];
  const hd = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: '127.0.0.1',
    PRODUCTION_PORT: String(prod),
    OBSERVABILITY_PORT: String(obs),
    COMMAND_PORT: String(cmd),
    QUERY_GRPC_PORT: '0',
    SN_TARGETS: `sn1:127.0.0.1:1:${sns[0].port},sn2:127.0.0.1:1:${sns[1].port}`,
    NODE_NAME: 'scc-test',
  });
  try {
    await waitForPort('127.0.0.1', prod, hd);
    await waitForPort('127.0.0.1', cmd, hd);
    const startLine = new RegExp(`scc 'scc-test': ingest \\(HDWP\\) on 127\\.0\\.0\\.1:${prod}; replicas sn1 127\\.0\\.0\\.1:${sns[0].port}, sn2 127\\.0\\.0\\.1:${sns[1].port}`);
    await waitForOutput(hd, startLine);
    assert.match(hd.output(), startLine);

    const client = await HdwpClient.connect({ host: '127.0.0.1', port: prod, role: 'ingestClient', datasetId: 'ds', recordSize: RS });
    const data = recordsOf(1000, 1);
    const b = generateBatchIdNumber(1);
    await client.sendRecords(b, data);
    const ack = await client.sendEob(b, 1000);
    const chain = new HashChain(b, { recordSize: RS });
    await chain.update(data);
    const want = chain.finish().closingHash;
    assert.ok(Buffer.from(ack.closingHash).equals(want), 'the ack carries the SCC closing hash');
    for (const sn of sns) assert.ok(sn.batch(1)?.equals(data), 'both replicas hold the batch');

    // A record count the SCC did not see: refused, and the stream goes on.
    await client.sendRecords(generateBatchIdNumber(2), recordsOf(5, 2));
    const refused = await client.sendEob(generateBatchIdNumber(2), 6).then(() => undefined, (e: unknown) => e);
    assert.instance(refused, HdwpStreamError);
    assert.match(String((refused as Error).message), /its eob counts 6 records, 5 arrived/);
    for (const sn of sns) assert.is(sn.batch(2), undefined);
    await client.close();

    const health = (await (await fetch(`http://127.0.0.1:${obs}/health`)).json()) as { status: string; role: string; replicas: { healthy: number; replicas: { name: string; state: string }[] } };
    assert.is(health.role, 'scc');
    assert.is(health.status, 'ok');
    assert.equal(health.replicas.replicas.map((r) => `${r.name} ${r.state}`), ['sn1 healthy', 'sn2 healthy']);
    const stop = await fetch(`http://127.0.0.1:${cmd}/v1/query/stop`, { method: 'POST', body: '{}' });
    assert.is(stop.status, 410);
    assert.match(JSON.stringify(await stop.json()), /CancelQuery/);
  } finally {
    await hd.stop();
    for (const s of sns) await s.kill();
  }
});
scc('a bad variable stops start-up with a message naming it', async () => {
  const hd = startHd(['run', 'pipelines/scc.yaml'], { SN_TARGETS: 'sn1:127.0.0.1:1:2', HASH_ALGORITHM: 'md5', TIMEOUT_ACTION: 'drop' });
  const code = await hd.exited;
  assert.is(code, 1);
  assert.match(hd.output(), /hash_algorithm' expects one of sha512, sha256, blake3, got "md5" \(from HASH_ALGORITHM\)/);
  assert.match(hd.output(), /timeout_action' expects one of EOB, BBN, got "drop" \(from TIMEOUT_ACTION\)/);
});
scc.run();
