/**
 * Where each node of `hd up` lives: its own loopback address (so every node keeps the reference's
 * standard ports, as on separate hosts), its data directory and its settings.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './packageRoot';
import type { NodeSpec } from './supervisor';

/** The reference's standard ports. */
export const PORTS = { production: 6987, command: 6986, observability: 8080, queryGrpc: 6990, pgwire: 5432, sqlHttp: 8081, flightSql: 31337, sqlReturn: 6989 } as const;

/** Settings of {@link platformLayout}. */
export interface LayoutOptions {
  /** Data directory (default ./.hd). */
  readonly dataDir: string;
  /** First two octets of the loopback addresses (default "127.0"): nodes sit at <net>.<role>.<n>. */
  readonly net?: string;
  /** Storage Nodes (default 2). */
  readonly storageNodes?: number;
  /** Bytes per record, instance-wide (RECORD_SIZE, default 150). */
  readonly recordSize?: number;
  /** Dataset schema files beyond the demo's (`--schema`): the Storage Nodes and the SQL server know them too. */
  readonly schemaFiles?: readonly string[];
}

/** The nodes of one platform, in start order, plus the addresses clients use. */
export interface PlatformLayout {
  readonly nodes: NodeSpec[];
  readonly scc: { readonly host: string; readonly port: number; readonly grpcPort: number };
  /** hd_sql: the PostgreSQL wire, HTTP and Arrow Flight SQL doors. */
  readonly sql: { readonly host: string; readonly pgPort: number; readonly httpPort: number; readonly flightPort?: number };
}

/**
 * `<dataDir>/schemas`: the demo schemas (up/demo/*.schema.json) and `extra`, one file per dataset
 * id — the SCHEMA_DIR of the Storage Nodes and the HD_SQL_SCHEMA_DIR of the SQL server.
 */
function writeSchemaDir(dataDir: string, extra: readonly string[]): string {
  const dir = path.join(dataDir, 'schemas');
  mkdirSync(dir, { recursive: true });
  const demo = path.join(packageRoot(), 'up', 'demo');
  for (const f of readdirSync(demo).filter((n) => n.endsWith('.schema.json'))) copyFileSync(path.join(demo, f), path.join(dir, f.replace(/\.schema\.json$/, '.json')));
  for (const f of extra) {
    const id = (JSON.parse(readFileSync(f, 'utf8')) as { id?: unknown }).id;
    if (typeof id !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(id)) throw new Error(`--schema ${f}: no usable "id"`);
    copyFileSync(f, path.join(dir, `${id}.json`));
  }
  return dir;
}

/** Checks `net` is two octets of 127.x. */
export function checkNet(net: string): string {
  if (!/^127\.(25[0-5]|2[0-4]\d|1?\d?\d)$/.test(net)) throw new RangeError(`--net must be two octets of a loopback address such as 127.0, got "${net}"`);
  return net;
}

/** Builds the node specs and writes each Storage Node's config.json under the data directory. */
export function platformLayout(opts: LayoutOptions): PlatformLayout {
  const net = checkNet(opts.net ?? '127.0');
  const recordSize = String(opts.recordSize ?? 150);
  const at = (role: number, n: number): string => `${net}.${role}.${n}`;
  const nodes: NodeSpec[] = [];
  const schemaDir = writeSchemaDir(opts.dataDir, opts.schemaFiles ?? []);
  const sns: { name: string; host: string }[] = [];
  for (let i = 1; i <= (opts.storageNodes ?? 2); i++) {
    const name = `sn${i}`;
    const host = at(30, i);
    const dir = path.join(opts.dataDir, name);
    mkdirSync(path.join(dir, 'd0'), { recursive: true });
    const configFile = path.join(dir, 'config.json');
    writeFileSync(
      configFile,
      `${JSON.stringify(
        {
          node_name: name,
          production_ip: host,
          production_port: PORTS.production,
          command_port: PORTS.command,
          observability_ip: host,
          observability_port: PORTS.observability,
          filter_device_selector: 'cpu',
          storage_devices: [{ name: 'd0', address: path.join(dir, 'd0'), type: 'dir' }],
        },
        null,
        2,
      )}\n`,
    );
    sns.push({ name, host });
    nodes.push({
      name,
      role: 'storage-node',
      args: ['run', 'pipelines/storage-node.yaml', '--config', configFile, '--quiet'],
      // The demo datasets' schemas: filters compile against them, and segments keep zone maps (docs/storage-node.md, "Queries").
      env: { RECORD_SIZE: recordSize, SCHEMA_DIR: schemaDir },
      host,
      readyPort: PORTS.production,
      healthUrl: `http://${host}:${PORTS.observability}/health`,
    });
  }
  const scc = at(20, 1);
  nodes.push({
    name: 'scc',
    role: 'scc',
    args: ['run', 'pipelines/scc.yaml', '--quiet'],
    env: {
      NODE_NAME: 'scc1',
      PRODUCTION_IP: scc,
      PRODUCTION_PORT: String(PORTS.production),
      COMMAND_INTERFACE: scc,
      COMMAND_PORT: String(PORTS.command),
      OBSERVABILITY_INTERFACE: scc,
      OBSERVABILITY_PORT: String(PORTS.observability),
      QUERY_GRPC_PORT: String(PORTS.queryGrpc),
      RECORD_SIZE: recordSize,
      SN_TARGETS: sns.map((s) => `${s.name}:${s.host}:${PORTS.command}:${PORTS.production}`).join(','),
    },
    host: scc,
    readyPort: PORTS.production,
    healthUrl: `http://${scc}:${PORTS.observability}/health`,
  });
  // hd_sql, started after the SCC: direct SCC mode over the same schema directory.
  const sql = at(0, 1);
  nodes.push({
    name: 'sql',
    role: 'sql',
    args: ['run', 'pipelines/sql.yaml', '--quiet'],
    env: {
      NODE_NAME: 'hd-sql',
      HD_SQL_SCC_TARGETS: `${scc}:${PORTS.production}:${PORTS.queryGrpc}`,
      HD_SQL_SCHEMA_DIR: schemaDir,
      PLATFORM_DATA_RETURN_HOST: sql,
      PLATFORM_DATA_RETURN_PORT: String(PORTS.sqlReturn),
      HD_SQL_PGWIRE_ADDRESS: `${sql}:${PORTS.pgwire}`,
      HD_SQL_HTTP_ADDRESS: `${sql}:${PORTS.sqlHttp}`,
      HD_SQL_FLIGHTSQL_ADDRESS: `${sql}:${PORTS.flightSql}`,
      // The demo spans up to a day: a query without a time bound reads all of it.
      HD_SQL_DEFAULT_LOOKBACK_SEC: String(2 * 86_400),
      OBSERVABILITY_INTERFACE: sql,
      OBSERVABILITY_PORT: String(PORTS.observability),
    },
    host: sql,
    readyPort: PORTS.pgwire,
    healthUrl: `http://${sql}:${PORTS.observability}/health`,
  });
  return { nodes, scc: { host: scc, port: PORTS.production, grpcPort: PORTS.queryGrpc }, sql: { host: sql, pgPort: PORTS.pgwire, httpPort: PORTS.sqlHttp, flightPort: PORTS.flightSql } };
}
