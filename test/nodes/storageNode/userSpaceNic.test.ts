/**
 * A Storage Node whose production interface is a user-space NIC (docs/kernel-bypass.md), as a real
 * process: `production_interface: dpdk:net_tap0,iface=…` starts DPDK's net_tap device, whose tap
 * interface is the kernel's side of the link. Ingest arrives over it, queries arrive over it, and
 * results leave through it to a listener in the data-plane subnet. Needs root, /dev/net/tun and a
 * build with DPDK; without them it says SKIPPED and why.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { userSpaceNicUnavailable } from '../../../transport/userSpaceNic';
import { freePort, startHd, waitForPort, type HdProcess } from '../../support/hdProcess';
import { batchOf, ControlPeer, ingestBatches, queryAndCollect, DS, R, SCHEMA, TestClient } from './queryKit';

const TAP = 'hdsn0';
const KERNEL_IP = '198.18.62.1';
const NIC_IP = '198.18.62.2';
const LOOPBACK = '127.0.0.1';
const skipped = userSpaceNicUnavailable({ tap: true });
const t = suite('a Storage Node with a user-space NIC (DPDK net_tap) as production_interface');

let dir: string;
let sn: HdProcess | undefined;
let ports: { production: number; command: number; obs: number };

t.before(async () => {
  if (skipped) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-snnic-'));
  ports = { production: 16987, command: 16986, obs: await freePort() };
  mkdirSync(path.join(dir, 'schemas'));
  writeFileSync(path.join(dir, 'schemas', `${DS}.json`), JSON.stringify(SCHEMA));
  const config = path.join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      node_name: 'sn-nic',
      production_interface: `dpdk:net_tap0,iface=${TAP}`,
      production_ip: NIC_IP,
      production_port: ports.production,
      command_port: ports.command,
      // Observability stays on the kernel's sockets.
      observability_ip: LOOPBACK,
      observability_port: ports.obs,
      reserve_bytes: 0,
      storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }],
    }),
  );
  sn = startHd(['run', 'pipelines/storage-node.yaml', '--config', config], {
    HASH_ALGORITHM: 'sha256',
    HASH_CHAIN_BLOCK_SIZE: '16',
    RECORD_SIZE: String(R),
    SCHEMA_DIR: path.join(dir, 'schemas'),
    PLATFORM_DATA_PLANE_SUBNET: '198.18.62.0/24',
  });
  // The tap interface appears once DPDK has started in the node; the kernel's side of the link is configured then.
  const deadline = Date.now() + 30_000;
  while (!existsSync(`/sys/class/net/${TAP}`)) {
    if (Date.now() > deadline) throw new Error(`no ${TAP} after 30 s:\n${sn.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  execFileSync('ip', ['addr', 'add', `${KERNEL_IP}/24`, 'dev', TAP]);
  execFileSync('ip', ['link', 'set', TAP, 'up']);
  await waitForPort(NIC_IP, ports.production, sn, 30_000);
  await waitForPort(NIC_IP, ports.command, sn, 30_000);
});

t.after(async () => {
  if (sn) assert.is(await sn.stop(15_000), 0, sn.output());
  if (dir) rmSync(dir, { recursive: true, force: true });
});

t('ingest and queries arrive through the NIC, results leave through it, /health shows it', async () => {
  if (skipped || !sn) {
    console.log(`SKIPPED a Storage Node with a user-space NIC: ${skipped}`);
    return;
  }
  assert.match(sn.output(), /production traffic on the user-space NIC net_tap0 \(DPDK, MAC [0-9a-f:]{17}.*\): 198\.18\.62\.2\/24, IP MTU 1500/);
  const batches = [batchOf(1, 500), batchOf(2, 3000)];
  await ingestBatches(NIC_IP, ports.production, batches);

  // The result listener is the kernel's, in the data-plane subnet: the node reaches it through its NIC.
  const client = await TestClient.start(undefined, KERNEL_IP);
  const scc = await ControlPeer.open(ports.command, DS, R, NIC_IP);
  const got = await queryAndCollect(client, scc, batches.map((b) => b.id));
  for (const b of batches) assert.ok(got.get(b.id.toHex())?.equals(b.data), 'the query returned what was ingested');

  const health = (await (await fetch(`http://${LOOPBACK}:${ports.obs}/health`)).json()) as { user_space_nic: Record<string, unknown> };
  const nic = health.user_space_nic;
  assert.is(nic.status, 'ok');
  assert.is(nic.device, 'net_tap0');
  assert.is(nic.ip, NIC_IP);
  assert.equal(nic.listening, [ports.production, ports.command]);
  assert.ok(Number(nic.accepted) >= 2, `the ingest and control connections were the NIC's: ${JSON.stringify(nic)}`);
  assert.ok(Number(nic.connected) >= 1, `the result stream left through the NIC: ${JSON.stringify(nic)}`);
  scc.close();
  await client.close();
});

t.run();
