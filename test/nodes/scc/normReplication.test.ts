/**
 * NORM replication end to end (docs/replication-norm.md): an SCC and three Storage Nodes, real `hd`
 * processes, the SCC sending each batch once to a NORM multicast group on loopback inside a network
 * namespace with 5% of the group's datagrams dropped. Every batch must be durable and identical on
 * every replica (segment bytes, hash chain verified) when the client's eob is acknowledged, and a
 * replica killed mid-batch must catch up after it restarts.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber, readSegment, verifySegment, type BatchID } from '../../../engine-rs/index';
import { HdwpClient } from '../../../hdwp/hdwpClient';
import { freePort, startHd, waitForPort, type HdProcess } from '../../support/hdProcess';
import { IN_NETNS, NETNS_LOSS, runInNetns } from '../../support/netns';

const RS = 150;
const DS = 'norm-ds';
const recordsOf = (count: number, seed: number): Buffer => {
  const b = Buffer.alloc(count * RS);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
};
const NORM_ENV = { REPLICATION: 'norm', NORM_INTERFACE: 'lo', NORM_PORT: '6988', NORM_GROUP: '239.192.0.88', NORM_TX_RATE: '20000000', NORM_EOB_WAIT_MS: '3000' };

interface Sn {
  readonly name: string;
  readonly dir: string;
  readonly prod: number;
  readonly cmd: number;
  readonly obs: number;
  hd: HdProcess;
}

async function startSn(name: string, prev?: Sn): Promise<Sn> {
  const dir = prev?.dir ?? mkdtempSync(path.join(os.tmpdir(), `hd-norm-${name}-`));
  const [prod, cmd, obs] = prev ? [prev.prod, prev.cmd, prev.obs] : [await freePort(), await freePort(), await freePort()];
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ node_name: name, production_ip: '127.0.0.1', production_port: prod, command_port: cmd, observability_port: obs, reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }));
  const hd = startHd(['run', 'pipelines/storage-node.yaml', '--config', file, '--quiet'], NORM_ENV);
  await waitForPort('127.0.0.1', prod, hd, 30_000);
  return { name, dir, prod, cmd, obs, hd };
}

const segmentOf = (sn: Sn, id: BatchID): string => path.join(sn.dir, 'd0', DS, `${id.toHex()}.hdseg`);

/** The batch is committed on `sn` with exactly `data`, and its hash chain verifies to `closingHash`. */
async function assertDurable(sn: Sn, id: BatchID, data: Buffer, closingHash: Uint8Array): Promise<void> {
  const seg = segmentOf(sn, id);
  assert.ok(existsSync(seg), `${sn.name} holds batch ${id.toHex()} when the client's eob is acknowledged`);
  assert.ok((await readSegment(seg)).equals(data), `${sn.name}: the segment's records are the batch's`);
  const v = await verifySegment(seg);
  assert.ok(v.ok && v.closingHash.equals(Buffer.from(closingHash)), `${sn.name}: the hash chain verifies to the acknowledged closing hash`);
}

