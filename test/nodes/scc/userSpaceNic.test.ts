/**
 * An SCC whose PRODUCTION_INTERFACE is a user-space NIC (DPDK's net_tap; docs/kernel-bypass.md), as
 * a real process: ingest clients reach it through the NIC, and it replicates to Storage Nodes of
 * the data-plane subnet through the NIC; the kernel's side of the link is the tap interface. Needs
 * root, /dev/net/tun and a build with DPDK; without them it says SKIPPED and why.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { HdwpClient } from '../../../hdwp/hdwpClient';
import { userSpaceNicUnavailable } from '../../../transport/userSpaceNic';
import { freePort, startHd, waitForOutput, waitForPort } from '../../support/hdProcess';
import { FakeSn } from './fakeSn';

const TAP = 'hdscc0';
const KERNEL_IP = '198.18.63.1';
const NIC_IP = '198.18.63.2';
const RS = 150;
const skipped = userSpaceNicUnavailable({ tap: true });

const t = suite('an SCC with a user-space NIC (DPDK net_tap) as PRODUCTION_INTERFACE');

t('ingest arrives through the NIC and is replicated through it to both Storage Nodes', async () => {
  if (skipped) {
    console.log(`SKIPPED an SCC with a user-space NIC: ${skipped}`);
    return;
  }
  // The Storage Nodes are the kernel's, on every address: the tap's appears once the SCC has started DPDK.
  const sns = [new FakeSn(RS, '0.0.0.0'), new FakeSn(RS, '0.0.0.0')];
  for (const s of sns) await s.start();
  const [obs, cmd] = [await freePort(), await freePort()];
  const hd = startHd(['run', 'pipelines/scc.yaml'], {
    PRODUCTION_INTERFACE: `dpdk:net_tap0,iface=${TAP}`,
    PRODUCTION_IP: NIC_IP,
    PRODUCTION_PORT: '6987',
    PLATFORM_DATA_PLANE_SUBNET: '198.18.63.0/24',
    OBSERVABILITY_INTERFACE: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    COMMAND_INTERFACE: '127.0.0.1',
    COMMAND_PORT: String(cmd),
    QUERY_GRPC_PORT: '0',
    SN_TARGETS: `sn1:${KERNEL_IP}:1:${sns[0].port},sn2:${KERNEL_IP}:1:${sns[1].port}`,
    NODE_NAME: 'scc-nic',
  });
  try {
    const deadline = Date.now() + 30_000;
    while (!existsSync(`/sys/class/net/${TAP}`)) {
      if (Date.now() > deadline) throw new Error(`no ${TAP} after 30 s:\n${hd.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    execFileSync('ip', ['addr', 'add', `${KERNEL_IP}/24`, 'dev', TAP]);
    execFileSync('ip', ['link', 'set', TAP, 'up']);
    await waitForPort(NIC_IP, 6987, hd, 30_000);
    await waitForOutput(hd, /production traffic on the user-space NIC net_tap0 \(DPDK, MAC [0-9a-f:]{17}.*\): 198\.18\.63\.2\/24/);

    const client = await HdwpClient.connect({ host: NIC_IP, port: 6987, role: 'ingestClient', datasetId: 'ds', recordSize: RS });
    const data = Buffer.alloc(20_000 * RS, 7);
    for (let i = 0; i < data.length; i += 4) data.writeUInt32LE(i, i);
    const b = generateBatchIdNumber(1);
    await client.sendRecords(b, data);
    await client.sendEob(b, 20_000);
    for (const sn of sns) assert.ok(sn.batch(1)?.equals(data), 'both replicas hold the batch, received through the NIC');
    await client.close();

    const health = (await (await fetch(`http://127.0.0.1:${obs}/health`)).json()) as { user_space_nic: Record<string, unknown>; replicas: { replicas: { name: string; state: string }[] } };
    assert.equal(health.replicas.replicas.map((r) => `${r.name} ${r.state}`), ['sn1 healthy', 'sn2 healthy']);
    const nic = health.user_space_nic;
    assert.is(nic.ip, NIC_IP);
    assert.ok(Number(nic.connected) >= 2, `the replication streams left through the NIC: ${JSON.stringify(nic)}`);
    assert.ok(Number(nic.accepted) >= 2, `the ingest client (and the port probe) came through the NIC: ${JSON.stringify(nic)}`);
  } finally {
    assert.is(await hd.stop(15_000), 0, hd.output());
    for (const s of sns) await s.kill();
  }
});

t('REPLICATION=norm with a user-space NIC is refused at start, saying why', async () => {
  const hd = startHd(['run', 'pipelines/scc.yaml'], {
    PRODUCTION_INTERFACE: '0000:3b:00.0',
    PRODUCTION_IP: '10.150.0.5',
    REPLICATION: 'norm',
    SN_TARGETS: 'sn1:10.150.0.9:1:6987',
    OBSERVABILITY_PORT: '0',
    COMMAND_PORT: '0',
    QUERY_GRPC_PORT: '0',
  });
  assert.is(await hd.exited, 1);
  assert.match(hd.output(), /REPLICATION=norm sends on the kernel's UDP sockets, which cannot reach the user-space NIC PRODUCTION_INTERFACE=0000:3b:00\.0: use REPLICATION=tcp/);
});

t.run();
