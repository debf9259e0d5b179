/**
 * A NIC driven from user space (DPDK) with a TCP/IP stack of its own (smoltcp), as a node's
 * production interface (docs/kernel-bypass.md). engine-rs runs the NIC on a transport thread of
 * its own; here its connections become {@link UserNicSocket} streams, which the HDWP server and
 * client take as they take kernel sockets (TLS included).
 *
 * The stack owns its address (production_ip): the kernel does not see it, so nothing else on the
 * host can bind it. It reaches the hosts of its subnet (PLATFORM_DATA_PLANE_SUBNET) directly; there
 * is no router behind it.
 */
import fs from 'node:fs';
import { native, type UserNicHandle } from '../engine-rs/native';
import { formatCpuList } from '../lib/cpuAffinity';
import { inSubnet, type Subnet } from './productionInterface';
import { UserNicSocket } from './userNicSocket';

/** How a user-space NIC starts. */
export interface UserSpaceNicOptions {
  /** The DPDK port: a PCIe address, or a vdev's name. */
  readonly device: string;
  readonly pci: readonly string[];
  readonly vdevs: readonly string[];
  /** The CPUs of DPDK's transport thread (TRANSPORT_CORES of MASTER_CPUSET); empty: the first this process may use. */
  readonly cores: readonly number[];
  /** The stack's address (production_ip) and its subnet (PLATFORM_DATA_PLANE_SUBNET). */
  readonly ip: string;
  readonly subnet: Subnet;
  /** The link's IP MTU: 1500 in Standard mode, 9000 in Jumbo. */
  readonly ipMtu: number;
  /** Bytes of each connection's buffers each way; default 1 MiB. */
  readonly buffer?: number;
  /** Poll without sleeping; default false. */
  readonly busyPoll?: boolean;
}

/**
 * Handshakes a listened port takes at once: a listening socket each in the stack (their buffers are
 * zeroed memory the OS gives on first touch, so idle ones cost little); more SYNs at one instant are
 * refused, and the peer's connect fails with ECONNREFUSED.
 */
export const DEFAULT_BACKLOG = 64;

/** The NIC did not start, or stopped. */
export class UserSpaceNicError extends Error {
  override readonly name = 'UserSpaceNicError';
}

/** A listening port of a NIC. */
export interface UserNicListener {
  /** The NIC's address. */
  readonly host: string;
  readonly port: number;
  close(): void;
}

/** True when the host has free hugepages for DPDK; without, DPDK runs on plain memory (--no-huge). */
function hugepagesFree(): boolean {
  try {
    const m = /HugePages_Free:\s+(\d+)/.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
    return m !== null && Number(m[1]) > 0;
  } catch {
    return false;
  }
}

/**
 * Why a user-space NIC cannot start on this host, or undefined when it can try: this build has no
 * DPDK, or (for the virtual devices tests use) the process is not root or has no /dev/net/tun.
 */
export function userSpaceNicUnavailable(opts: { tap?: boolean } = {}): string | undefined {
  if (!native.userNicBuiltIn()) return "this build has no DPDK: install Debian's libdpdk-dev and pkg-config, then rebuild engine-rs (npm run build:native)";
  if (opts.tap && process.getuid?.() !== 0) return 'not root: net_tap creates a tap interface';
  if (opts.tap && !fs.existsSync('/dev/net/tun')) return 'no /dev/net/tun for net_tap';
  return undefined;
}

/** A running user-space NIC. */
export class UserSpaceNic {
  private readonly sockets = new Map<number, UserNicSocket>();
  private readonly listeners = new Map<number, (s: UserNicSocket) => void>();
  private handle: UserNicHandle | undefined;
  // The transport thread's events do not hold the process open; an open NIC does, as a listening socket would.
  private keepAlive: NodeJS.Timeout | undefined;
  private stopped: string | undefined;
  private readonly onStop: ((why: string) => void)[] = [];
  /** Connections accepted and opened so far. */
  readonly counts = { accepted: 0, connected: 0, refused: 0, reset: 0 };

  private constructor(
    readonly options: UserSpaceNicOptions,
    /** The NIC's MAC address. */
    readonly mac: string,
    /** Whether DPDK runs on hugepages. */
    readonly hugepages: boolean,
  ) {}

  /** Starts DPDK and the stack on the transport thread; rejects with what went wrong. */
  static open(o: UserSpaceNicOptions): Promise<UserSpaceNic> {
    const hugepages = hugepagesFree();
    return new Promise((resolve, reject) => {
      let nic: UserSpaceNic | undefined;
      let handle: UserNicHandle;
      try {
        handle = native.userNicOpen(
          {
            device: o.device,
            pci: [...o.pci],
            vdevs: [...o.vdevs],
            cores: formatCpuList(o.cores),
            noHuge: !hugepages,
            ip: o.ip,
            prefix: o.subnet.prefix,
            ipMtu: o.ipMtu,
            ...(o.buffer !== undefined && { buffer: o.buffer }),
            busyPoll: o.busyPoll ?? false,
          },
          (kind, id, a, b) => {
            if (kind === 'ready') {
              nic = new UserSpaceNic(o, String(a), hugepages);
              nic.handle = handle;
              nic.keepAlive = setInterval(() => undefined, 1 << 30);
              resolve(nic);
            } else if (kind === 'stopped' && !nic) {
              reject(new UserSpaceNicError(`the user-space NIC ${o.device} did not start: ${String(a ?? 'stopped')}`));
            } else nic?.onEvent(kind, id, a, b);
          },
        );
      } catch (err) {
        reject(new UserSpaceNicError(`the user-space NIC ${o.device} did not start: ${(err as Error).message}`));
      }
    });
  }

