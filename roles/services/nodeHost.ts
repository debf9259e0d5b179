/**
 * What an SCC or a Storage Node checks and sets on its host at start, before it serves: its MTU mode
 * against the production interface (net/mtuMode.ts; docs/control-plane.md, "MTU mode") and the CPU
 * pinning of its threads (lib/cpuAffinity.ts; docs/scc.md, "CPU pinning"), both shown in /health;
 * and, when the production interface is a user-space NIC, that NIC (transport/; docs/kernel-bypass.md).
 */
import { threadAffinity } from '../../engine-rs/index';
import type { Setting } from '../../pipelines/settings';
import { applyCpuPinning, formatCpuList, parseCpuList, type CpuPinning, type CpuPinningSettings } from '../../lib/cpuAffinity';
import type { LogLevel } from '../../lib/logging';
import type { HealthPart } from '../../lib/observability';
import { checkMtuMode, MTU_BYTES, type MtuCheck, type MtuMode } from '../../net/mtuMode';
import { setProcessNic } from '../../transport/processNic';
import { inSubnet, parseProductionInterface, parseSubnet } from '../../transport/productionInterface';
import { UserSpaceNic, UserSpaceNicError } from '../../transport/userSpaceNic';

/** The IP MTU a user-space NIC is started with in each mode (Jumbo: at least 8550 end to end). */
const USER_NIC_IP_MTU: Readonly<Record<MtuMode, number>> = { standard: 1500, jumbo: 9000 };

/** The node's MTU check and CPU pinning in force. */
export interface NodeHost {
  readonly mtu: MtuCheck;
  readonly pinning: CpuPinning;
  /** The user-space NIC carrying production traffic, when the production interface names one. */
  readonly nic?: UserSpaceNic;
}

/** What {@link prepareNodeHost} needs: the settings, with the names they have in this role. */
export interface NodeHostOptions extends CpuPinningSettings {
  readonly mtuMode: MtuMode;
  /** The production interface setting's value and name (PRODUCTION_INTERFACE, production_interface). */
  readonly productionInterface: { readonly value: string; readonly setting: string };
  /** The production address setting's value and name (PRODUCTION_IP, production_ip). */
  readonly productionIp: { readonly value: string; readonly setting: string };
  /** PLATFORM_DATA_PLANE_SUBNET: with a user-space NIC, the subnet its address is on (reached directly, no router). */
  readonly dataPlaneSubnet: { readonly value: string; readonly setting: string };
  readonly report: (line: string, level: LogLevel) => void;
}

/**
 * Checks the MTU mode (Jumbo: the production interface's MTU ≥ 8550) and pins the threads; throws
 * (MtuModeError, CpuPinningError) with what to change, before anything is pinned.
 */
export async function prepareNodeHost(o: NodeHostOptions): Promise<NodeHost> {
  const iface = parseProductionInterface(o.productionInterface.value);
  if ('error' in iface) throw new UserSpaceNicError(`${o.productionInterface.setting}: ${iface.error}`);
  const userSpace = iface.kind === 'userSpace' ? { ...iface, ...userNicAddress(o) } : undefined;
  // A user-space NIC is started with the mode's MTU (a device that cannot take it refuses to start).
  const mtu: MtuCheck = userSpace
    ? { mode: o.mtuMode, datagram_bytes: MTU_BYTES[o.mtuMode], interface: userSpace.device, interface_mtu: USER_NIC_IP_MTU[o.mtuMode] }
    : checkMtuMode(o.mtuMode, o.productionInterface.value, o.productionIp.value, { iface: o.productionInterface.setting, ip: o.productionIp.setting });
  if (mtu.interface !== undefined && !userSpace) o.report(`MTU mode jumbo: ${mtu.interface} has MTU ${mtu.interface_mtu ?? '?'} (at least 8550 needed)`, 'info');
  const pinning = await applyCpuPinning(o, threadAffinity);
  const p = pinning.plan;
  if (p) {
    o.report(`threads pinned: event loop on CPUs ${formatCpuList(p.transport)} (TRANSPORT_CORES=${o.transportCores}), engine workers on ${formatCpuList(p.workers)} (KV_CORES=${o.kvCores}), the rest on ${formatCpuList(p.all)} (MASTER_CPUSET)`, 'info');
    if (pinning.poolMissed > 0) o.report(`${pinning.poolMissed} of libuv's pool threads were busy and not pinned (see /health cpu_affinity)`, 'warn');
  }
  if (!userSpace) return { mtu, pinning };
  const nic = await UserSpaceNic.open({ ...userSpace, cores: p?.transport ?? [], ipMtu: USER_NIC_IP_MTU[o.mtuMode] });
  setProcessNic(nic);
  nic.onStopped((why) => o.report(`the user-space NIC ${userSpace.device} stopped: ${why}; production traffic has stopped, restart the node (see /health user_space_nic)`, 'error'));
  o.report(
    `production traffic on the user-space NIC ${userSpace.device} (DPDK, MAC ${nic.mac}${nic.hugepages ? '' : ', no hugepages: plain memory'}): ${userSpace.ip}/${userSpace.subnet.prefix}, IP MTU ${USER_NIC_IP_MTU[o.mtuMode]}${p ? `, transport thread on CPU ${p.transport[0]}` : ''}`,
    'info',
  );
  return { mtu, pinning, nic };
}

