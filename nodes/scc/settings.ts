/**
 * The SCC's environment variables (HD-PLATFORM-REFERENCE.md, "SCC environment variables"), their
 * defaults and their checks. {@link readSccSettings} validates the whole table at start-up and
 * stops on the first run with every bad value listed, each naming its variable and what it expects.
 * The pipeline file (pipelines/scc.yaml) passes the values stages use as `${NAME:-default}`; the
 * parsers here are shared with those stage settings so both paths accept exactly the same text.
 */
import net from 'node:net';
import os from 'node:os';
import { NODE_ROLES } from '../../control/api';
import { HASH_ALGORITHMS, isHashAlgorithm, type HashAlgorithmName } from '../../engine-rs/hashChain';
import { parseCpuList } from '../../lib/cpuAffinity';
import { MTU_MODES, parseMtuMode, type MtuMode } from '../../net/mtuMode';
import { parseProductionInterface } from '../../transport/productionInterface';

/** One Storage Node replica from SN_TARGETS (`node_name:ip:control_port:prod_port`). */
export interface SnTarget {
  readonly name: string;
  readonly host: string;
  /** The node's Control Plane port (not used on the ingest path yet). */
  readonly controlPort: number;
  /** The node's production (HDWP) port: where the SCC replicates to. */
  readonly prodPort: number;
}

/** Log levels of LOG_LEVEL, most verbose first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The validated SCC settings. */
export interface SccSettings {
  readonly productionIp: string;
  readonly productionPort: number;
  readonly productionInterface: string;
  readonly commandInterface: string;
  readonly commandPort: number;
  readonly observabilityInterface: string;
  readonly observabilityPort: number;
  readonly snTargets: readonly SnTarget[];
  readonly recordSize: number;
  readonly hashAlgorithm: HashAlgorithmName;
  /** In bytes (see {@link parseHashQueueBytes} for the unit rule). */
  readonly maxHashQueueBytes: number;
  /** 0 disables the batch timeout. */
  readonly batchTimeoutMs: number;
  readonly timeoutAction: 'EOB' | 'BBN';
  readonly hashChainBlockSize: number;
  /** Port of the gRPC query dispatch service (QUERY_GRPC_PORT, not a reference variable). */
  readonly queryGrpcPort: number;
  /** Certificate roles that may call QueryDispatch once registered (QUERY_GRPC_ROLES; default `proxy` only). */
  readonly queryGrpcRoles: readonly string[];
  readonly nodeName: string;
  readonly logLevel: LogLevel;
  readonly dmsUrl: string;
  readonly otelGrpcUrl: string;
  /** CPU ids of MASTER_CPUSET, ascending; undefined (unset): nothing is pinned (docs/scc.md, "CPU pinning"). */
  readonly masterCpuset: readonly number[] | undefined;
  /** TRANSPORT_CORES: the event loop's CPUs, the first of MASTER_CPUSET. */
  readonly transportCores: number;
  /** KV_CORES: the engine workers' CPUs, the last of MASTER_CPUSET. */
  readonly kvCores: number;
  /** MTU_MODE: the data plane's datagram size (net/mtuMode.ts; `datagramPayloadBytes(mtuMode)`), instance-wide. */
  readonly mtuMode: MtuMode;
  readonly platformOptIn: boolean;
}

/** One bad variable. */
export interface SettingProblem {
  readonly variable: string;
  readonly value: string;
  readonly expected: string;
}

/** Start-up refused: one or more variables hold a bad value. */
export class SccSettingsError extends Error {
  /** Every bad variable, in table order. */
  readonly problems: readonly SettingProblem[];
  /** @param problems the bad variables */
  constructor(problems: readonly SettingProblem[]) {
    super(problems.map((p) => `${p.variable}=${JSON.stringify(p.value)}: expected ${p.expected}`).join('\n'));
    this.name = 'SccSettingsError';
    this.problems = problems;
  }
}

/** The outcome of parsing one value. */
export type ParsedValue<T> = { ok: true; value: T } | { ok: false; expected: string };

const ok = <T>(value: T): ParsedValue<T> => ({ ok: true, value });
const bad = <T>(expected: string): ParsedValue<T> => ({ ok: false, expected });

/** An integer in `min..max` written in decimal. */
export function parseIntIn(text: string, min: number, max: number): ParsedValue<number> {
  const expected = `an integer ${min}..${max}`;
  if (!/^\s*-?\d+\s*$/.test(text)) return bad(expected);
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= min && n <= max ? ok(n) : bad(expected);
}

