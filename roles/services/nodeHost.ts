/**
 * What an SCC or a Storage Node checks and sets on its host at start, before it serves: its MTU mode
 * against the production interface (net/mtuMode.ts; docs/control-plane.md, "MTU mode") and the CPU
 * pinning of its threads (lib/cpuAffinity.ts; docs/scc.md, "CPU pinning"), both shown in /health.
 */
import { threadAffinity } from '../../engine-rs/index';
import type { Setting } from '../../pipelines/settings';
import { applyCpuPinning, formatCpuList, parseCpuList, type CpuPinning, type CpuPinningSettings } from '../../lib/cpuAffinity';
import type { LogLevel } from '../../lib/logging';
import type { HealthPart } from '../../lib/observability';
import { checkMtuMode, type MtuCheck, type MtuMode } from '../../net/mtuMode';

/** The node's MTU check and CPU pinning in force. */
export interface NodeHost {
  readonly mtu: MtuCheck;
  readonly pinning: CpuPinning;
}

/** What {@link prepareNodeHost} needs: the settings, with the names they have in this role. */
export interface NodeHostOptions extends CpuPinningSettings {
  readonly mtuMode: MtuMode;
  /** The production interface setting's value and name (PRODUCTION_INTERFACE, production_interface). */
  readonly productionInterface: { readonly value: string; readonly setting: string };
  /** The production address setting's value and name (PRODUCTION_IP, production_ip). */
  readonly productionIp: { readonly value: string; readonly setting: string };
  readonly report: (line: string, level: LogLevel) => void;
}

/**
 * Checks the MTU mode (Jumbo: the production interface's MTU ≥ 8550) and pins the threads; throws
 * (MtuModeError, CpuPinningError) with what to change, before anything is pinned.
 */
export async function prepareNodeHost(o: NodeHostOptions): Promise<NodeHost> {
  const mtu = checkMtuMode(o.mtuMode, o.productionInterface.value, o.productionIp.value, { iface: o.productionInterface.setting, ip: o.productionIp.setting });
  if (mtu.interface !== undefined) o.report(`MTU mode jumbo: ${mtu.interface} has MTU ${mtu.interface_mtu ?? '?'} (at least 8550 needed)`, 'info');
  const pinning = await applyCpuPinning(o, threadAffinity);
  const p = pinning.plan;
  if (p) {
    o.report(`threads pinned: event loop on CPUs ${formatCpuList(p.transport)} (TRANSPORT_CORES=${o.transportCores}), engine workers on ${formatCpuList(p.workers)} (KV_CORES=${o.kvCores}), the rest on ${formatCpuList(p.all)} (MASTER_CPUSET)`, 'info');
    if (pinning.poolMissed > 0) o.report(`${pinning.poolMissed} of libuv's pool threads were busy and not pinned (see /health cpu_affinity)`, 'warn');
  }
  return { mtu, pinning };
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
