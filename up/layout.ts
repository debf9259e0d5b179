/**
 * Where each node of `hd up` lives: its own loopback address (so every node keeps the reference's
 * standard ports, as on separate hosts), its data directory and its settings.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ingressSecretFile } from './ingressSecret';
import { packageRoot } from './packageRoot';
import { sqlPasswordFile } from './sqlPassword';
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
  /** Where hd_sql sends its reads: through the HD Proxy (default) or straight to the SCC. */
  readonly sqlUpstream?: 'proxy' | 'scc';
}

/** The DMS's files under the data directory (`DMS_DATA_DIR` = `<dataDir>/dms`). */
export interface DmsFiles {
  readonly dir: string;
  /** The root certificate (DMS-CA): clients verify the DMS and the Proxy with it. */
  readonly caCert: string;
  /** The administrator credential the DMS issues on its first start (mode 0600). */
  readonly adminCert: string;
  readonly adminKey: string;
}

/** Where the DMS of `dataDir` keeps its CA and the administrator credential (docs/control-plane.md). */
export function dmsFiles(dataDir: string): DmsFiles {
  const dir = path.join(dataDir, 'dms');
  return { dir, caCert: path.join(dir, 'ca', 'ca.cert.pem'), adminCert: path.join(dir, 'admin', 'admin.cert.pem'), adminKey: path.join(dir, 'admin', 'admin.key.pem') };
}

/** hd_sql's DMS certificate and key, which `hd up` has the DMS issue (node `hd-sql`, role `sqlServer`). */
export function sqlCredentialFiles(dataDir: string): { readonly cert: string; readonly key: string } {
  const dir = path.join(dataDir, 'sql');
  return { cert: path.join(dir, 'hd-sql.cert.pem'), key: path.join(dir, 'hd-sql.key.pem') };
}

/** The identity hd_sql presents to the Proxy; the default policy lets every identity see everything. */
export const SQL_PROXY_IDENTITY = { role: 'admin', email: 'hd-sql@localhost' } as const;

