/**
 * What `hd up` does on the DMS as its administrator (with the credential the DMS issued into its
 * data directory, its key opened with PLATFORM_PKI_WRAP_KEY when sealed): declares the cluster, the
 * SCC, the Storage Nodes and the Proxy with their addresses (the DMS issues privileged roles only
 * to declared nodes, and names only declared addresses in certificates), puts the dataset schemas,
 * installs the default policy on the first start, issues the nodes' bootstrap tokens (each bound to
 * the node's name and declared role) and registers hd_sql. Every step is idempotent, so a second `hd up` over the same
 * data directory finds the state and changes nothing it does not have to.
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../lib/atomicFile';
import { DMS_PEER_ROLES, requestJson, type ClientTls, type JsonAnswer } from '../net/jsonClient';
import { isSealed, parseWrapKey, unseal, WrapKeyError } from '../net/pki/wrapKey';
import { ADMIN_KEY_PURPOSE } from '../control/dms/adminCredentials';
import type { NodeRole } from '../control/api';
import { registerWithDms } from '../net/registerWithDms';
import { PORTS, sqlCredentialFiles, type PlatformLayout } from './layout';

/** The cluster `hd up` declares (the primary one). */
export const CLUSTER = 'c1';

/**
 * The policy `hd up` installs when the DMS has none: every identity may query every dataset and
 * see every field. Replace it with `PUT /v1/policy` (docs/proxy.md, "The policy"); a later
 * `hd up` keeps whatever policy the DMS holds.
 */
export const DEFAULT_POLICY = 'package hd.authz\nimport rego.v1\n\n# hd up\'s default: every identity sees everything. Replace with PUT /v1/policy.\ndefault allow := true\n';

/**
 * RSA size of the key hd up makes for hd_sql: PLATFORM_KEY_BITS as the nodes read it (default 4096,
 * registration v2); the DMS refuses keys below its DMS_MIN_KEY_BITS.
 */
export function platformKeyBits(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.PLATFORM_KEY_BITS;
  if (v === undefined || v === '') return 4096;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 2048 || n > 16384) throw new RangeError(`PLATFORM_KEY_BITS must be an RSA key size from 2048 to 16384 bits, got "${v}"`);
  return n;
}

/** Lifetime of the bootstrap tokens `hd up` issues: they are used within seconds. */
const TOKEN_TTL_S = 300;

/** The DMS, reached with the administrator credential. */
export class DmsAdmin {
  private constructor(
    readonly url: string,
    private readonly tls: ClientTls,
  ) {}

  /**
   * Reads the CA and the administrator credential the DMS wrote under its data directory (a sealed
   * key is opened with PLATFORM_PKI_WRAP_KEY from `env`, as the DMS sealed it).
   */
  static open(layout: PlatformLayout, env: NodeJS.ProcessEnv = process.env): DmsAdmin {
    const f = layout.dms.files;
    let key = readFileSync(f.adminKey, 'utf8');
    if (isSealed(key)) {
      const wrapKey = parseWrapKey(env.PLATFORM_PKI_WRAP_KEY);
      if (!wrapKey) throw new WrapKeyError(`${f.adminKey} is encrypted but PLATFORM_PKI_WRAP_KEY is not set`);
      key = unseal(key, wrapKey, ADMIN_KEY_PURPOSE, f.adminKey);
    }
    return new DmsAdmin(layout.dms.url, { ca: readFileSync(f.caCert, 'utf8'), cert: readFileSync(f.adminCert, 'utf8'), key, roles: DMS_PEER_ROLES });
  }

  /** The DMS-CA root certificate (PEM). */
  get caPem(): string {
    return this.tls.ca as string;
  }

  /** One call, whatever its answer. */
  request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', route: string, body?: unknown): Promise<JsonAnswer> {
    return requestJson(method, `${this.url}${route}`, this.tls, body);
  }

  /** One call; throws with the DMS's error code and message unless the answer is 2xx. */
  async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', route: string, body?: unknown): Promise<JsonAnswer> {
    const a = await this.request(method, route, body);
    if (a.status >= 200 && a.status < 300) return a;
    const b = a.body as { error?: unknown; message?: unknown } | undefined;
    throw new Error(`the DMS answered ${a.status} to ${method} ${route}: ${typeof b === 'object' && b !== null ? `${String(b.error)}: ${String(b.message)}` : String(a.body)}`);
  }

  /** A single-use bootstrap token for `nodeName`, for its declared role (or `role`, declaring the node when privileged). */
  async bootstrapToken(nodeName: string, role?: NodeRole): Promise<string> {
    const a = await this.call('POST', '/v1/bootstrap-tokens', { node_name: nodeName, ...(role !== undefined && { role }), ttl_s: TOKEN_TTL_S });
    return (a.body as { token: string }).token;
  }
}