/** A TCP port; 0 asks the kernel for a free one (tests, several nodes on one host). */
export function parsePort(text: string): ParsedValue<number> {
  const r = parseIntIn(text, 0, 65535);
  return r.ok ? r : bad('a port 0..65535 (0: any free port)');
}

/** Smallest and largest MAX_HASH_QUEUE_BYTES. */
export const HASH_QUEUE_LIMITS = { min: 1024 * 1024, max: 64 * 1024 ** 3 } as const;
const UNITS: Record<string, number> = { b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3 };

/**
 * MAX_HASH_QUEUE_BYTES. The reference calls it a megabyte limit, so a plain integer counts MiB
 * (`64` = 64 MiB); a number with a unit is taken as written (`64MiB`, `512KiB`, `1GiB`, `100MB`,
 * `67108864b`). 1 MiB..64 GiB: a plain byte count such as `67108864` would mean 64 TiB and is
 * refused rather than silently taken as megabytes.
 */
export function parseHashQueueBytes(text: string): ParsedValue<number> {
  const expected = 'a size 1MiB..64GiB: a plain integer counts MiB (the reference calls it a megabyte limit), or a number with b, KiB, MiB, GiB, kB, MB, GB';
  const m = /^\s*(\d+)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return bad(expected);
  const unit = m[2] === '' ? 1024 ** 2 : UNITS[m[2].toLowerCase()];
  if (unit === undefined) return bad(expected);
  const n = Number(m[1]) * unit;
  return Number.isSafeInteger(n) && n >= HASH_QUEUE_LIMITS.min && n <= HASH_QUEUE_LIMITS.max ? ok(n) : bad(expected);
}

/**
 * Certificate roles QueryDispatch accepts by default: the Proxy only, so every query goes through
 * the policy. hd_sql in direct mode (`sqlServer`), SDK clients (`client`) or administrators
 * (`admin`) dispatch only where QUERY_GRPC_ROLES names them (docs/query.md, "Who may dispatch").
 */
export const DEFAULT_DISPATCH_ROLES: readonly string[] = ['proxy'];
/** Roles a DMS-CA certificate may carry: the node roles, and administrators. */
const CERT_ROLES: readonly string[] = [...NODE_ROLES, 'admin'];

/** QUERY_GRPC_ROLES: certificate roles, comma-separated, at least one. */
export function parseDispatchRoles(text: string): ParsedValue<string[]> {
  const roles = [...new Set(text.split(',').map((r) => r.trim()).filter((r) => r !== ''))];
  if (roles.length === 0 || roles.some((r) => !CERT_ROLES.includes(r))) return bad(`a comma-separated list of certificate roles among ${CERT_ROLES.join(', ')}`);
  return ok(roles);
}

const TARGET_SHAPE = 'comma-separated node_name:ip:control_port:prod_port, at least one (e.g. sn1:10.0.0.11:6986:6987)';

/** SN_TARGETS: one or more `node_name:ip:control_port:prod_port`, names unique. */
export function parseSnTargets(text: string): ParsedValue<SnTarget[]> {
  const items = text.split(',').map((s) => s.trim());
  if (text.trim() === '') return bad(TARGET_SHAPE);
  const out: SnTarget[] = [];
  for (const item of items) {
    const f = item.split(':');
    if (f.length !== 4) return bad(`${TARGET_SHAPE}; '${item}' has ${f.length} field${f.length === 1 ? '' : 's'}`);
    const [name, host, cp, pp] = f;
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) return bad(`${TARGET_SHAPE}; '${name}' is not a node name (letters, digits, . _ -)`);
    if (!net.isIPv4(host)) return bad(`${TARGET_SHAPE}; '${host}' in '${item}' is not an IPv4 address`);
    const control = parseIntIn(cp, 1, 65535);
    const prod = parseIntIn(pp, 1, 65535);
    if (!control.ok || !prod.ok) return bad(`${TARGET_SHAPE}; ports in '${item}' must be integers 1..65535`);
    if (out.some((t) => t.name === name)) return bad(`${TARGET_SHAPE}; node name '${name}' appears twice`);
    out.push({ name, host, controlPort: control.value, prodPort: prod.value });
  }
  return ok(out);
}

