/**
 * The Storage Node's query service as a real process: `hd run pipelines/storage-node.yaml --config`
 * started through tsx, batches ingested on its production port, a query on its command port,
 * results at a ResultListener, and a SIGTERM while a query is still streaming.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { serializeHdQuery } from '../../../query/hdQuery';
import { HdwpServer } from '../../../hdwp/hdwpServer';
import { freePort, startHd, waitForPort, type HdProcess } from '../../support/hdProcess';
import { batchOf, ControlPeer, ingestBatches, queryAndCollect, DS, R, SCHEMA, TestClient, untilOk } from './queryKit';

const HOST = '127.0.0.1';
const proc = suite('storage-node.yaml as a process: queries on command_port');

let dir: string;
let sn: HdProcess;
let ports: { production: number; command: number; obs: number };

proc.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-snqproc-'));
  ports = { production: await freePort(), command: await freePort(), obs: await freePort() };
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', `${DS}.json`), JSON.stringify(SCHEMA));
  const config = path.join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      node_name: 'sn-proc',
      production_ip: HOST,
      production_port: ports.production,
      command_port: ports.command,
      observability_port: ports.obs,
      reserve_bytes: 0,
      filter_device_selector: 'gpu',
      storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }],
    }),
  );
  sn = startHd(['run', 'pipelines/storage-node.yaml', '--config', config, '--quiet'], {
    HASH_ALGORITHM: 'sha256',
    HASH_CHAIN_BLOCK_SIZE: '16',
    RECORD_SIZE: String(R),
    SCHEMA_DIR: path.join(dir, 'schemas'),
  });
  await waitForPort(HOST, ports.production, sn);
  await waitForPort(HOST, ports.command, sn);
});
proc.after(async () => {
  await sn.stop();
  rmSync(dir, { recursive: true, force: true });
});

proc('ingest, then a query streams its batches to the return address; SIGTERM mid-query stops the node in order', async () => {
  const batches = [batchOf(1, 500), batchOf(2, 20), batchOf(3, 64000)];
  await ingestBatches(HOST, ports.production, batches);

  const client = await TestClient.start();
  const scc = await ControlPeer.open(ports.command);
  const got = await queryAndCollect(client, scc, batches.slice(0, 2).map((b) => b.id));
  for (const b of batches.slice(0, 2)) assert.ok(got.get(b.id.toHex())?.equals(b.data));
  // gpu: one line at start, the GPU in use or why the cpu kernel filters (no driver on a machine without one).
  assert.match(sn.output(), /filter_device_selector 'gpu': (.+; query filters run on the cpu kernel|scan steps of 16 MiB or more filter on .+)/);
  assert.is(sn.output().match(/filter_device_selector 'gpu'/g)?.length, 1);
  const health = (await (await fetch(`http://${HOST}:${ports.obs}/health`)).json()) as { filterDevice: Record<string, unknown> };
  const device = health.filterDevice;
  assert.is(device.selector, 'gpu');
  assert.ok(device.runsOn === 'cpu' || device.runsOn === 'gpu', JSON.stringify(device));
  assert.is(device.enabled, device.runsOn === 'gpu');
  if (device.runsOn === 'cpu') assert.match(String(device.detail), /CUDA|NVRTC|GPU/);
  const metrics = await (await fetch(`http://${HOST}:${ports.obs}/metrics`)).text();
  assert.match(metrics, new RegExp(`^hd_sn_gpu_enabled ${device.runsOn === 'gpu' ? 1 : 0}$`, 'm'));
  assert.match(metrics, /^hd_sn_gpu_bytes_filtered_total \d+$/m);

  // A client that never takes its records (no credit back): the query is still streaming at SIGTERM.
  let frames = 0;
  const stuck = new HdwpServer({
    host: HOST,
    port: 0,
    role: 'queryClient',
    roles: ['storageNode'],
    creditWindow: 8192,
    onConnection: () => ({
      onFrame: () => {
        frames++;
        return new Promise<void>(() => undefined);
      },
    }),
  });
  const stuckAt = await stuck.listen();
  const big = client.query([batches[2].id]);
  const scc2 = await ControlPeer.open(ports.command);
  scc2.sendQuery(big.auth, serializeHdQuery({ ...big.q, returnAddress: { host: HOST, port: stuckAt.port } }));
  try {
    await untilOk(() => frames > 0);
    const code = await sn.stop(15000);
    assert.is(code, 0, sn.output());
    await scc2.closed;
    assert.is(scc2.of(big.auth.queryId).filter((f) => f.kind === 'eob').length, 0, 'the big batch never finished');
  } finally {
    await stuck.close();
  }
  scc.close();
  await client.close();
});

proc.run();
