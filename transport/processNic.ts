/**
 * The user-space NIC of this process, if it has one (DPDK's environment starts once per process,
 * so there is at most one): listeners bound to its address listen on it, and connections to its
 * subnet leave through it, as the kernel would route them through the interface holding the
 * address. Everything else keeps the kernel's sockets.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { UserNicSocket } from './userNicSocket';
import { UserSpaceNicError, type UserNicListener, type UserSpaceNic } from './userSpaceNic';

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
  if (port === 0) throw new UserSpaceNicError(`a listener on the user-space NIC's address ${host} needs a port: 0 (any free port) is the kernel's`);
  return current.listen(port, onConnection);
}

/** When `host` lies in the NIC's subnet: a connection to `host:port` through it. */
export function connectThroughNic(host: string, port: number): UserNicSocket | undefined {
  return current?.reaches(host) ? current.connect(host, port) : undefined;
}

/**
 * A TCP connection to `host:port`: through the NIC for its subnet, else the kernel's. The NIC's
 * socket has the parts of `net.Socket` HD's clients use (events, setTimeout, setNoDelay, setKeepAlive).
 */
export function dial(host: string, port: number): net.Socket {
  const viaNic = connectThroughNic(host, port);
  return viaNic ? (viaNic as unknown as net.Socket) : net.connect({ host, port });
}

/** `tls.connect` (or `connect`, a session cache's) to `options.host:port`, over {@link dial}'s route. */
export function dialTls<O extends tls.ConnectionOptions & { host: string; port: number }>(options: O, connect: (o: O) => tls.TLSSocket = tls.connect): tls.TLSSocket {
  const viaNic = connectThroughNic(options.host, options.port);
  return connect(viaNic ? { ...options, socket: viaNic } : options);
}