/** The nodes of one platform, in start order, plus the addresses clients use. */
export interface PlatformLayout {
  readonly nodes: NodeSpec[];
  /** DMS-Core + DMS-CA: control plane URL, its files, and the schema files it is given. */
  readonly dms: { readonly url: string; readonly host: string; readonly files: DmsFiles };
  /** The HD Proxy: queries for an identity (`POST /v1/query`), topology for SDK clients. */
  readonly proxy: { readonly url: string; readonly host: string; readonly nodeName: string };
  /** The storage nodes as the DMS is told about them (cluster c1). */
  readonly storageNodes: readonly { readonly name: string; readonly host: string }[];
  /** The SCC's node name in the DMS. */
  readonly sccName: string;
  /** `<dataDir>/schemas`: one schema file per dataset (demo and --schema). */
  readonly schemaDir: string;
  /** Whether hd_sql reads through the Proxy. */
  readonly sqlUpstream: 'proxy' | 'scc';
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
  const sqlUpstream = opts.sqlUpstream ?? 'proxy';
  // The DMS first: everything else is declared to it, and the Proxy and hd_sql register with it.
  const dmsHost = at(10, 1);
  const files = dmsFiles(opts.dataDir);
  const dmsUrl = `https://${dmsHost}:${PORTS.command}`;
  nodes.push({
    name: 'dms',
    role: 'dms',
    args: ['run', 'pipelines/dms.yaml', '--quiet'],
    env: {
      NODE_NAME: 'dms-core',
      DMS_DATA_DIR: files.dir,
      COMMAND_INTERFACE: dmsHost,
      COMMAND_PORT: String(PORTS.command),
      OBSERVABILITY_INTERFACE: dmsHost,
      OBSERVABILITY_PORT: String(PORTS.observability),
      // Clients reach it by address: its certificate must name that address.
      DMS_SERVER_NAMES: `dms-core,localhost,${dmsHost}`,
      RECORD_SIZE: recordSize,
    },
    host: dmsHost,
    readyPort: PORTS.command,
    healthUrl: `http://${dmsHost}:${PORTS.observability}/health`,
  });
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
      // It registers with the DMS (a bootstrap token per start: platform.ts; its certificate is kept
      // beside config.json) and takes only the SCC's certificate on its ports (mutual TLS).
      env: { RECORD_SIZE: recordSize, SCHEMA_DIR: schemaDir, DMS_URL: dmsUrl, PLATFORM_CA_CERT_PEM: files.caCert },
      host,
      readyPort: PORTS.production,
      healthUrl: `http://${host}:${PORTS.observability}/health`,
    });
  }
  const scc = at(20, 1);
  const sccName = 'scc1';
  nodes.push({
    name: 'scc',
    role: 'scc',
    args: ['run', 'pipelines/scc.yaml', '--quiet'],
    env: {
      NODE_NAME: sccName,
      PRODUCTION_IP: scc,
      PRODUCTION_PORT: String(PORTS.production),
      COMMAND_INTERFACE: scc,
      COMMAND_PORT: String(PORTS.command),
      OBSERVABILITY_INTERFACE: scc,
      OBSERVABILITY_PORT: String(PORTS.observability),
      QUERY_GRPC_PORT: String(PORTS.queryGrpc),
      RECORD_SIZE: recordSize,
      SN_TARGETS: sns.map((s) => `${s.name}:${s.host}:${PORTS.command}:${PORTS.production}`).join(','),
      // Registered with the DMS like the Storage Nodes: its links to them are mutual TLS.
      DMS_URL: dmsUrl,
      PLATFORM_CA_CERT_PEM: files.caCert,
      STATE_DIR: path.join(opts.dataDir, 'scc', 'identity'),
    },
    host: scc,
    readyPort: PORTS.production,
    healthUrl: `http://${scc}:${PORTS.observability}/health`,
  });
  // The Proxy registers with the DMS (a fresh bootstrap token per start: platform.ts) and dispatches to the SCC.
  const proxyHost = at(11, 1);
  const proxyName = 'hd-proxy';
  nodes.push({
    name: 'proxy',
    role: 'proxy',
    args: ['run', 'pipelines/proxy.yaml', '--quiet'],
    env: {
      NODE_NAME: proxyName,
      COMMAND_INTERFACE: proxyHost,
      COMMAND_PORT: String(PORTS.command),
      OBSERVABILITY_INTERFACE: proxyHost,
      OBSERVABILITY_PORT: String(PORTS.observability),
      DMS_URL: dmsUrl,
      PLATFORM_CA_CERT_PEM: files.caCert,
      // Identity headers only from an ingress: hd_sql's sqlServer certificate, or this secret (local clients).
      PROXY_INGRESS_SECRET_FILE: ingressSecretFile(opts.dataDir),
    },
    host: proxyHost,
    readyPort: PORTS.command,
    healthUrl: `http://${proxyHost}:${PORTS.observability}/health`,
  });
  // hd_sql, started last: behind the Proxy (schemas from the DMS), or straight to the SCC over the schema directory.
  const sql = at(0, 1);
  const sqlCreds = sqlCredentialFiles(opts.dataDir);
  const upstream: Record<string, string> =
    sqlUpstream === 'proxy'
      ? {
          HD_PROXY_ENDPOINT: `https://${proxyHost}:${PORTS.command}`,
          HD_DMS_ENDPOINT: dmsUrl,
          HD_DMS_CA_FILE: files.caCert,
          HD_DMS_CLIENT_CERT_FILE: sqlCreds.cert,
          HD_DMS_CLIENT_KEY_FILE: sqlCreds.key,
          HD_SQL_PROXY_ROLE: SQL_PROXY_IDENTITY.role,
          HD_SQL_PROXY_EMAIL: SQL_PROXY_IDENTITY.email,
          // Every node is registered: results come back over mutual TLS too.
          HD_SQL_RESULT_TLS: 'true',
        }
      : { HD_SQL_SCC_TARGETS: `${scc}:${PORTS.production}:${PORTS.queryGrpc}`, HD_SQL_SCHEMA_DIR: schemaDir };
  nodes.push({
    name: 'sql',
    role: 'sql',
    args: ['run', 'pipelines/sql.yaml', '--quiet'],
    env: {
      NODE_NAME: 'hd-sql',
      ...upstream,
      PLATFORM_DATA_RETURN_HOST: sql,
      PLATFORM_DATA_RETURN_PORT: String(PORTS.sqlReturn),
      HD_SQL_PGWIRE_ADDRESS: `${sql}:${PORTS.pgwire}`,
      HD_SQL_HTTP_ADDRESS: `${sql}:${PORTS.sqlHttp}`,
      HD_SQL_FLIGHTSQL_ADDRESS: `${sql}:${PORTS.flightSql}`,
      // Every door asks for the password hd up made (up/sqlPassword.ts); any user name.
      HD_SQL_PGWIRE_PASSWORD_FILE: sqlPasswordFile(opts.dataDir),
      // The demo spans up to a day: a query without a time bound reads all of it.
      HD_SQL_DEFAULT_LOOKBACK_SEC: String(2 * 86_400),
      OBSERVABILITY_INTERFACE: sql,
      OBSERVABILITY_PORT: String(PORTS.observability),
    },
    host: sql,
    readyPort: PORTS.pgwire,
    healthUrl: `http://${sql}:${PORTS.observability}/health`,
  });
  return {
    nodes,
    dms: { url: dmsUrl, host: dmsHost, files },
    proxy: { url: `https://${proxyHost}:${PORTS.command}`, host: proxyHost, nodeName: proxyName },
    storageNodes: sns,
    sccName,
    schemaDir,
    sqlUpstream,
    scc: { host: scc, port: PORTS.production, grpcPort: PORTS.queryGrpc },
    sql: { host: sql, pgPort: PORTS.pgwire, httpPort: PORTS.sqlHttp, flightPort: PORTS.flightSql },
  };
}
