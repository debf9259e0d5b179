/**
 * The user-space NIC of this process, if it has one (DPDK's environment starts once per process,
 * so there is at most one): listeners bound to its address listen on it, and connections to its
 * subnet leave through it, as the kernel would route them through the interface holding the
 * address. Everything else keeps the kernel's sockets.
 */
import type { UserNicSocket } from './userNicSocket';
import type { UserNicListener, UserSpaceNic } from './userSpaceNic';

let current: UserSpaceNic | undefined;

/** Makes `nic` this process's user-space NIC (undefined: none). */
export function setProcessNic(nic: UserSpaceNic | undefined): void {
  current = nic;
}

/** This process's user-space NIC, if one is open. */
export function processNic(): UserSpaceNic | undefined {
  return current;
}

/** When `host` is the NIC's own address: listens on `port` there. */
export function listenOnNic(host: string | undefined, port: number, onConnection: (s: UserNicSocket) => void): UserNicListener | undefined {
  if (!current || host !== current.options.ip) return undefined;
  return current.listen(port, onConnection);
}

/** When `host` lies in the NIC's subnet: a connection to `host:port` through it. */
export function connectThroughNic(host: string, port: number): UserNicSocket | undefined {
  return current?.reaches(host) ? current.connect(host, port) : undefined;
}
