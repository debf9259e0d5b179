/**
 * The instance-wide MTU mode of the data plane (HD-PLATFORM-REFERENCE.md, "Limits": Standard 1200
 * bytes, the default; Jumbo 8500 bytes, needing links of at least 8550 end to end; every node of an
 * instance uses the same mode, and changing it needs a full cluster restart; docs/control-plane.md,
 * "MTU mode"). The DMS holds the instance's mode (MTU_MODE), every SCC and Storage Node declares its
 * own at registration and a different one is refused; a node in Jumbo mode checks its production
 * interface's MTU at start.
 *
 * Datagram senders (NORM replication, HDWP datagrams) size what they put in one datagram with
 * {@link datagramPayloadBytes}.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { MTU_JUMBO, MTU_STANDARD } from '../engine-rs/hdwpFrame';

/** The MTU modes, the default first. */
export const MTU_MODES = ['standard', 'jumbo'] as const;
/** One of {@link MTU_MODES}. */
export type MtuMode = (typeof MTU_MODES)[number];
/** The reference's default mode. */
export const DEFAULT_MTU_MODE: MtuMode = 'standard';

/** Bytes of one data-plane datagram (its UDP payload) in each mode. */
export const MTU_BYTES: Readonly<Record<MtuMode, number>> = { standard: MTU_STANDARD, jumbo: MTU_JUMBO };

/** The interface MTU Jumbo mode needs end to end: 8500-byte datagrams plus IP and UDP headers. */
export const JUMBO_MIN_INTERFACE_MTU = 8550;

/** Whether `text` is an MTU mode. */
export function isMtuMode(text: string): text is MtuMode {
  return (MTU_MODES as readonly string[]).includes(text);
}

/** Reads MTU_MODE text (`standard` or `jumbo`, any case); undefined when it is neither. */
export function parseMtuMode(text: string): MtuMode | undefined {
  const t = text.trim().toLowerCase();
  return isMtuMode(t) ? t : undefined;
}

/**
 * Bytes a sender may put in one datagram in `mode` after its own header of `headerBytes` (default 0:
 * the whole UDP payload, 1200 or 8500). A NORM sender passes NORM's per-message header so the
 * segment it asks NORM for, plus that header, stays within the mode's datagram.
 */
export function datagramPayloadBytes(mode: MtuMode, headerBytes = 0): number {
  if (!Number.isInteger(headerBytes) || headerBytes < 0 || headerBytes >= MTU_BYTES[mode]) {
    throw new RangeError(`a datagram header must be 0..${MTU_BYTES[mode] - 1} bytes in ${mode} mode, got ${headerBytes}`);
  }
  return MTU_BYTES[mode] - headerBytes;
}

/** The production interface a node's MTU check reads, and how it was found. */
export interface ProductionInterface {
  readonly name: string;
  /** `setting`: named outright; `address`: the interface holding the production address. */
  readonly from: 'setting' | 'address';
}

/**
 * The kernel interface carrying a node's production traffic: `iface` when it names one, else the
 * interface holding `iface` (an address) or `ip`; undefined when none (a wildcard address, a PCIe
 * address of the user-space path, an address of no interface here).
 */
export function productionInterfaceOf(iface: string, ip: string): ProductionInterface | undefined {
  const all = os.networkInterfaces();
  // An interface with no address is not in os.networkInterfaces(): /sys/class/net knows it.
  if (iface !== '' && net.isIP(iface) === 0 && (all[iface] !== undefined || readInterfaceMtu(iface) !== undefined)) return { name: iface, from: 'setting' };
  for (const addr of [iface, ip]) {
    if (net.isIP(addr) === 0 || addr === '0.0.0.0' || addr === '::') continue;
    for (const [name, list] of Object.entries(all)) if (list?.some((a) => a.address === addr)) return { name, from: 'address' };
  }
  return undefined;
}

/** The MTU of kernel interface `name` (/sys/class/net/<name>/mtu); undefined when there is no such interface. */
export function readInterfaceMtu(name: string): number | undefined {
  if (!/^[A-Za-z0-9_.:@-]{1,15}$/.test(name)) return undefined;
  try {
    const n = Number(readFileSync(`/sys/class/net/${name}/mtu`, 'utf8').trim());
    return Number.isInteger(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** A node in Jumbo mode whose production interface cannot carry its datagrams: start-up refused. */
export class MtuModeError extends Error {
  override readonly name = 'MtuModeError';
}

/** What a node's MTU check found, for /health. */
export interface MtuCheck {
  readonly mode: MtuMode;
  /** Bytes of one data-plane datagram in this mode. */
  readonly datagram_bytes: number;
  /** The production interface checked (Jumbo), or undefined (Standard needs no check). */
  readonly interface?: string;
  readonly interface_mtu?: number;
}

/**
 * The start-up check of a node in `mode`: Standard passes; Jumbo needs the production interface
 * (`iface`: PRODUCTION_INTERFACE / production_interface, or the interface of `ip`) to have an MTU
 * of at least {@link JUMBO_MIN_INTERFACE_MTU}. Throws {@link MtuModeError} naming the interface, its
 * MTU, the MTU needed and the settings to change.
 */
export function checkMtuMode(mode: MtuMode, iface: string, ip: string, settingNames = { iface: 'PRODUCTION_INTERFACE', ip: 'PRODUCTION_IP' }): MtuCheck {
  const base = { mode, datagram_bytes: MTU_BYTES[mode] };
  if (mode === 'standard') return base;
  const found = productionInterfaceOf(iface, ip);
  if (!found) {
    throw new MtuModeError(
      `MTU_MODE=jumbo needs the production interface's MTU to be checked, but ${iface !== '' ? `${settingNames.iface}=${iface} is no kernel interface of this host` : `${settingNames.iface} is empty and ${settingNames.ip}=${ip} is on no single interface`}; set ${settingNames.iface} to the interface carrying production traffic (its MTU must be at least ${JUMBO_MIN_INTERFACE_MTU}), or use MTU_MODE=standard`,
    );
  }
  const mtu = readInterfaceMtu(found.name);
  if (mtu === undefined) throw new MtuModeError(`MTU_MODE=jumbo: cannot read the MTU of interface ${found.name} (/sys/class/net/${found.name}/mtu); set ${settingNames.iface} to the interface carrying production traffic, or use MTU_MODE=standard`);
  if (mtu < JUMBO_MIN_INTERFACE_MTU) {
    throw new MtuModeError(
      `MTU_MODE=jumbo needs an MTU of at least ${JUMBO_MIN_INTERFACE_MTU} on the production interface ${found.name}, which has ${mtu}; raise it (ip link set dev ${found.name} mtu ${JUMBO_MIN_INTERFACE_MTU}, and on every link between the nodes), or run the whole instance with MTU_MODE=standard`,
    );
  }
  return { ...base, interface: found.name, interface_mtu: mtu };
}
