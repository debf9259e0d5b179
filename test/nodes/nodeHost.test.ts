/**
 * CPU pinning and the MTU mode on real SCC and Storage Node processes (`hd run`): the threads'
 * Cpus_allowed_list in /proc/<pid>/task/*\/status, /health, and the start-up refusals.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseCpuList } from '../../lib/cpuAffinity';
import { freePort, startHd, waitForPort } from '../support/hdProcess';

const HOST = '127.0.0.1';
const root = path.resolve(__dirname, '..', '..');

/** The CPUs this test process may use. */
function allowedCpus(): number[] {
  const m = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  const r = parseCpuList(m?.[1] ?? '');
  if (!r.ok) throw new Error('cannot read Cpus_allowed_list');
  return r.value;
}

/** Every thread of `pid`: tid, name and Cpus_allowed_list, as the kernel shows them. */
function threadsOf(pid: number): { tid: number; name: string; cpus: string }[] {
  const out: { tid: number; name: string; cpus: string }[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8');
      out.push({ tid: Number(t), name: /Name:\s*(.*)/.exec(status)?.[1] ?? '', cpus: /Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1] ?? '' });
    } catch {
      // the thread ended
    }
  }
  return out;
}

interface GroupHealth {
  requested: string | null;
  actual: string[];
  threads: number;
}
interface HostHealth {
  cpu_affinity: { status: string; pinned: boolean; master_cpuset: string; groups: Record<string, GroupHealth> };
  mtu: { mode: string; datagram_bytes: number; interface?: string; interface_mtu?: number };
}

const cpus = allowedCpus();
const sccEnv = async (extra: Record<string, string>): Promise<Record<string, string>> => ({
  PRODUCTION_IP: HOST,
  PRODUCTION_PORT: String(await freePort()),
  COMMAND_PORT: String(await freePort()),
  QUERY_GRPC_PORT: '0',
  SN_TARGETS: `sn1:${HOST}:1:${await freePort()}`,
  NODE_NAME: 'scc-host',
  ...extra,
});

const host = suite('node host: CPU pinning and MTU mode on real processes');

host('an SCC pinned to one CPU it has: every thread shows it in /proc; jumbo on lo passes; /health shows both', async () => {
  const cpu = cpus[cpus.length - 1];
  const obs = await freePort();
  const hd = startHd(['run', 'pipelines/scc.yaml', '--quiet'], await sccEnv({ OBSERVABILITY_PORT: String(obs), MASTER_CPUSET: String(cpu), MTU_MODE: 'jumbo', PRODUCTION_INTERFACE: 'lo' }));
  try {
    await waitForPort(HOST, obs, hd);
    const pid = hd.proc.pid as number;
    const threads = threadsOf(pid);
    assert.ok(threads.length > 5, `${threads.length} threads`);
    for (const t of threads) assert.is(t.cpus, String(cpu), `thread ${t.tid} (${t.name})`);
    const h = (await (await fetch(`http://${HOST}:${obs}/health`)).json()) as HostHealth;
    assert.is(h.cpu_affinity.pinned, true);
    assert.is(h.cpu_affinity.status, 'ok');
    assert.equal(h.cpu_affinity.groups.event_loop, { requested: String(cpu), actual: [String(cpu)], threads: 1 });
    assert.equal(h.cpu_affinity.groups.engine_workers, { requested: String(cpu), actual: [String(cpu)], threads: 4 });
    assert.equal(h.mtu, { status: 'ok', mode: 'jumbo', datagram_bytes: 8500, interface: 'lo', interface_mtu: Number(readFileSync('/sys/class/net/lo/mtu', 'utf8')) });
  } finally {
    await hd.stop();
  }
});

