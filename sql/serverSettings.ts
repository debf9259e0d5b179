/**
 * The pieces of hd_sql's start-up that read the outside world: listener addresses
 * (HD_SQL_*_ADDRESS), the SCC target list (HD_SQL_SCC_TARGETS), the dataset schemas
 * (HD_SQL_SCHEMA_DIR), the password file and the advertised return address
 * (PLATFORM_DATA_RETURN_HOST / PLATFORM_DATA_PLANE_SUBNET). Every error names the variable.
 */
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Schema } from '../engine-rs/schema';
import { DEFAULT_QUERY_GRPC_PORT } from '../query/dispatch/dispatchService';
import type { SccTarget } from '../sdk/sccTargets';

/** A listener address. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

function port(text: string, variable: string, what: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 0 || n > 65535) throw new RangeError(`${variable}: ${what} must be a TCP port 0..65535, got "${text}"`);
  return n;
}

/**
 * Parses `[host]:port` as the reference writes listener addresses (`:5432` binds every interface;
 * `[::1]:5432` for IPv6).
 */
export function parseListenAddress(text: string, variable: string): ListenAddress {
  const m = /^\[([^\]]*)\]:(\d*)$/.exec(text.trim()) ?? /^([^:[\]]*):(\d*)$/.exec(text.trim());
  if (!m) throw new RangeError(`${variable} must be [host]:port such as :5432 or 127.0.0.1:5432, got "${text}"`);
  return { host: m[1] === '' || m[1] === undefined ? '0.0.0.0' : m[1], port: port(m[2] ?? '', variable, 'the port') };
}

/** Parses `host:port[:grpcPort]` entries, comma-separated (grpcPort defaults to the SCC's 6990). */
export function parseSccTargetList(text: string, variable: string): SccTarget[] {
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  return entries.map((e, i) => {
    const parts = e.split(':');
    if (parts.length < 2 || parts.length > 3 || parts[0] === '') throw new RangeError(`${variable} entry ${i + 1} "${e}" is not host:port[:grpcPort]`);
    const p = port(parts[1] as string, variable, `entry ${i + 1}'s data port`);
    const g = parts[2] === undefined ? DEFAULT_QUERY_GRPC_PORT : port(parts[2], variable, `entry ${i + 1}'s gRPC port`);
    if (p === 0 || g === 0) throw new RangeError(`${variable} entry ${i + 1} "${e}": port 0 is not an SCC's port`);
    return { host: parts[0] as string, port: p, grpcPort: g };
  });
}

/** Reads every `*.json` file of `dir` as a dataset schema; errors name the file and the variable. */
export function loadSchemaDir(dir: string, variable: string): Schema[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json')).sort();
  } catch (err) {
    throw new Error(`${variable}: cannot read the directory ${dir}: ${(err as Error).message}`);
  }
  const schemas: Schema[] = [];
  for (const n of names) {
    const file = path.join(dir, n);
    try {
      schemas.push(Schema.parse(readFileSync(file, 'utf8')));
    } catch (err) {
      throw new Error(`${variable}: ${file} is not a dataset schema: ${(err as Error).message}`);
    }
  }
  const ids = new Set<string>();
  for (const s of schemas) {
    if (ids.has(s.id)) throw new Error(`${variable}: dataset id "${s.id}" appears in two files of ${dir}`);
    ids.add(s.id);
  }
  return schemas;
}

/** The password in a password file: its first line, which must not be empty. */
export function readPasswordFile(file: string, variable: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${variable}: cannot read ${file}: ${(err as Error).message}`);
  }
  const first = text.split(/\r?\n/)[0] ?? '';
  if (first === '') throw new Error(`${variable}: ${file} is empty; its first line is the password`);
  return first;
}

/**
 * The address advertised to Storage Nodes: PLATFORM_DATA_RETURN_HOST outright, else this host's
 * IPv4 address inside PLATFORM_DATA_PLANE_SUBNET, else undefined (the query client then advertises
 * its local address toward the SCC).
 */
export function returnAddress(returnHost: string, subnet: string, interfaces = os.networkInterfaces()): { host: string | undefined; how: string } {
  if (returnHost !== '') return { host: returnHost, how: 'PLATFORM_DATA_RETURN_HOST' };
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(subnet.trim());
  if (!m || !net.isIPv4(m[1] as string) || Number(m[2]) > 32) throw new RangeError(`PLATFORM_DATA_PLANE_SUBNET must be an IPv4 CIDR such as 10.150.0.0/24, got "${subnet}"`);
  const block = new net.BlockList();
  block.addSubnet(m[1] as string, Number(m[2]), 'ipv4');
  for (const list of Object.values(interfaces)) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && block.check(a.address, 'ipv4')) return { host: a.address, how: `PLATFORM_DATA_PLANE_SUBNET ${subnet}` };
    }
  }
  return { host: undefined, how: `no local address in PLATFORM_DATA_PLANE_SUBNET ${subnet}: the local address toward the SCC` };
}

/** A host to show in a connect command: a wildcard bind is reached at loopback. */
export function connectHost(host: string): string {
  return host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
}
