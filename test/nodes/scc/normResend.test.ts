/**
 * `replication: norm` when a replica misses a batch on the multicast group: the real Storage Node
 * pipeline (joined to a port the SCC does not send to, so it gets nothing there) answers the SCC's
 * TCP eob with a batch mismatch after eob_wait_ms, and the SCC's replica set sends the batch again
 * over TCP — the client's eob is still acknowledged only once the replica has it durable.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, readSegment, verifySegment } from '../../../engine-rs/index';
import { loadPipelineFile } from '../../../pipelines/load';
import { runPipeline } from '../../../pipelines/run';
import { builtinRegistry } from '../../../roles/builtins';
import { NormReplication } from '../../../nodes/scc/normReplication';
import { ReplicaSet } from '../../../nodes/scc/replicas';
import { recordChunk, type BatchedRecordChunk } from '../../../stream/chunk';
import { freePort, waitForPort } from '../../support/hdProcess';

const R = 40;
const yaml = path.resolve(__dirname, '../../../pipelines/storage-node.yaml');

const t = suite('replication: norm, a batch the group did not deliver');
t('the replica answers the eob with a batch mismatch and gets the batch over TCP; durable before the ack', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-normresend-'));
  const port = await freePort();
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ node_name: 'sn-resend', production_ip: '127.0.0.1', production_port: port, command_port: await freePort(), observability_port: await freePort(), reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }));
  const normPort = 22000 + (process.pid % 2000);
  const overrides = { CONFIG_FILE: file, production_ip: '127.0.0.1', production_port: String(port), HASH_ALGORITHM: 'sha256', HASH_CHAIN_BLOCK_SIZE: '16', REPLICATION: 'norm', NORM_GROUP: '239.192.0.78', NORM_PORT: String(normPort + 1), NORM_INTERFACE: 'lo', NORM_EOB_WAIT_MS: '200' };
  const loaded = await loadPipelineFile(yaml, { registry: builtinRegistry(), env: {}, overrides });
  if (!loaded.ok) throw new Error(loaded.problems.map((p) => p.message).join('\n'));
  const abort = new AbortController();
  const run = runPipeline(loaded.pipeline, { signal: abort.signal });
  // The SCC sends to another port: the node's receiver hears nothing.
  const norm = new NormReplication({ group: '239.192.0.78', port: normPort, interface: 'lo', segmentSize: 1200, txRateBps: 50e6 });
  const events: string[] = [];
  const replicas = new ReplicaSet({ targets: [{ name: 'sn1', host: '127.0.0.1', controlPort: 1, prodPort: port }], recordSize: R, ackTimeoutMs: 10_000, norm, onEvent: (m) => events.push(m) });
  try {
    const id = generateBatchIdNumber(5);
    const data = Buffer.alloc(300 * R);
    for (let i = 0; i < data.length; i++) data[i] = (i * 11) & 0xff;
    await waitForPort('127.0.0.1', port); // the node listens once recovery is done
    await replicas.records(recordChunk('ds', R, 300, data, id) as BatchedRecordChunk);
    const res = await replicas.eob({ kind: 'eob', dataset: 'ds', batchId: id, recordCount: 300 });
    assert.equal(res, { ok: true });
    const seg = path.join(dir, 'd0', 'ds', `${id.toHex()}.hdseg`);
    assert.ok((await readSegment(seg)).equals(data), 'durable on the replica when the eob is answered');
    assert.ok((await verifySegment(seg)).ok);
    const h = replicas.health() as { replication: { mode: string; messages: number }; replicas: { tcp_resends: number; state: string }[] };
    assert.is(h.replication.mode, 'norm');
    assert.is(h.replication.messages, 2, 'records and eob went to the group once');
    assert.is(h.replicas[0].tcp_resends, 1);
    assert.is(h.replicas[0].state, 'healthy', 'a resend is no failure of the replica');
    assert.ok(events.some((e) => /sn1 missed records of batch .* on the multicast group: sending it over TCP/.test(e)), events.join('\n'));
  } finally {
    await replicas.close();
    abort.abort();
    await run;
  }
});
t("a Storage Node with REPLICATION=norm and a NORM_GROUP that is no address does not start, naming it", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-normbad-'));
  const port = await freePort();
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ node_name: 'sn-bad', production_ip: '127.0.0.1', production_port: port, command_port: await freePort(), observability_port: await freePort(), reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }));
  const overrides = { CONFIG_FILE: file, production_ip: '127.0.0.1', production_port: String(port), REPLICATION: 'norm', NORM_GROUP: 'the-group' };
  const loaded = await loadPipelineFile(yaml, { registry: builtinRegistry(), env: {}, overrides });
  if (!loaded.ok) throw new Error(loaded.problems.map((p) => p.message).join('\n'));
  const result = await runPipeline(loaded.pipeline, { signal: new AbortController().signal });
  assert.is(result.status, 'failed');
  assert.match(String(result.error?.message), /norm_group \(NORM_GROUP\) must be an IP address, got 'the-group'/);
});
t.run();
