/**
 * A production interface given as a PCIe address: the reference's user-space NIC (DPDK). engine-rs
 * has the layers for it (`netio`: a DPDK port, UDP and TCP in user space; docs/kernel-bypass.md),
 * but the nodes' HDWP servers and clients and NORM still use the kernel's sockets, which cannot
 * reach a NIC bound to vfio-pci. So a node refuses such an address at start, saying what to give
 * instead, rather than start and carry nothing.
 */

/** A PCI device address in domain:bus:device.function form, e.g. `0000:3b:00.0`. */
export const PCI_ADDRESS = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;

/** The refusal of `value` (a PCIe address) as the production interface: what to give instead. */
export function userSpaceNicRefusal(value: string): string {
  return (
    `'${value}' is a PCIe address (the user-space driver path): HD's DPDK port can drive such a NIC, ` +
    `but HD's production traffic (HDWP over TCP, NORM multicast) runs on the kernel's sockets, which cannot reach a NIC bound to vfio-pci; ` +
    `bind the NIC to its kernel driver and give its interface name or address (docs/kernel-bypass.md)`
  );
}
