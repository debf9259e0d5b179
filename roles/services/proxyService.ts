import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE_ROLES } from '../../control/api';
import { DEFAULT_INGRESS_ROLES, MIN_INGRESS_SECRET } from '../../control/proxy/identity';
import { ProxyServer } from '../../control/proxy/proxyServer';
import type { ProxySettings } from '../../control/proxy/settings';
import type { ServiceType } from '../../pipelines/registry';
import { bool, int, str, type Setting } from '../../pipelines/settings';
import { caBundleSetting, credentialSettings, credentialsOf, publicKeyFile } from '../stages/controlSettings';
import { serve } from './serve';

/** Certificate roles a DMS-CA certificate may carry (the DMS's node roles, and its administrators). */
const CERT_ROLES: readonly string[] = [...NODE_ROLES, 'admin'];

/** PROXY_INGRESS_ROLES: a comma-separated list of certificate roles; empty: no certificate asserts identities. */
const ingressRoles: Setting<string[]> = {
  expects: `a comma-separated list of certificate roles among ${CERT_ROLES.join(', ')} (empty: none)`,
  doc: 'certificate roles (OU) of DMS-CA client certificates trusted to send X-Forwarded-Role / X-Forwarded-Email — PROXY_INGRESS_ROLES',
  required: false,
  fallback: [...DEFAULT_INGRESS_ROLES],
  parse(v) {
    if (typeof v.value !== 'string') return { ok: false, expected: this.expects };
    const roles = v.value.split(',').map((r) => r.trim()).filter((r) => r !== '');
    if (roles.some((r) => !CERT_ROLES.includes(r))) return { ok: false, expected: this.expects };
    return { ok: true, value: roles };
  },
};

/** PROXY_INGRESS_SECRET_FILE: a file holding the shared ingress secret, read at load; empty: none. */
const ingressSecretFile: Setting<string | undefined> = {
  expects: `empty, or a readable file holding the ingress secret (at least ${MIN_INGRESS_SECRET} characters)`,
  doc: 'file holding the shared secret an ingress sends in X-HD-Ingress-Secret with forwarded identity headers; empty: none accepted — PROXY_INGRESS_SECRET_FILE',
  required: false,
  fallback: undefined,
  parse(v, ctx) {
    if (typeof v.value !== 'string') return { ok: false, expected: this.expects };
    if (v.value === '') return { ok: true, value: undefined };
    try {
      const secret = readFileSync(path.resolve(ctx.baseDir, v.value), 'utf8').trim();
      return secret.length >= MIN_INGRESS_SECRET ? { ok: true, value: secret } : { ok: false, expected: `${this.expects}; the file holds ${secret.length}` };
    } catch (err) {
      return { ok: false, expected: `${this.expects} (${(err as Error).message})` };
    }
  },
};