/** MASTER_CPUSET: a Linux cpuset list such as `1-3` or `0,2,4-7` (lib/cpuAffinity.ts). */
export function parseCpuset(text: string): ParsedValue<number[]> {
  return parseCpuList(text);
}

/** MTU_MODE: `standard` or `jumbo`, any case. */
function parseMtuModeText(text: string): ParsedValue<MtuMode> {
  const m = parseMtuMode(text);
  return m ? ok(m) : bad(`one of ${MTU_MODES.join(', ')}`);
}

/** An http(s) URL (DMS_URL); `grpc`/`grpcs`/`http(s)` for OTEL_GRPC_URL. */
function parseUrl(text: string, schemes: readonly string[]): ParsedValue<string> {
  const expected = `a URL with scheme ${schemes.join(' or ')}`;
  try {
    const u = new URL(text);
    return schemes.includes(u.protocol.replace(/:$/, '')) ? ok(text) : bad(expected);
  } catch {
    return bad(expected);
  }
}

/** An interface name of this host, or empty (all interfaces / the IP variable decides). */
function parseInterface(text: string): ParsedValue<string> {
  if (text === '') return ok('');
  const names = Object.keys(os.networkInterfaces());
  // An address of this host binds just that address (one loopback address per node under `hd up`).
  if (names.includes(text) || net.isIP(text) !== 0) return ok(text);
  return bad(`empty, a kernel network interface of this host (${names.join(', ')}) or an IP address to bind`);
}

/**
 * PRODUCTION_INTERFACE: a kernel interface as {@link parseInterface} takes it, or a user-space NIC
 * (a PCIe address, or dpdk:<vdev>; transport/productionInterface.ts).
 */
function parseProductionInterfaceText(text: string): ParsedValue<string> {
  const p = parseProductionInterface(text);
  if ('error' in p) return bad(p.error);
  if (p.kind === 'userSpace') return ok(text.trim());
  const kernel = parseInterface(text);
  return kernel.ok ? kernel : bad(`${kernel.expected}, a PCIe address of a NIC bound to vfio-pci (0000:3b:00.0) or dpdk:<vdev> (the user-space NIC, docs/kernel-bypass.md)`);
}

/** One row of the reference's SCC table. */
export interface SccVariable {
  readonly name: string;
  /** What an unset or empty variable means. */
  readonly default: string;
  /** One line for docs/scc.md. */
  readonly doc: string;
  /** Checks a value (the default included). */
  parse(text: string): ParsedValue<unknown>;
}

const str = (text: string): ParsedValue<string> => ok(text);
const oneOf =
  (values: readonly string[], caseless = false) =>
  (text: string): ParsedValue<string> => {
    const hit = values.find((v) => (caseless ? v.toLowerCase() === text.toLowerCase() : v === text));
    return hit !== undefined ? ok(hit) : bad(`one of ${values.join(', ')}`);
  };