  /** True when `host` is an address of this NIC's subnet (reached through it). */
  reaches(host: string): boolean {
    return inSubnet(host, this.options.subnet);
  }

  /** Calls `listener` if the NIC stops on its own (the port failed): its connections are gone. */
  onStopped(listener: (why: string) => void): void {
    this.onStop.push(listener);
  }

  /** Accepts connections on `port`; each is handed to `onConnection`. */
  listen(port: number, onConnection: (s: UserNicSocket) => void, backlog = DEFAULT_BACKLOG): UserNicListener {
    const h = this.open();
    if (this.listeners.has(port)) throw new UserSpaceNicError(`port ${port} of ${this.options.ip} is already listened on`);
    this.listeners.set(port, onConnection);
    native.userNicListen(h, port, backlog);
    return {
      host: this.options.ip,
      port,
      close: () => {
        if (this.listeners.delete(port) && this.handle) native.userNicUnlisten(this.handle, port);
      },
    };
  }

  /** Opens a connection to `host:port` (an address of the subnet); `connect` or `error` follows. */
  connect(host: string, port: number): UserNicSocket {
    const h = this.open();
    if (!this.reaches(host)) throw new UserSpaceNicError(`${host} is outside ${this.options.ip}'s data-plane subnet: the user-space NIC reaches only its own subnet`);
    const id = native.userNicConnect(h, host, port);
    const s = new UserNicSocket(this.link, id, { host, port }, true);
    this.sockets.set(id, s);
    return s;
  }

  /** Stops the NIC: its connections are reset. Idempotent. */
  close(): void {
    if (!this.handle) return;
    native.userNicClose(this.handle);
    this.handle = undefined;
    clearInterval(this.keepAlive);
    for (const s of this.sockets.values()) s.onClosed('the user-space NIC was closed');
    this.sockets.clear();
  }

  /** What /health shows of the NIC. */
  health(): { status: 'ok' | 'degraded'; [key: string]: unknown } {
    return {
      // Stopped: the node lives on, degraded, with no production traffic (the error says why).
      status: this.stopped ? 'degraded' : 'ok',
      device: this.options.device,
      mac: this.mac,
      ip: this.options.ip,
      subnet_prefix: this.options.subnet.prefix,
      ip_mtu: this.options.ipMtu,
      hugepages: this.hugepages,
      listening: [...this.listeners.keys()],
      connections: this.sockets.size,
      ...this.counts,
      ...(this.stopped && { error: this.stopped }),
    };
  }

  private open(): UserNicHandle {
    if (!this.handle) throw new UserSpaceNicError(`the user-space NIC ${this.options.device} is ${this.stopped ? `stopped: ${this.stopped}` : 'closed'}`);
    return this.handle;
  }

  private readonly link = {
    write: (id: number, bytes: Uint8Array): void => {
      if (this.handle) native.userNicWrite(this.handle, id, bytes);
    },
    control: (id: number, what: 'end' | 'abort' | 'pause' | 'resume'): void => {
      if (this.handle) native.userNicControl(this.handle, id, what);
    },
  };

  private onEvent(kind: string, id: number, a: string | number | Buffer | undefined, b: number | undefined): void {
    if (kind === 'accepted') {
      const onConnection = this.listeners.get(b ?? -1);
      const peer = String(a);
      const at = peer.lastIndexOf(':');
      const s = new UserNicSocket(this.link, id, { host: peer.slice(0, at), port: Number(peer.slice(at + 1)) }, false);
      if (!onConnection) {
        s.destroy();
        return;
      }
      this.sockets.set(id, s);
      this.counts.accepted++;
      onConnection(s);
      return;
    }
    if (kind === 'stopped') {
      // Stopped on its own only while open: close() drops the handle before the thread's last event.
      if (!this.handle) return;
      const why = String(a ?? 'the transport thread ended');
      this.stopped = why;
      this.close();
      for (const l of this.onStop) l(why);
      return;
    }
    const s = this.sockets.get(id);
    if (!s) return;
    switch (kind) {
      case 'connected':
        this.counts.connected++;
        s.onConnected();
        break;
      case 'data':
        s.onData(a as Buffer);
        break;
      case 'sent':
        s.onSent(Number(a));
        break;
      case 'ended':
        s.onEnded();
        break;
      case 'closed':
        this.sockets.delete(id);
        if (a !== undefined) {
          if (s.connecting) this.counts.refused++;
          else this.counts.reset++;
        }
        s.onClosed(a === undefined ? undefined : String(a));
        break;
    }
  }
}
