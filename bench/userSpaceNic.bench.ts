/**
 * HDWP ingest into a server on a user-space NIC (DPDK's net_tap, docs/kernel-bypass.md) against the
 * same server on the kernel's loopback, in one run: a kernel HdwpClient sends BATCHES batches of
 * BATCH_MB MiB, each acknowledged, to each server in turn; ROUNDS rounds, medians reported (MB/s of
 * record bytes, and the ratio). net_tap puts the kernel's tap driver on the NIC's side, so this is
 * the cost of the path HD adds (DPDK, smoltcp, the transport thread, the bridge to JS) plus a tap,
 * not a NIC's line rate. Figures: docs/BENCHMARKS.md, "User-space NIC".
 *
 * Run as root: `npx tsx bench/userSpaceNic.bench.ts`
 */
import { execFileSync } from 'node:child_process';
import { generateBatchIdNumber } from '../engine-rs/batchId';
import { HdwpClient } from '../hdwp/hdwpClient';
import { HdwpServer } from '../hdwp/hdwpServer';
import { setProcessNic } from '../transport/processNic';
import { parseSubnet, type Subnet } from '../transport/productionInterface';
import { UserSpaceNic, userSpaceNicUnavailable } from '../transport/userSpaceNic';

const R = 150;
const BATCHES = Number(process.env.BATCHES ?? 8);
const BATCH_MB = Number(process.env.BATCH_MB ?? 16);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CHUNK = Math.floor((1 << 20) / R) * R;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function server(host: string, port: number): Promise<HdwpServer> {
  const s = new HdwpServer({ host, port, role: 'storageNode', onConnection: (conn) => ({ onFrame: (f) => (f.kind === 'eob' ? conn.send(f) : undefined) }) });
  await s.listen();
  return s;
}

async function send(host: string, port: number, data: Buffer, first: number): Promise<number> {
  const c = await HdwpClient.connect({ host, port, role: 'scc', datasetId: 'ds', recordSize: R });
  const t0 = process.hrtime.bigint();
  for (let k = 0; k < BATCHES; k++) {
    const id = generateBatchIdNumber(first + k);
    for (let off = 0; off < data.length; off += CHUNK) await c.sendRecords(id, data.subarray(off, Math.min(off + CHUNK, data.length)));
    await c.sendEob(id, data.length / R);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  await c.close();
  return (BATCHES * data.length) / 1e6 / secs;
}

async function main(): Promise<void> {
  const why = userSpaceNicUnavailable({ tap: true });
  if (why) throw new Error(`cannot run: ${why}`);
  const nic = await UserSpaceNic.open({ device: 'net_tap0', pci: [], vdevs: ['net_tap0,iface=hdbench0'], cores: [], ip: '198.18.70.2', subnet: parseSubnet('198.18.70.0/24') as Subnet, ipMtu: 1500, busyPoll: process.env.BUSY_POLL === '1' });
  execFileSync('ip', ['addr', 'add', '198.18.70.1/24', 'dev', 'hdbench0']);
  execFileSync('ip', ['link', 'set', 'hdbench0', 'up']);
  setProcessNic(nic);
  const onNic = await server('198.18.70.2', 7300);
  setProcessNic(undefined);
  const onKernel = await server('127.0.0.1', 7301);
  const data = Buffer.alloc(Math.floor((BATCH_MB << 20) / R) * R);
  for (let i = 0; i < data.length; i++) data[i] = (i * 13) & 0xff;
  await send('198.18.70.2', 7300, data.subarray(0, CHUNK), 1); // warm-up: ARP, JIT
  const nicRates: number[] = [];
  const kernelRates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    kernelRates.push(await send('127.0.0.1', 7301, data, 1000 * r + 10));
    nicRates.push(await send('198.18.70.2', 7300, data, 1000 * r + 500));
  }
  const k = median(kernelRates);
  const n = median(nicRates);
  console.log(`HDWP ingest, ${BATCHES} × ${BATCH_MB} MiB batches, median of ${ROUNDS} rounds (MB/s of record bytes)`);
  console.log(`  kernel loopback TCP:            ${k.toFixed(0)}  (${kernelRates.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`  user-space NIC (DPDK net_tap):  ${n.toFixed(0)}  (${nicRates.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`  NIC / kernel: ${(n / k).toFixed(2)}`);
  console.log(`  NIC: ${JSON.stringify(nic.health())}`);
  if (process.env.TAP_STATS) console.log(execFileSync('ip', ['-s', 'link', 'show', 'hdbench0']).toString());
  await onNic.close();
  await onKernel.close();
  nic.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
