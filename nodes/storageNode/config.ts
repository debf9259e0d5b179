/**
 * The Storage Node's `config.json` (the reference's keys, plus a few optional ones this build
 * defines; docs/storage-node.md). Validation reports every problem at once, each naming its key,
 * and unknown keys are refused with the closest known one suggested.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { SegmentIo } from '../../engine-rs/segment';
import { closest } from '../../lib/suggest';
import { parseProductionInterface } from '../../transport/productionInterface';

/** How a new batch's device is chosen (docs/storage-node.md, "Drive strategies"). */
export type DriveStrategy = 'round_robin' | 'fill_first' | 'most_free';
/** Every drive strategy, the default first. */
export const DRIVE_STRATEGIES: readonly DriveStrategy[] = ['round_robin', 'fill_first', 'most_free'];

/** What kind of medium a storage device is; on the kernel path all are directories on a mounted file system. */
export type DeviceType = 'nvme' | 'ssd' | 'hdd' | 'dir';
/** Every device type. */
export const DEVICE_TYPES: readonly DeviceType[] = ['nvme', 'ssd', 'hdd', 'dir'];

/** A device's `io` values (engine-rs/segment.ts's modes, listed here so validating a config loads no addon), the default first. */
export const DEVICE_IO_MODES: readonly SegmentIo[] = ['buffered', 'direct', 'uring'];

/** Where query filtering is offloaded (the reference's values). */
export type FilterDeviceSelector = 'gpu' | 'cpu' | 'host';
/** Every filter device selector. */
export const FILTER_DEVICE_SELECTORS: readonly FilterDeviceSelector[] = ['gpu', 'cpu', 'host'];

/** Hardware for hash offload; this build hashes in engine-rs on the node's cores (`cpu`). */
export type HashOffloadPlatform = 'cpu';
/** Every hash offload platform this build supports. */
export const HASH_OFFLOAD_PLATFORMS: readonly HashOffloadPlatform[] = ['cpu'];

/** One entry of `storage_devices`. */
export interface StorageDeviceConfig {
  readonly name: string;
  /** The directory segments go in (absolute; relative addresses resolve against the config file's directory). */
  readonly address: string;
  readonly type: DeviceType;
  /** How segments are written on the device (optional key `io`: `buffered` (default), `direct` or `uring`; docs/storage-node.md, "Direct I/O"). */
  readonly io?: SegmentIo;
}

/** A validated `config.json`. */
export interface StorageNodeConfig {
  /** Whether config.json lists `storage_devices`; when it does not, `storageDevices` is empty until {@link withDevices} gives the DMS's or the default ones. */
  readonly storageDevicesSet: boolean;
  /** The config file's directory: relative device addresses (config.json's, the DMS's, the default) resolve against it. */
  readonly baseDir: string;
  readonly nodeName: string;
  readonly dmsUrl: string;
  readonly commandPort: number;
  readonly productionPort: number;
  /** The interface carrying production traffic: a kernel interface (the one `MTU_MODE=jumbo` checks; empty: the one holding `productionIp`), or a user-space NIC: a PCIe address or `dpdk:<vdev>` (transport/productionInterface.ts). */
  readonly productionInterface: string;
  /** Address the production (HDWP) listener binds (optional key `production_ip`, default 0.0.0.0). */
  readonly productionIp: string;
  /** Address of the observability HTTP server (optional key `observability_ip`, default `productionIp`). */
  readonly observabilityIp: string;
  /** Port of /health and /metrics (optional key `observability_port`, default 8080; 0 picks a free port). */
  readonly observabilityPort: number;
  readonly driveStrategy: DriveStrategy;
  readonly storageDevices: readonly StorageDeviceConfig[];
  readonly useOcf: boolean;
  readonly ocfCacheDevices: readonly string[];
  readonly ocfCoreDevices: readonly string[];
  readonly filterDeviceSelector: FilterDeviceSelector;
  readonly hashOffloadPlatform: HashOffloadPlatform;
  /** Free bytes a device keeps in reserve: below it, no new batch goes there (optional key `reserve_bytes`, default 64 MiB). */
  readonly reserveBytes: number;
}

/** One problem in a config file: the key (a path such as `storage_devices[1].type`) and what is wrong. */
export interface ConfigIssue {
  readonly key: string;
  readonly message: string;
}

/** A config file that does not validate; `issues` lists every problem. */
export class ConfigError extends Error {
  /** Every problem found, in key order. */
  readonly issues: readonly ConfigIssue[];