/**
 * Declares cluster c1 (primary), the SCC (production, gRPC, control, observability), the Storage
 * Nodes (production, control, observability: the Proxy reads batch filters there) and the Proxy
 * (control: clients and the DMS reach it there), and puts every schema of the schema directory.
 * PUTs, so a second start only rewrites the same values.
 */
export async function declarePlatform(dms: DmsAdmin, layout: PlatformLayout): Promise<{ datasets: string[] }> {
  const hp = (host: string, port: number): { host: string; port: number } => ({ host, port });
  await dms.call('PUT', `/v1/clusters/${CLUSTER}`, { primary: true });
  const s = layout.scc.host;
  await dms.call('PUT', `/v1/nodes/${layout.sccName}`, {
    role: 'scc',
    cluster: CLUSTER,
    addresses: { production: hp(s, PORTS.production), grpc: hp(s, PORTS.queryGrpc), control: hp(s, PORTS.command), observability: hp(s, PORTS.observability) },
  });
  for (const sn of layout.storageNodes) {
    await dms.call('PUT', `/v1/nodes/${sn.name}`, {
      role: 'storageNode',
      cluster: CLUSTER,
      addresses: { production: hp(sn.host, PORTS.production), control: hp(sn.host, PORTS.command), observability: hp(sn.host, PORTS.observability) },
    });
  }
  await dms.call('PUT', `/v1/nodes/${layout.proxy.nodeName}`, { role: 'proxy', addresses: { control: hp(layout.proxy.host, PORTS.command) } });
  const datasets: string[] = [];
  for (const f of (await readdir(layout.schemaDir)).filter((n) => n.endsWith('.json')).sort()) {
    const schema = JSON.parse(await readFile(path.join(layout.schemaDir, f), 'utf8')) as { id: string };
    await dms.call('PUT', `/v1/datasets/${encodeURIComponent(schema.id)}`, { schema });
    datasets.push(schema.id);
  }
  return { datasets };
}

/** Installs {@link DEFAULT_POLICY} unless the DMS holds a policy; answers the active version and whether it was installed now. */
export async function ensurePolicy(dms: DmsAdmin): Promise<{ version: number; installed: boolean }> {
  const current = await dms.request('GET', '/v1/policy');
  if (current.status === 200) return { version: (current.body as { version: number }).version, installed: false };
  if (current.status !== 404) throw new Error(`the DMS answered ${current.status} to GET /v1/policy: ${JSON.stringify(current.body)}`);
  const a = await dms.call('PUT', '/v1/policy', { rego: DEFAULT_POLICY });
  return { version: (a.body as { version: number }).version, installed: true };
}

/**
 * Registers hd_sql (node `hd-sql`, role `sqlServer`) with a fresh bootstrap token and writes its
 * key and certificate (mode 0600) where the sql node's HD_DMS_CLIENT_*_FILE point. Run before each
 * start of hd_sql, so a restarted one always holds an unexpired certificate.
 */
export async function registerSqlServer(dms: DmsAdmin, dataDir: string, keyBits: number, nodeName = 'hd-sql'): Promise<void> {
  const token = await dms.bootstrapToken(nodeName, 'sqlServer');
  const reg = await registerWithDms({ dmsUrl: dms.url, nodeName, role: 'sqlServer', caCertPem: dms.caPem, credentials: { bootstrapToken: token }, keyBits });
  if (!reg.success) throw new Error(`registering ${nodeName} with the DMS failed: ${reg.error_message}`);
  const files = sqlCredentialFiles(dataDir);
  await writeFileAtomic(files.key, reg.client_key_pem, 0o600);
  await writeFileAtomic(files.cert, reg.signed_cert_pem, 0o600);
}
