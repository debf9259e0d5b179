/**
 * Linux network namespaces as separate hosts for the multi-host test: one namespace per host, a
 * switch namespace holding two bridges (the control-plane and the data-plane subnet), one veth pair
 * per host and plane from the host to its bridge, and one pair from the test's own namespace to each
 * bridge (the operator's seat: admin calls, health, segment checks). Every name carries a prefix
 * unique to the run (`hdmh-<pid>-<random>`); a leftover of a crashed run is swept by the next run
 * once its pid is gone. Deleting the namespaces deletes every veth and bridge with them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** The two subnets every host may sit on. */
export type Plane = 'cp' | 'dp';

/** One host of the topology: its name and the planes it is cabled to. */
export interface HostSpec {
  readonly name: string;
  readonly planes: readonly Plane[];
}

/** The namespaces, subnets and addresses of a built topology, and how to cut and tear it down. */
export interface Topology {
  /** The run's unique prefix of every namespace name. */
  readonly prefix: string;
  /** CIDR of each plane (PLATFORM_CONTROL_PLANE_SUBNET, PLATFORM_DATA_PLANE_SUBNET). */
  readonly subnet: Readonly<Record<Plane, string>>;
  /** The namespace of host `name`. */
  ns(name: string): string;
  /** The address of host `name` on `plane` (`root`: the test's own namespace). */
  address(name: string, plane: Plane): string;
  /** Pulls host `name`'s cables: the switch ends of its veths go down. */
  cut(name: string): void;
  /** Plugs them in again. */
  restore(name: string): void;
  /** Deletes every namespace (and so every veth and bridge) of the run; never throws. */
  destroy(): void;
}

const NS_PREFIX = 'hdmh-';

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why namespaces cannot be used here (not root, no CAP_NET_ADMIN, no `ip`), or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  const which = spawnSync('ip', ['-V'], { encoding: 'utf8' });
  if (which.error) return `the 'ip' command (iproute2) is missing: ${which.error.message}`;
  const probe = `${NS_PREFIX}probe-${process.pid}`;
  const add = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (add.status !== 0) return `'ip netns add' is refused (root with CAP_NET_ADMIN needed): ${add.stderr.trim()}`;
  spawnSync('ip', ['netns', 'del', probe]);
  return undefined;
}

/** Deletes namespaces of earlier runs whose process is gone (a crashed run's leftovers). */
export function sweepStale(): void {
  for (const line of ip(['netns', 'list']).split('\n')) {
    const m = new RegExp(`^(${NS_PREFIX}(\\d+)-\\S+)`).exec(line);
    if (!m || Number(m[2]) === process.pid) continue;
    let alive = true;
    try {
      process.kill(Number(m[2]), 0);
    } catch {
      alive = false;
    }
    if (!alive) spawnSync('ip', ['netns', 'del', m[1] as string]);
  }
}

/** Two free /24 subnets in 10.0.0.0/8 that no route of this namespace covers yet. */
function freeSubnets(): [string, string] {
  const routes = ip(['-4', 'route', 'show', 'table', 'all']);
  for (;;) {
    const a = 100 + (randomBytes(1)[0] as number) % 150;
    const b = (randomBytes(1)[0] as number) % 254;
    const cp = `10.${a}.${b}`;
    const dp = `10.${a}.${b + 1}`;
    if (!routes.includes(`${cp}.`) && !routes.includes(`${dp}.`) && !routes.includes(`10.${a}.0.0/16`)) return [cp, dp];
  }
}

/** Builds the namespaces, bridges and veths of `hosts`; on any failure what was built is deleted again. */
export function buildTopology(hosts: readonly HostSpec[]): Topology {
  const tag = randomBytes(3).toString('hex');
  const prefix = `${NS_PREFIX}${process.pid}-${tag}`;
  const [cpNet, dpNet] = freeSubnets();
  const net: Record<Plane, string> = { cp: cpNet, dp: dpNet };
  const sw = `${prefix}-sw`;
  const created: string[] = [];
  const rootLinks = { cp: `hm${tag}c`, dp: `hm${tag}d` };
  const index = new Map(hosts.map((h, i) => [h.name, 10 + i]));
  const address = (name: string, plane: Plane): string => {
    if (name === 'root') return `${net[plane]}.254`;
    const i = index.get(name);
    if (i === undefined) throw new Error(`no host '${name}' in this topology`);
    return `${net[plane]}.${i}`;
  };
  const destroy = (): void => {
    for (const n of created.reverse()) spawnSync('ip', ['netns', 'del', n]);
    created.length = 0;
    for (const l of Object.values(rootLinks)) spawnSync('ip', ['link', 'del', l], { stdio: 'ignore' });
  };
  const swEnd = (host: string, plane: Plane): string => `${plane}-${host}`.slice(0, 15);
  try {
    ip(['netns', 'add', sw]);
    created.push(sw);
    for (const plane of ['cp', 'dp'] as const) {
      ip(['-n', sw, 'link', 'add', `br-${plane}`, 'type', 'bridge']);
      ip(['-n', sw, 'link', 'set', `br-${plane}`, 'up']);
      // The test's own seat on the plane.
      ip(['link', 'add', rootLinks[plane], 'type', 'veth', 'peer', 'name', swEnd('root', plane), 'netns', sw]);
      ip(['-n', sw, 'link', 'set', swEnd('root', plane), 'master', `br-${plane}`, 'up']);
      ip(['addr', 'add', `${address('root', plane)}/24`, 'dev', rootLinks[plane]]);
      ip(['link', 'set', rootLinks[plane], 'up']);
    }
    for (const h of hosts) {
      const ns = `${prefix}-${h.name}`;
      ip(['netns', 'add', ns]);
      created.push(ns);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      for (const plane of h.planes) {
        ip(['-n', sw, 'link', 'add', swEnd(h.name, plane), 'type', 'veth', 'peer', 'name', `eth-${plane}`, 'netns', ns]);
        ip(['-n', sw, 'link', 'set', swEnd(h.name, plane), 'master', `br-${plane}`, 'up']);
        ip(['-n', ns, 'addr', 'add', `${address(h.name, plane)}/24`, 'dev', `eth-${plane}`]);
        ip(['-n', ns, 'link', 'set', `eth-${plane}`, 'up']);
      }
    }
  } catch (err) {
    destroy();
    throw err;
  }
  const planesOf = (name: string): readonly Plane[] => hosts.find((h) => h.name === name)?.planes ?? [];
  return {
    prefix,
    subnet: { cp: `${net.cp}.0/24`, dp: `${net.dp}.0/24` },
    ns: (name) => `${prefix}-${name}`,
    address,
    cut: (name) => planesOf(name).forEach((p) => ip(['-n', sw, 'link', 'set', swEnd(name, p), 'down'])),
    restore: (name) => planesOf(name).forEach((p) => ip(['-n', sw, 'link', 'set', swEnd(name, p), 'up'])),
    destroy,
  };
}
