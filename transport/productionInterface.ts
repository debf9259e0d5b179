/**
 * The production interface setting (PRODUCTION_INTERFACE, config.json's production_interface):
 * which NIC carries a node's production traffic, and whether the kernel or HD drives it.
 *
 * - empty, or a kernel interface name (`eth1`): the kernel's sockets;
 * - a PCIe address (`0000:3b:00.0`, the reference's form): a NIC bound to vfio-pci, driven from
 *   user space by DPDK (transport/userSpaceNic.ts; docs/kernel-bypass.md);
 * - `dpdk:<vdev>` (`dpdk:net_tap0,iface=hd0`): one of DPDK's virtual devices, the same path
 *   without a NIC (tests, and hosts that want it).
 */
import { ipv4Value } from '../lib/ipv4';

/** A PCI device address in domain:bus:device.function form, e.g. `0000:3b:00.0`. */
const PCI_ADDRESS = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;

/** The prefix of the virtual-device form. */
export const VDEV_PREFIX = 'dpdk:';

/** A DPDK virtual device's arguments: a driver name with an instance number, then key=value pairs. */
const VDEV = /^net_[a-z_]+[0-9]+(,[A-Za-z0-9_]+=[^,\s]*)*$/;

/** Where production traffic goes. */
export type ProductionInterface =
  | { readonly kind: 'kernel'; readonly name: string }
  | {
      readonly kind: 'userSpace';
      /** The DPDK port's name: the PCIe address, or the vdev's `net_xxxN`. */
      readonly device: string;
      /** PCIe addresses DPDK probes. */
      readonly pci: readonly string[];
      /** Virtual devices DPDK creates. */
      readonly vdevs: readonly string[];
    };

/** Parses the setting's value (a kernel interface is left to the caller to check); `{ error }` says what is wrong. */
export function parseProductionInterface(value: string): ProductionInterface | { readonly error: string } {
  const v = value.trim();
  if (PCI_ADDRESS.test(v)) return { kind: 'userSpace', device: v.toLowerCase(), pci: [v.toLowerCase()], vdevs: [] };
  if (v.startsWith(VDEV_PREFIX)) {
    const spec = v.slice(VDEV_PREFIX.length);
    if (!VDEV.test(spec)) return { error: `'${value}' is not ${VDEV_PREFIX}<vdev>: a DPDK virtual device such as ${VDEV_PREFIX}net_tap0,iface=hd0` };
    return { kind: 'userSpace', device: spec.split(',')[0], pci: [], vdevs: [spec] };
  }
  return { kind: 'kernel', name: v };
}

/** An IPv4 subnet in CIDR form. */
export interface Subnet {
  readonly base: number;
  readonly prefix: number;
}

/** Parses `a.b.c.d/n` (PLATFORM_DATA_PLANE_SUBNET's form). */
export function parseSubnet(text: string): Subnet | { readonly error: string } {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(text.trim());
  const base = m ? ipv4Value(m[1]) : undefined;
  const prefix = m ? Number(m[2]) : NaN;
  if (base === undefined || !(prefix >= 1 && prefix <= 32)) return { error: `'${text}' is not an IPv4 subnet in CIDR form such as 10.150.0.0/24` };
  return { base: (base & mask(prefix)) >>> 0, prefix };
}

function mask(prefix: number): number {
  return prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
}

/** True when `ip` lies in `subnet`. */
export function inSubnet(ip: string, subnet: Subnet): boolean {
  const v = ipv4Value(ip);
  return v !== undefined && ((v & mask(subnet.prefix)) >>> 0) === subnet.base;
}