/** Every SCC variable of the reference, in its table's order, with our defaults. */
export const SCC_VARIABLES: readonly SccVariable[] = [
  { name: 'COMMAND_INTERFACE', default: '', doc: 'interface the command (Control Plane) port binds; empty: all', parse: parseInterface },
  { name: 'OBSERVABILITY_INTERFACE', default: '', doc: 'interface /health and /metrics bind; empty: all', parse: parseInterface },
  { name: 'LOG_LEVEL', default: 'info', doc: 'debug, info, warn or error', parse: oneOf(LOG_LEVELS, true) },
  { name: 'OTEL_GRPC_URL', default: '', doc: 'OpenTelemetry gRPC endpoint (accepted; export not built yet)', parse: (t) => (t === '' ? ok('') : parseUrl(t, ['http', 'https', 'grpc', 'grpcs'])) },
  { name: 'PRODUCTION_INTERFACE', default: '', doc: 'empty or a kernel interface name (the listener binds PRODUCTION_IP); or a user-space NIC: a PCIe address of a NIC bound to vfio-pci, or dpdk:<vdev>, which owns PRODUCTION_IP in PLATFORM_DATA_PLANE_SUBNET (docs/kernel-bypass.md)', parse: parseProductionInterfaceText },
  { name: 'PRODUCTION_IP', default: '0.0.0.0', doc: 'address the HDWP listener binds', parse: (t) => (net.isIP(t) !== 0 ? ok(t) : bad('an IPv4 (or IPv6) address')) },
  { name: 'PRODUCTION_PORT', default: '6987', doc: 'HDWP ingest port', parse: parsePort },
  { name: 'RECORD_SIZE', default: '150', doc: 'record size in bytes: the hash chain splits records here, hellos must match', parse: (t) => parseIntIn(t, 1, 65535) },
  { name: 'HASH_ALGORITHM', default: 'sha512', doc: HASH_ALGORITHMS.join(', '), parse: oneOf(HASH_ALGORITHMS) },
  { name: 'MAX_HASH_QUEUE_BYTES', default: '64', doc: 'cap on bytes queued for hashing; plain integer = MiB, or with a unit (64MiB)', parse: parseHashQueueBytes },
  { name: 'BATCH_TIMEOUT_MS', default: '60000', doc: 'inactivity after which an open batch gets TIMEOUT_ACTION; 0: never', parse: (t) => parseIntIn(t, 0, 86_400_000) },
  { name: 'TIMEOUT_ACTION', default: 'EOB', doc: 'EOB (close) or BBN (discard) on batch timeout', parse: oneOf(['EOB', 'BBN'], true) },
  { name: 'MASTER_CPUSET', default: '', doc: "cpuset every thread of the process is pinned to (e.g. the reference's 1-3); CPUs the process may not use are refused at start; empty: nothing pinned", parse: (t) => (t.trim() === '' ? ok(undefined) : parseCpuset(t)) },
  { name: 'TRANSPORT_CORES', default: '1', doc: "with MASTER_CPUSET: the event loop (every socket's I/O on the kernel path) on the set's first N CPUs", parse: (t) => parseIntIn(t, 1, 1024) },
  { name: 'KV_CORES', default: '1', doc: "with MASTER_CPUSET: the engine's workers (libuv's pool: scans, segment I/O; the hashing pool) on the set's last N CPUs", parse: (t) => parseIntIn(t, 1, 1024) },
  { name: 'MTU_MODE', default: 'standard', doc: "data-plane MTU mode, instance-wide: standard (1200-byte datagrams) or jumbo (8500; the production interface's MTU must be ≥ 8550); must be the DMS's", parse: parseMtuModeText },
  { name: 'SN_TARGETS', default: '', doc: 'replicas: node_name:ip:control_port:prod_port, comma-separated (required)', parse: parseSnTargets },
  { name: 'DMS_URL', default: 'https://dms-core:6986', doc: 'DMS endpoint; registration and mutual TLS are on when DMS_URL is set in the environment (docs/control-plane.md)', parse: (t) => parseUrl(t, ['http', 'https']) },
  { name: 'PLATFORM_BOOTSTRAP_TOKEN', default: '', doc: 'registration token (with DMS_URL: the nodeIdentity service)', parse: str },
  { name: 'K8S_SERVICEACCOUNT_TOKEN', default: '', doc: 'Kubernetes registration token (with DMS_URL: the nodeIdentity service)', parse: str },
  { name: 'PLATFORM_CLIENT_CERT_FILE', default: '', doc: 'pre-issued client certificate (with DMS_URL: the nodeIdentity service)', parse: str },
  { name: 'PLATFORM_CLIENT_KEY_FILE', default: '', doc: 'pre-issued client key (with DMS_URL: the nodeIdentity service)', parse: str },
  { name: 'PLATFORM_PKI_WRAP_KEY', default: '', doc: 'key wrapping persisted identity files (with DMS_URL: the nodeIdentity service)', parse: str },
  { name: 'NODE_NAME', default: os.hostname(), doc: 'name in logs and /health (default: the host name)', parse: (t) => (/^[\x21-\x7e]{1,128}$/.test(t) ? ok(t) : bad('1..128 printable characters without spaces')) },
  { name: 'COMMAND_PORT', default: '6986', doc: 'command (REST) port', parse: parsePort },
  { name: 'OBSERVABILITY_PORT', default: '8080', doc: '/health and /metrics port', parse: parsePort },
  { name: 'PLATFORM_OPT_IN', default: 'false', doc: 'true or false (accepted; no crash reporting is built in)', parse: oneOf(['true', 'false'], true) },
  { name: 'TRACKER_DSN', default: '', doc: 'error tracker DSN (accepted; unused)', parse: str },
  { name: 'HASH_CHAIN_BLOCK_SIZE', default: '64', doc: 'record hashes per chain block; identical on every node', parse: (t) => parseIntIn(t, 1, 1 << 20) },
  // Not in the reference's table: the port of the gRPC query dispatch service that replaced POST /v1/query/stop.
  { name: 'QUERY_GRPC_PORT', default: '6990', doc: 'gRPC QueryDispatch port (Dispatch, CancelQuery); binds COMMAND_INTERFACE', parse: parsePort },
  {
    name: 'QUERY_GRPC_ROLES',
    default: DEFAULT_DISPATCH_ROLES.join(','),
    doc: 'once registered: certificate roles (OU) that may call QueryDispatch, comma-separated; others get PERMISSION_DENIED. Add sqlServer (hd_sql direct mode), client (SDK direct mode) or admin only where they may bypass the Proxy and its policy',
    parse: parseDispatchRoles,
  },
];