/** The user-space NIC's address and subnet: production_ip, which must be a host address of PLATFORM_DATA_PLANE_SUBNET. */
function userNicAddress(o: NodeHostOptions): { ip: string; subnet: { base: number; prefix: number } } {
  const subnet = parseSubnet(o.dataPlaneSubnet.value);
  if ('error' in subnet) throw new UserSpaceNicError(`${o.dataPlaneSubnet.setting}: ${subnet.error}`);
  const ip = o.productionIp.value;
  if (!inSubnet(ip, subnet) || ip === '0.0.0.0') {
    throw new UserSpaceNicError(
      `${o.productionInterface.setting}=${o.productionInterface.value} is a user-space NIC, which owns its address: set ${o.productionIp.setting} to this node's address in ${o.dataPlaneSubnet.setting}=${o.dataPlaneSubnet.value} (got ${ip})`,
    );
  }
  return { ip, subnet };
}

/** Releases what {@link prepareNodeHost} opened (the user-space NIC) when the node stops. */
export function closeNodeHost(host: NodeHost): void {
  if (!host.nic) return;
  host.nic.close();
  setProcessNic(undefined);
}

const hosts = new WeakMap<object, NodeHost>();

/** Records `host` as the one of `node` (the Storage Node a `storageNode` service gives its stages). */
export function setNodeHost(node: object, host: NodeHost): void {
  hosts.set(node, host);
}

/**
 * The MTU check and pinning of a running node: a Storage Node's stages read its MTU mode as
 * `nodeHostOf(ctx.services.node)?.mtu.mode` (an SCC's read `ctx.services.scc.mtuMode`).
 */
export function nodeHostOf(node: object): NodeHost | undefined {
  return hosts.get(node);
}

/** The `mtu` and `cpu_affinity` parts of the node's /health. */
export function addNodeHostHealth(obs: { addHealthPart(name: string, part: () => HealthPart): void }, host: NodeHost): void {
  obs.addHealthPart('mtu', () => ({ status: 'ok', ...host.mtu }));
  obs.addHealthPart('cpu_affinity', () => host.pinning.health());
  const nic = host.nic;
  if (nic) obs.addHealthPart('user_space_nic', () => nic.health());
}

/** MASTER_CPUSET as a service setting of roles whose settings are not the SCC's table (the Storage Node); empty: nothing pinned. */
export function cpusetSetting(doc: string): Setting<number[] | undefined> {
  return {
    expects: "empty, or a cpuset list such as '1-3' or '0,2,4-7'",
    doc,
    required: false,
    fallback: undefined,
    parse: (v) => {
      if (v.value === '' || v.value === undefined || v.value === null) return { ok: true, value: undefined };
      const r = parseCpuList(String(v.value));
      return r.ok ? r : { ok: false, expected: r.expected };
    },
  };
}
