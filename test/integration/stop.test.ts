/**
 * `hd run` stopped by SIGTERM as a real process: sources stop, the stages finish what they hold and
 * their asynchronous teardown (closing servers, aborting open batches) completes before the process
 * exits 0.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpStreamError } from '../../hdwp/hdwpStreamError';
import { FakeSn } from '../nodes/scc/fakeSn';
import { freePort, startHd, waitForPort } from '../support/hdProcess';
import type { ClusterSn } from '../support/cluster';
import { batch, filesOn, recordsOf, RS, until } from './ingestKit';

const HOST = '127.0.0.1';

const stop = suite('hd run stops in order on SIGTERM (real processes)');
stop('Storage Node: an open batch is aborted (its partial segment removed) before the process exits 0', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-stop-sn-'));
  const [prod, cmd, obs] = [await freePort(), await freePort(), await freePort()];
  const configFile = path.join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      node_name: 'sn-stop',
      production_ip: HOST,
      production_port: prod,
      command_port: cmd,
      observability_port: obs,
      reserve_bytes: 0,
      storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }],
    }),
  );
  const hd = startHd(['run', 'pipelines/storage-node.yaml', '--config', configFile, '--quiet']);
  try {
    await waitForPort(HOST, prod, hd);
    const client = await HdwpClient.connect({ host: HOST, port: prod, role: 'scc', datasetId: 'flows', recordSize: RS });
    await client.sendRecords(batch(1), recordsOf(10, 1));
    await client.sendEob(batch(1), 10);
    await client.sendRecords(batch(2), recordsOf(10, 2));
    const sn = { name: 'sn-stop', dir } as ClusterSn;
    await until(() => filesOn(sn, 'flows').partials.length === 1);
    const code = await hd.stop(20_000);
    assert.is(code, 0, hd.output());
    assert.match(hd.output(), /stopped by SIGTERM/);
    const err = (await client.closed) as HdwpStreamError;
    assert.is(err?.frameCode, 9, 'the sender was told the node is shutting down');
    assert.equal(filesOn(sn, 'flows'), { segments: [`${batch(1).toHex()}.hdseg`], partials: [] });
  } finally {
    await hd.kill9();
    rmSync(dir, { recursive: true, force: true });
  }
});
stop('SCC: senders get error 9, an eob already on its way to the replica still reaches it, then exit 0', async () => {
  const replica = new FakeSn(RS);
  await replica.start();
  let release!: () => void;
  replica.holdEobs = new Promise<void>((r) => (release = r));
  const [prod, obs, cmd] = [await freePort(), await freePort(), await freePort()];
  const hd = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: HOST,
    PRODUCTION_PORT: String(prod),
    OBSERVABILITY_PORT: String(obs),
    COMMAND_PORT: String(cmd),
    QUERY_GRPC_PORT: '0',
    SN_TARGETS: `sn1:${HOST}:1:${replica.port}`,
  });
  try {
    await waitForPort(HOST, prod, hd);
    const client = await HdwpClient.connect({ host: HOST, port: prod, role: 'ingestClient', datasetId: 'ds', recordSize: RS });
    await client.sendRecords(batch(1), recordsOf(20, 1));
    const eob = client.sendEob(batch(1), 20).then(
      () => undefined,
      (x: unknown) => x as HdwpStreamError,
    );
    await until(() => replica.eobsSeen === 1);
    const stopping = hd.stop(20_000);
    const err = await eob;
    assert.is(err?.frameCode, 9, 'the waiting sender is told the SCC is shutting down');
    // The replica answers only now: the stopping SCC waited for it rather than dropping the batch.
    release();
    assert.is(await stopping, 0, hd.output());
    assert.ok(replica.batch(1, 'ds')?.equals(recordsOf(20, 1)), 'the batch reached the replica');
  } finally {
    await hd.kill9();
    await replica.kill();
  }
});
stop.run();