host('a Storage Node split over two CPUs: the event loop on the first, libuv pool and hashing threads on the last', async () => {
  if (cpus.length < 2) {
    // One CPU: the split cannot be shown here; the one-CPU case above covers pinning.
    assert.is(cpus.length, 1);
    return;
  }
  const [a, b] = [cpus[0], cpus[cpus.length - 1]];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-nodehost-'));
  const ports = { production: await freePort(), command: await freePort(), obs: await freePort() };
  const config = path.join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ node_name: 'sn-host', production_ip: HOST, production_port: ports.production, command_port: ports.command, observability_port: ports.obs, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }));
  const sn = startHd(['run', 'pipelines/storage-node.yaml', '--config', config, '--quiet'], { MASTER_CPUSET: `${a},${b}`, TRANSPORT_CORES: '1', KV_CORES: '1', HASH_THREADS: '3' });
  try {
    await waitForPort(HOST, ports.production, sn);
    await waitForPort(HOST, ports.obs, sn);
    const pid = sn.proc.pid as number;
    const threads = threadsOf(pid);
    assert.is(threads.find((t) => t.tid === pid)?.cpus, String(a), 'the event loop thread');
    const hashing = threads.filter((t) => t.name.startsWith('hd-hash-'));
    assert.is(hashing.length, 2, 'HASH_THREADS=3: two pool threads beside the chain');
    for (const t of hashing) assert.is(t.cpus, String(b), `hashing thread ${t.name}`);
    const both = b === a + 1 ? `${a}-${b}` : `${a},${b}`;
    for (const t of threads) assert.ok([String(a), String(b), both].includes(t.cpus), `thread ${t.tid} (${t.name}) on ${t.cpus}`);
    assert.is(threads.filter((t) => t.cpus === String(b)).length, 4 + 2, 'four libuv pool threads and two hashing threads on KV_CORES');
    const h = (await (await fetch(`http://${HOST}:${ports.obs}/health`)).json()) as HostHealth;
    assert.equal(h.cpu_affinity.groups.event_loop, { requested: String(a), actual: [String(a)], threads: 1 });
    assert.equal(h.cpu_affinity.groups.engine_workers, { requested: String(b), actual: [String(b)], threads: 4 });
    assert.equal(h.cpu_affinity.groups.hash_pool, { requested: String(b), actual: [String(b)], threads: 2 });
    assert.is(h.cpu_affinity.groups.other.requested, both);
    assert.equal(h.mtu, { status: 'ok', mode: 'standard', datagram_bytes: 1200 });
  } finally {
    await sn.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

host('a MASTER_CPUSET naming a CPU the process may not use stops the SCC at start, saying which', async () => {
  const hd = startHd(['run', 'pipelines/scc.yaml'], await sccEnv({ OBSERVABILITY_PORT: String(await freePort()), MASTER_CPUSET: `${cpus[0]},1023` }));
  assert.is(await hd.exited, 1);
  assert.match(hd.output(), /MASTER_CPUSET=\S+ names CPU 1023, which this process may not use \(it may use [0-9,-]+: its sched_getaffinity/);
});

host('jumbo mode on a production interface with MTU 1500 stops the SCC at start, naming the interface and the MTU needed', async () => {
  // A network namespace of its own (root): a veth pair with MTU 1500, and a sysfs that shows it.
  const script = 'mount -t sysfs sysfs /sys && ip link add hd0 type veth peer name hd1 && ip link set hd0 mtu 1500 && ip addr add 10.99.0.1/24 dev hd0 && ip link set hd1 up && ip link set hd0 up && exec "$@"';
  const env = { ...process.env, ...(await sccEnv({ OBSERVABILITY_PORT: '0', MTU_MODE: 'jumbo', PRODUCTION_INTERFACE: 'hd0', PRODUCTION_IP: '10.99.0.1' })) };
  const child = spawn('unshare', ['--net', '--mount', 'sh', '-c', script, 'sh', process.execPath, '-r', 'tsx/cjs', '-e', "require('./bin/cli').main(process.argv.slice(1)).then((c) => process.exit(c ?? 0), (e) => { console.error(e); process.exit(1); })", 'run', 'pipelines/scc.yaml'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  assert.is(code, 1, out);
  assert.match(out, /MTU_MODE=jumbo needs an MTU of at least 8550 on the production interface hd0, which has 1500; raise it \(ip link set dev hd0 mtu 8550/);
});

host("jumbo mode on an interface whose MTU /sys does not show (a namespace's sysfs not mounted) is refused, saying so", async () => {
  // /sys/class/net is the host's here: hd0 exists in the namespace but not under /sys.
  const script = 'ip link add hd0 type veth peer name hd1 && ip addr add 10.99.0.1/24 dev hd0 && ip link set hd1 up && ip link set hd0 up && exec "$@"';
  const check = "try { require('./net/mtuMode').checkMtuMode('jumbo', 'hd0', ''); console.log('passed'); } catch (e) { console.log(e.message); }";
  const child = spawn('unshare', ['--net', 'sh', '-c', script, 'sh', process.execPath, '-r', 'tsx/cjs', '-e', check], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  assert.is(await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c))), 0, out);
  assert.match(out, /MTU_MODE=jumbo: cannot read the MTU of interface hd0 \(\/sys\/class\/net\/hd0\/mtu\); set PRODUCTION_INTERFACE/);
});

host.run();