const health = async (port: number): Promise<Record<string, unknown>> => (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as Record<string, unknown>;

if (!IN_NETNS) {
  const outer = suite('NORM replication (run in a network namespace with multicast on lo and 5% loss)');
  outer('an SCC and three Storage Nodes over NORM: every batch durable and identical everywhere; a killed replica catches up', () => {
    const r = runInNetns(__filename, { lossPercent: 5, udpPort: 6988, timeoutMs: 150_000 });
    if (r.status !== 0) process.stderr.write(r.output);
    assert.is(r.status, 0, 'the namespaced run passed (its output is above)');
    assert.match(r.output, /replicated \d+ batches over NORM/);
  });
  outer('replication: norm without libnorm stops the SCC at start, saying what to install', async () => {
    const hd = startHd(['run', 'pipelines/scc.yaml', '--quiet'], { ...NORM_ENV, SN_TARGETS: 'sn1:127.0.0.1:1:2', QUERY_GRPC_PORT: '0', PRODUCTION_PORT: '0', COMMAND_PORT: String(await freePort()), OBSERVABILITY_PORT: String(await freePort()), HD_LIBNORM_PATH: '/nonexistent/libnorm.so.1' });
    assert.is(await hd.exited, 1);
    assert.match(hd.output(), /replication: norm needs NRL's NORM library[^\n]*apt-get install libnorm1/);
  });
  outer('a NORM_GROUP that is no address is refused at start', async () => {
    const hd = startHd(['run', 'pipelines/scc.yaml', '--quiet'], { ...NORM_ENV, NORM_GROUP: 'multicast-group', SN_TARGETS: 'sn1:127.0.0.1:1:2', QUERY_GRPC_PORT: '0', PRODUCTION_PORT: '0', COMMAND_PORT: String(await freePort()), OBSERVABILITY_PORT: String(await freePort()) });
    assert.is(await hd.exited, 1);
    assert.match(hd.output(), /NORM_GROUP must be an IP address, got 'multicast-group'/);
  });
  outer.run();
} else {
  const inner = suite(`NORM replication inside the namespace (loss: ${NETNS_LOSS})`);
  inner('three replicas over NORM with loss, then a replica killed mid-batch catches up', async () => {
    const sns = [await startSn('sn1'), await startSn('sn2'), await startSn('sn3')];
    const [prod, obs, cmd] = [await freePort(), await freePort(), await freePort()];
    const scc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
      ...NORM_ENV,
      PRODUCTION_IP: '127.0.0.1',
      PRODUCTION_PORT: String(prod),
      OBSERVABILITY_PORT: String(obs),
      COMMAND_PORT: String(cmd),
      QUERY_GRPC_PORT: '0',
      ACK_TIMEOUT_MS: '20000',
      SN_TARGETS: sns.map((s) => `${s.name}:127.0.0.1:${s.cmd}:${s.prod}`).join(','),
      NODE_NAME: 'scc-norm',
    });
    let client: HdwpClient | undefined;
    try {
      await waitForPort('127.0.0.1', prod, scc, 30_000);
      client = await HdwpClient.connect({ host: '127.0.0.1', port: prod, role: 'ingestClient', datasetId: DS, recordSize: RS });
      const sent: [BatchID, Buffer][] = [];
      let bytes = 0;
      for (let i = 1; i <= 6; i++) {
        const id = generateBatchIdNumber(i);
        const data = recordsOf(2000 + i * 500, i);
        await client.sendRecords(id, data);
        const ack = await client.sendEob(id, data.length / RS);
        // Acknowledged only once every replica has it durable: it is on all three now.
        for (const sn of sns) await assertDurable(sn, id, data, ack.closingHash);
        sent.push([id, data]);
        bytes += data.length;
      }
      const h = (await health(obs)) as { replicas: { replication: { mode: string; bytes_sent: number }; replicas: { name: string; state: string; tcp_resends: number }[] } };
      assert.is(h.replicas.replication.mode, 'norm');
      // Sent once for the three replicas (plus frame headers and NORM's repairs are not counted here).
      assert.ok(h.replicas.replication.bytes_sent >= bytes && h.replicas.replication.bytes_sent < bytes * 1.1, `bytes on the group ${h.replicas.replication.bytes_sent} for ${bytes} record bytes`);
      const resends = h.replicas.replicas.map((r) => r.tcp_resends).reduce((a, b) => a + b, 0);
      const groups = await Promise.all(sns.map(async (sn) => JSON.stringify(((await health(sn.obs)) as { replication: unknown }).replication)));
      console.log(`group: scc ${JSON.stringify(h.replicas.replication)}; ${groups.join('; ')}`);
      // NORM repaired the loss itself for most batches; a batch a replica could not complete in time came over TCP instead.
      assert.ok(resends < sent.length * sns.length, `every batch had to be resent over TCP (${resends})`);
      const snHealth = (await health(sns[0].obs)) as { replication: { mode: string; bytes_received: number } };
      assert.is(snHealth.replication.mode, 'norm');
      assert.ok(snHealth.replication.bytes_received >= bytes, 'sn1 received the batches on the group');

      // sn3 dies mid-batch: the batch is durable on the other two, and sn3 catches up once back.
      const id7 = generateBatchIdNumber(7);
      const d7 = recordsOf(6000, 7);
      await client.sendRecords(id7, d7.subarray(0, 3000 * RS));
      await new Promise((r) => setTimeout(r, 200));
      await sns[2].hd.kill9();
      await client.sendRecords(id7, d7.subarray(3000 * RS));
      const ack7 = await client.sendEob(id7, 6000);
      for (const sn of sns.slice(0, 2)) await assertDurable(sn, id7, d7, ack7.closingHash);
      sns[2].hd = (await startSn('sn3', sns[2])).hd;
      const deadline = Date.now() + 40_000;
      let state = '';
      while (Date.now() < deadline) {
        const hr = (await health(obs)) as { replicas: { replicas: { name: string; state: string }[] } };
        state = hr.replicas.replicas.find((r) => r.name === 'sn3')?.state ?? '';
        if (state === 'healthy' && existsSync(segmentOf(sns[2], id7))) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.is(state, 'healthy', 'sn3 is healthy again');
      await assertDurable(sns[2], id7, d7, ack7.closingHash);
      // And it is back on the group: the next batch reaches all three.
      const id8 = generateBatchIdNumber(8);
      const d8 = recordsOf(3000, 8);
      await client.sendRecords(id8, d8);
      const ack8 = await client.sendEob(id8, 3000);
      for (const sn of sns) await assertDurable(sn, id8, d8, ack8.closingHash);
      for (const [id, data] of sent) assert.ok((await readSegment(segmentOf(sns[2], id))).equals(data), 'sn3 still holds the earlier batches');
      console.log(`replicated ${sent.length + 2} batches over NORM (loss: ${NETNS_LOSS}); batches resent over TCP after losses beyond repair: ${resends}`);
    } catch (err) {
      process.stderr.write(`--- scc ---\n${scc.output()}\n`);
      for (const sn of sns) process.stderr.write(`--- ${sn.name} ---\n${sn.hd.output()}\n`);
      throw err;
    } finally {
      await client?.close().catch(() => undefined);
      await scc.stop(5000);
      for (const sn of sns) await sn.hd.stop(5000);
    }
  });
  inner.run();
}