const settings = {
  node_name: str({ doc: 'the Proxy node name: its certificate and DMS registration — NODE_NAME', default: 'hd-proxy' }),
  host: str({ doc: 'HTTPS bind address — COMMAND_INTERFACE', default: '0.0.0.0' }),
  port: int({ doc: 'HTTPS port: queries, topology, policy webhook — COMMAND_PORT', default: 6986, min: 0, max: 65535 }),
  advertise_host: str({ doc: 'host the DMS and clients reach the Proxy at; empty: the bind address (the node name for 0.0.0.0) — PROXY_ADVERTISE_HOST', default: '', allowEmpty: true }),
  observability_host: str({ doc: '/health and /metrics bind address — OBSERVABILITY_INTERFACE', default: '0.0.0.0' }),
  observability_port: int({ doc: '/health and /metrics port; -1 turns them off — OBSERVABILITY_PORT', default: 8080, min: -1, max: 65535 }),
  dms_url: str({ doc: 'the DMS — DMS_URL', default: 'https://dms-core:6986' }),
  ca_cert_pem: caBundleSetting,
  dms_server_name: str({ doc: 'name the DMS certificate must carry when not the URL host — PROXY_DMS_SERVER_NAME', default: '', allowEmpty: true }),
  ...credentialSettings,
  key_bits: int({ doc: 'RSA size of the Proxy key — PLATFORM_KEY_BITS', default: 4096, min: 2048, max: 16384 }),
  jwt_issuer: str({ doc: 'verify bearer JWTs from this issuer; empty: no bearer tokens (identities only from a proven ingress) — PROXY_JWT_ISSUER', default: '', allowEmpty: true }),
  jwt_key_file: publicKeyFile("the JWT issuer's public key — PROXY_JWT_KEY_FILE"),
  jwt_audience: str({ doc: 'aud the JWTs must carry; empty: not checked — PROXY_JWT_AUDIENCE', default: '', allowEmpty: true }),
  jwt_role_claim: str({ doc: 'JWT claim holding the role — PROXY_JWT_ROLE_CLAIM', default: 'role' }),
  jwt_email_claim: str({ doc: 'JWT claim holding the email — PROXY_JWT_EMAIL_CLAIM', default: 'email' }),
  ingress_roles: ingressRoles,
  ingress_secret_file: ingressSecretFile,
  topology_refresh_ms: int({ doc: 'how often topology and schemas are re-read from the DMS — PROXY_TOPOLOGY_REFRESH_MS', default: 5000, min: 100, max: 3_600_000 }),
  dispatch_timeout_ms: int({ doc: 'deadline of one dispatch to an SCC — PROXY_DISPATCH_TIMEOUT_MS', default: 30_000, min: 100, max: 3_600_000 }),
  batch_filter_timeout_ms: int({ doc: "how long a query waits for the Storage Nodes' batch filters before its verdict goes without them (partial or off, never a wrong exclusion) — PROXY_BATCH_FILTER_TIMEOUT_MS", default: 1000, min: 10, max: 60_000 }),
  dispatch_tls: bool({ doc: "true: dispatch over mutual TLS to every SCC; false: to the SCCs registered with the DMS (they serve mutual TLS), plain to SCCs only declared — PROXY_DISPATCH_TLS", default: false }),
};

/** `proxyService`: the HD Proxy (docs/proxy.md). */
export const proxyServiceType: ServiceType<typeof settings, Record<string, never>, undefined> = {
  name: 'proxyService',
  kind: 'service',
  server: true,
  doc: 'The HD Proxy: registers with the DMS, then evaluates the Rego policy, rewrites, names batches and dispatches queries to the SCCs over HTTPS, until the run stops.',
  settings,
  start: async (c) => {
    if ((c.jwt_issuer === '') !== (c.jwt_key_file === undefined)) throw new Error('jwt_issuer (PROXY_JWT_ISSUER) and jwt_key_file (PROXY_JWT_KEY_FILE) must be set together');
    const credentials = credentialsOf(c);
    const s: ProxySettings = {
      nodeName: c.node_name,
      host: c.host,
      port: c.port,
      advertiseHost: c.advertise_host !== '' ? c.advertise_host : c.host === '0.0.0.0' ? c.node_name : c.host,
      observabilityHost: c.observability_host,
      observabilityPort: c.observability_port,
      dmsUrl: c.dms_url,
      caCertPem: c.ca_cert_pem,
      ...(c.dms_server_name !== '' && { dmsServerName: c.dms_server_name }),
      credentials,
      keyBits: c.key_bits,
      ...(c.jwt_key_file !== undefined && { jwt: { issuer: c.jwt_issuer, publicKeyPem: c.jwt_key_file, audience: c.jwt_audience, roleClaim: c.jwt_role_claim, emailClaim: c.jwt_email_claim } }),
      ingress: { roles: c.ingress_roles, ...(c.ingress_secret_file !== undefined && { secret: c.ingress_secret_file }) },
      topologyRefreshMs: c.topology_refresh_ms,
      dispatchTimeoutMs: c.dispatch_timeout_ms,
      batchFilterTimeoutMs: c.batch_filter_timeout_ms,
      dispatchTls: c.dispatch_tls,
    };
    return serve(() => ProxyServer.start(s));
  },
};