/**
 * Validates every SCC variable of `env` (unset or empty takes the default) and returns the typed
 * settings; throws {@link SccSettingsError} listing every bad variable.
 */
export function readSccSettings(env: Readonly<Record<string, string | undefined>>): SccSettings {
  const problems: SettingProblem[] = [];
  const v = new Map<string, unknown>();
  for (const def of SCC_VARIABLES) {
    const raw = env[def.name];
    const text = raw === undefined || raw === '' ? def.default : raw;
    const r = def.parse(text);
    if (r.ok) v.set(def.name, r.value);
    else problems.push({ variable: def.name, value: text, expected: r.expected });
  }
  const cert = env.PLATFORM_CLIENT_CERT_FILE ?? '';
  const key = env.PLATFORM_CLIENT_KEY_FILE ?? '';
  if ((cert === '') !== (key === '')) {
    const [variable, value] = cert === '' ? ['PLATFORM_CLIENT_CERT_FILE', cert] : ['PLATFORM_CLIENT_KEY_FILE', key];
    problems.push({ variable, value, expected: 'set together with its pair (PLATFORM_CLIENT_CERT_FILE and PLATFORM_CLIENT_KEY_FILE)' });
  }
  if (problems.length > 0) throw new SccSettingsError(problems);
  const g = <T>(name: string): T => v.get(name) as T;
  const algorithm = g<string>('HASH_ALGORITHM');
  if (!isHashAlgorithm(algorithm)) throw new SccSettingsError([{ variable: 'HASH_ALGORITHM', value: algorithm, expected: HASH_ALGORITHMS.join(', ') }]);
  return {
    productionIp: g('PRODUCTION_IP'),
    productionPort: g('PRODUCTION_PORT'),
    productionInterface: g('PRODUCTION_INTERFACE'),
    commandInterface: g('COMMAND_INTERFACE'),
    commandPort: g('COMMAND_PORT'),
    observabilityInterface: g('OBSERVABILITY_INTERFACE'),
    observabilityPort: g('OBSERVABILITY_PORT'),
    snTargets: g('SN_TARGETS'),
    recordSize: g('RECORD_SIZE'),
    hashAlgorithm: algorithm,
    maxHashQueueBytes: g('MAX_HASH_QUEUE_BYTES'),
    batchTimeoutMs: g('BATCH_TIMEOUT_MS'),
    timeoutAction: g('TIMEOUT_ACTION'),
    hashChainBlockSize: g('HASH_CHAIN_BLOCK_SIZE'),
    queryGrpcPort: g('QUERY_GRPC_PORT'),
    queryGrpcRoles: g('QUERY_GRPC_ROLES'),
    nodeName: g('NODE_NAME'),
    logLevel: (g<string>('LOG_LEVEL')).toLowerCase() as LogLevel,
    dmsUrl: g('DMS_URL'),
    otelGrpcUrl: g('OTEL_GRPC_URL'),
    masterCpuset: g('MASTER_CPUSET'),
    transportCores: g('TRANSPORT_CORES'),
    kvCores: g('KV_CORES'),
    mtuMode: g('MTU_MODE'),
    platformOptIn: g<string>('PLATFORM_OPT_IN').toLowerCase() === 'true',
  };
}

/** The address of an interface (first IPv4, else first address), for *_INTERFACE variables. */
export function interfaceAddress(name: string): string | undefined {
  const addrs = os.networkInterfaces()[name];
  if (!addrs || addrs.length === 0) return undefined;
  return (addrs.find((a) => a.family === 'IPv4') ?? addrs[0]).address;
}
