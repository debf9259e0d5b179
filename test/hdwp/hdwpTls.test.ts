import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { batch, recordsOf, startServer } from '../sources/hdwpKit';

const key = readFileSync(path.join(__dirname, '../sources/fixtures/tls-test.key'));
const cert = readFileSync(path.join(__dirname, '../sources/fixtures/tls-test.crt'));

const tls = suite('HDWP over TLS');
tls('the same protocol runs over TLS when both sides are given TLS options', async () => {
  const { server, port, seen } = await startServer({ tls: { key, cert } });
  const client = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'flows', recordSize: 8, tls: { ca: cert } });
  await client.sendRecords(batch(1), recordsOf(8, 1000));
  assert.is((await client.sendEob(batch(1), 1000)).recordCount, 1000);
  const frames = seen.frames.get(seen.conns[0].id) ?? [];
  assert.ok(Buffer.concat(frames.flatMap((f) => (f.kind === 'records' ? [f.payload] : []))).equals(recordsOf(8, 1000)));
  await client.close();
  await server.close();
});
tls('a client that does not trust the server certificate cannot connect', async () => {
  const { server, port, seen } = await startServer({ tls: { key, cert } });
  const err = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'flows', recordSize: 8, tls: {} }).catch((e: unknown) => e);
  assert.instance(err, HdwpStreamError);
  assert.is((err as HdwpStreamError).code, 'ERR_HDWP_DISCONNECTED');
  assert.match((err as HdwpStreamError).message, /self[- ]signed/i);
  assert.is(seen.conns.length, 0);
  await server.close();
});
tls.run();