  /** @param file the config file (for the message) */
  constructor(file: string, issues: readonly ConfigIssue[]) {
    super(`${file}: ${issues.map((i) => `${i.key}: ${i.message}`).join('; ')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** Defaults of the optional keys. */
export const CONFIG_DEFAULTS = {
  dms_url: 'https://dms-core:6986',
  command_port: 6986,
  production_interface: '',
  production_ip: '0.0.0.0',
  observability_port: 8080,
  drive_strategy: 'round_robin',
  use_ocf: false,
  filter_device_selector: 'cpu',
  hash_offload_platform: 'cpu',
  reserve_bytes: 64 * 1024 * 1024,
} as const;

const KEYS = [
  'node_name',
  'dms_url',
  'command_port',
  'production_port',
  'production_interface',
  'production_ip',
  'observability_ip',
  'observability_port',
  'drive_strategy',
  'storage_devices',
  'use_ocf',
  'ocf_cache_devices',
  'ocf_core_devices',
  'filter_device_selector',
  'hash_offload_platform',
  'reserve_bytes',
];
const DEVICE_KEYS = ['name', 'address', 'type', 'io'];
const PCIE = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * Validates a parsed `config.json`. `baseDir` is where relative device addresses resolve (the config
 * file's directory). Throws {@link ConfigError} listing every problem.
 */
export function parseStorageNodeConfig(doc: unknown, opts: { readonly file?: string; readonly baseDir?: string } = {}): StorageNodeConfig {
  const file = opts.file ?? 'config.json';
  const issues: ConfigIssue[] = [];
  const bad = (key: string, message: string): void => {
    issues.push({ key, message });
  };
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ConfigError(file, [{ key: '(root)', message: 'a config file is a JSON object of key: value' }]);
  const o = doc as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!KEYS.includes(k)) {
      const hint = closest(k, KEYS);
      bad(k, `unknown key${hint ? ` (did you mean '${hint}'?)` : ''}`);
    }
  }
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;

  const str = (k: string, fallback: string | undefined, check?: (s: string) => string | undefined): string => {
    if (!has(k)) {
      if (fallback === undefined) bad(k, 'is required');
      return fallback ?? '';
    }
    const v = o[k];
    if (typeof v !== 'string') {
      bad(k, `must be a string, got ${describe(v)}`);
      return fallback ?? '';
    }
    const why = check?.(v);
    if (why) bad(k, why);
    return v;
  };
  const port = (k: string, fallback: number | undefined, allowZero = false): number => {
    if (!has(k)) {
      if (fallback === undefined) bad(k, 'is required');
      return fallback ?? 0;
    }
    const v = o[k];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < (allowZero ? 0 : 1) || v > 65535) {
      bad(k, `must be a port number ${allowZero ? 0 : 1}..65535, got ${describe(v)}`);
      return fallback ?? 0;
    }
    return v;
  };
  const choice = <T extends string>(k: string, values: readonly T[], fallback: T): T => {
    const v = str(k, fallback);
    if (has(k) && typeof o[k] === 'string' && !(values as readonly string[]).includes(v)) {
      const hint = closest(v, values);
      bad(k, `must be one of ${values.map((x) => `'${x}'`).join(', ')}, got '${v}'${hint ? ` (did you mean '${hint}'?)` : ''}`);
      return fallback;
    }
    return v as T;
  };
  const names = (k: string): string[] => {
    if (!has(k)) return [];
    const v = o[k];
    if (!Array.isArray(v) || !v.every((x): x is string => typeof x === 'string')) {
      bad(k, `must be a list of device names, got ${describe(v)}`);
      return [];
    }
    return v;
  };

  const nodeName = str('node_name', undefined, (s) => (NAME.test(s) ? undefined : `must be 1..64 letters, digits, '_', '.', '-' starting with a letter or digit, got '${s}'`));
  const dmsUrl = str('dms_url', CONFIG_DEFAULTS.dms_url, (s) => (/^https?:\/\/[^\s/]+/.test(s) ? undefined : `must be an http(s) URL, got '${s}'`));
  const commandPort = port('command_port', CONFIG_DEFAULTS.command_port);
  const productionPort = port('production_port', undefined);
  const productionInterface = str('production_interface', CONFIG_DEFAULTS.production_interface, (s) => {
    const parsed = parseProductionInterface(s);
    return 'error' in parsed ? parsed.error : undefined;
  });
  const productionIp = str('production_ip', CONFIG_DEFAULTS.production_ip, (s) => (IPV4.test(s) ? undefined : `must be an IPv4 address, got '${s}'`));
  const observabilityIp = str('observability_ip', productionIp, (s) => (IPV4.test(s) ? undefined : `must be an IPv4 address, got '${s}'`));
  const observabilityPort = port('observability_port', CONFIG_DEFAULTS.observability_port, true);
  if (issues.every((i) => i.key !== 'production_port' && i.key !== 'observability_port') && observabilityPort !== 0 && observabilityPort === productionPort && observabilityIp === productionIp) {
    bad('observability_port', `must differ from production_port (both ${productionPort})`);
  }
  const driveStrategy = choice('drive_strategy', DRIVE_STRATEGIES, CONFIG_DEFAULTS.drive_strategy);
  const filterDeviceSelector = choice('filter_device_selector', FILTER_DEVICE_SELECTORS, CONFIG_DEFAULTS.filter_device_selector);
  const hashOffloadPlatform = choice('hash_offload_platform', HASH_OFFLOAD_PLATFORMS, CONFIG_DEFAULTS.hash_offload_platform);
  let useOcf: boolean = CONFIG_DEFAULTS.use_ocf;
  if (has('use_ocf')) {
    if (typeof o.use_ocf === 'boolean') useOcf = o.use_ocf;
    else bad('use_ocf', `must be true or false, got ${describe(o.use_ocf)}`);
  }
  let reserveBytes: number = CONFIG_DEFAULTS.reserve_bytes;
  if (has('reserve_bytes')) {
    const v = o.reserve_bytes;
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) reserveBytes = v;
    else bad('reserve_bytes', `must be a whole number of bytes ≥ 0, got ${describe(v)}`);
  }

  const baseDir = opts.baseDir ?? process.cwd();
  // Absent, the devices come from the DMS or the default (withDevices); OCF names are checked then.
  const storageDevicesSet = has('storage_devices');
  const storageDevices = storageDevicesSet ? devices(o.storage_devices, 'storage_devices', baseDir, bad) : [];
  const ocfCacheDevices = names('ocf_cache_devices');
  const ocfCoreDevices = names('ocf_core_devices');
  if (storageDevicesSet) ocfIssues(storageDevices, { useOcf, ocfCacheDevices, ocfCoreDevices }, 'storage_devices', bad);

  if (issues.length > 0) throw new ConfigError(file, issues);
  return {
    storageDevicesSet,
    baseDir,
    nodeName,
    dmsUrl,
    commandPort,
    productionPort,
    productionInterface,
    productionIp,
    observabilityIp,
    observabilityPort,
    driveStrategy,
    storageDevices,
    useOcf,
    ocfCacheDevices,
    ocfCoreDevices,
    filterDeviceSelector,
    hashOffloadPlatform,
    reserveBytes,
  };
}

/** Reads and validates a config file (JSON); relative device addresses resolve against its directory. */
export function loadStorageNodeConfig(file: string): StorageNodeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [{ key: '(file)', message: `cannot be read: ${(err as Error).message}` }]);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(file, [{ key: '(file)', message: `is not JSON: ${(err as Error).message}` }]);
  }
  return parseStorageNodeConfig(doc, { file, baseDir: path.dirname(path.resolve(file)) });
}

/** The devices a node uses when neither config.json nor the DMS names any: one directory beside the config file. */
export function defaultDevices(nodeName: string): { name: string; address: string; type: DeviceType }[] {
  return [{ name: 'd0', address: `${nodeName}.d0`, type: 'dir' }];
}

/**
 * `config` with the devices of another source (the DMS's `devices`, or {@link defaultDevices}) in
 * place of an absent `storage_devices`, checked as config.json's would be (OCF names included);
 * throws {@link ConfigError} naming `source` (e.g. "the DMS's devices of node 'sn1'") and each bad entry.
 */
export function withDevices(config: StorageNodeConfig, list: readonly unknown[], source: string): StorageNodeConfig {
  const issues: ConfigIssue[] = [];
  const bad = (key: string, message: string): void => void issues.push({ key, message });
  const storageDevices = devices(list, 'devices', config.baseDir, bad);
  ocfIssues(storageDevices, config, 'devices', bad);
  if (issues.length > 0) throw new ConfigError(source, issues);
  return { ...config, storageDevices };
}

/** The OCF rules over a device list (`listKey`: how the list is named in messages). */
function ocfIssues(storageDevices: readonly StorageDeviceConfig[], o: Pick<StorageNodeConfig, 'useOcf' | 'ocfCacheDevices' | 'ocfCoreDevices'>, listKey: string, bad: (key: string, message: string) => void): void {
  const known = new Set(storageDevices.map((d) => d.name));
  for (const [k, list] of [
    ['ocf_cache_devices', o.ocfCacheDevices],
    ['ocf_core_devices', o.ocfCoreDevices],
  ] as const) {
    list.forEach((n, i) => {
      if (!known.has(n)) bad(`${k}[${i}]`, `names no device of ${listKey}: '${n}'`);
    });
    if (new Set(list).size !== list.length) bad(k, 'lists a device twice');
  }
  if (o.useOcf) {
    if (o.ocfCacheDevices.length === 0) bad('ocf_cache_devices', 'must name at least one device when use_ocf is true');
    if (o.ocfCoreDevices.length === 0) bad('ocf_core_devices', 'must name at least one device when use_ocf is true');
    for (const n of o.ocfCacheDevices) if (o.ocfCoreDevices.includes(n)) bad('ocf_core_devices', `device '${n}' cannot be both a cache and a core device`);
    for (const d of storageDevices) {
      if (!o.ocfCacheDevices.includes(d.name) && !o.ocfCoreDevices.includes(d.name)) bad(listKey, `device '${d.name}' is in neither ocf_cache_devices nor ocf_core_devices (use_ocf is true)`);
    }
  }
}

function devices(v: unknown, listKey: string, baseDir: string, bad: (key: string, message: string) => void): StorageDeviceConfig[] {
  if (!Array.isArray(v) || v.length === 0) {
    bad(listKey, `must be a non-empty list of {name, address, type}, got ${describe(v)}`);
    return [];
  }
  const out: StorageDeviceConfig[] = [];
  const seenNames = new Set<string>();
  const seenDirs = new Map<string, string>();
  v.forEach((d: unknown, i) => {
    const at = `${listKey}[${i}]`;
    if (typeof d !== 'object' || d === null || Array.isArray(d)) {
      bad(at, `must be an object {name, address, type}, got ${describe(d)}`);
      return;
    }
    const e = d as Record<string, unknown>;
    let ok = true;
    for (const k of Object.keys(e)) {
      if (!DEVICE_KEYS.includes(k)) {
        const hint = closest(k, DEVICE_KEYS);
        bad(`${at}.${k}`, `unknown key${hint ? ` (did you mean '${hint}'?)` : ''}; a device has name, address, type and io`);
        ok = false;
      }
    }
    const name = e.name;
    if (typeof name !== 'string' || !NAME.test(name)) {
      bad(`${at}.name`, `must be 1..64 letters, digits, '_', '.', '-', got ${describe(name)}`);
      ok = false;
    } else if (seenNames.has(name)) {
      bad(`${at}.name`, `'${name}' names two devices`);
      ok = false;
    }
    const type = e.type;
    if (typeof type !== 'string' || !(DEVICE_TYPES as readonly string[]).includes(type)) {
      const hint = typeof type === 'string' ? closest(type, DEVICE_TYPES) : undefined;
      bad(`${at}.type`, `must be one of ${DEVICE_TYPES.map((x) => `'${x}'`).join(', ')}, got ${describe(type)}${hint ? ` (did you mean '${hint}'?)` : ''}`);
      ok = false;
    }
    const io = e.io === undefined ? 'buffered' : e.io;
    if (typeof io !== 'string' || !(DEVICE_IO_MODES as readonly string[]).includes(io)) {
      const hint = typeof io === 'string' ? closest(io, DEVICE_IO_MODES) : undefined;
      bad(`${at}.io`, `must be 'buffered' (through the page cache), 'direct' (O_DIRECT) or 'uring' (O_DIRECT through io_uring), got ${describe(io)}${hint ? ` (did you mean '${hint}'?)` : ''}`);
      ok = false;
    }
    const address = e.address;
    let dir = '';
    if (typeof address !== 'string' || address === '') {
      bad(`${at}.address`, `must be a directory path, got ${describe(address)}`);
      ok = false;
    } else if (PCIE.test(address)) {
      bad(`${at}.address`, `'${address}' is a PCIe address; this build stores through the kernel's file system, so give the directory the device is mounted at`);
      ok = false;
    } else {
      dir = path.resolve(baseDir, address);
      const other = seenDirs.get(dir);
      if (other !== undefined) {
        bad(`${at}.address`, `'${address}' is also the address of device '${other}'`);
        ok = false;
      }
    }
    if (typeof name === 'string') seenNames.add(name);
    if (dir !== '' && typeof name === 'string') seenDirs.set(dir, name);
    if (ok) out.push({ name: name as string, address: dir, type: type as DeviceType, io: io as SegmentIo });
  });
  return out;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `'${v}'`;
  return `${typeof v} ${String(v)}`;
}
