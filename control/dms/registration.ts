/**
 * Registration v2 (the reference's four steps; docs/control-plane.md, "Registration"): the node
 * reaches the DMS over TLS it verifies with its CA bundle, sends an authenticated CSR, gets a
 * short-lived certificate back with everything it needs to run (schema, SCC targets, record size,
 * devices, the hash election), and uses that certificate from then on. Also certificate renewal.
 *
 * Credential precedence, highest first; the highest one present decides, and a bad one is refused
 * without trying the others (no downgrade): a client certificate from DMS-CA on the TLS connection
 * (pre-issued, or the node's still-valid previous one), a bootstrap token, a Kubernetes
 * service-account token.
 *
 * What a credential lets the caller become (docs/security.md, "Registration"): every credential
 * names one node and one role (a certificate its CN and OU, a bootstrap token what the
 * administrator made it for, a service-account token its pod and DMS_K8S_SERVICE_ACCOUNTS's role
 * for the account), and the registration must ask for exactly those. Privileged roles are issued
 * only for nodes an administrator declared; the certificate names only the node and the addresses
 * an administrator declared for it; a quarantined node gets no certificate.
 */
import net from 'node:net';
import { HttpError } from '../http/errors';
import { asObject, NAME_DOC, NAME_PATTERN, onlyKeys, optHostPort, optString, reqString, type JsonObject } from '../http/body';
import type { IssuedCertificate, SubjectAltNames } from '../../net/pki/certificateAuthority';
import { checkCsr, CsrError, type CheckedCsr } from '../../net/pki/csr';
import { BOOTSTRAP_TOKEN_PATTERN, hashToken } from './credentials';
import { ADMIN_ROLE, type DmsContext, type Peer } from './context';
import { NODE_ROLES, PRIVILEGED_ROLES, type NodeAddresses, type NodeRecord, type NodeRole } from './state';
import { nodeConfig, type NodeConfig } from './nodeConfig';
import { checkNodeSeat } from './webux/communityLimits';
import { checkDeclaredMtuMode } from './mtuModeCheck';

/** Which credential a registration used. */
export type CredentialKind = 'certificate' | 'bootstrap_token' | 'k8s_token';

/** The certificate part of registration and renewal answers (a renewal answers only this). */
export interface CertificateAnswer {
  readonly signed_cert_pem: string;
  readonly ca_cert_pem: string;
  readonly crl_pem: string;
  readonly cert_serial: string;
  readonly not_after: string;
  /** When the node should renew: two thirds into the lifetime. */
  readonly renew_after: string;
}

/** The body of a successful `POST /v1/certificates/renew`. */
export type RenewalResponse = CertificateAnswer;

function certificateAnswer(ctx: DmsContext, issued: IssuedCertificate, now: Date): CertificateAnswer {
  const lifetimeMs = issued.notAfter.getTime() - now.getTime();
  return {
    signed_cert_pem: issued.certPem,
    ca_cert_pem: ctx.ca.certPem,
    crl_pem: ctx.crlPem(),
    cert_serial: issued.serial,
    not_after: issued.notAfter.toISOString(),
    renew_after: new Date(now.getTime() + Math.floor((lifetimeMs * 2) / 3)).toISOString(),
  };
}

/** The body of a successful `POST /v1/register`. */
export interface RegistrationResponse extends CertificateAnswer, NodeConfig {
  readonly success: true;
  readonly node_name: string;
  readonly role: NodeRole;
  readonly cluster: string | null;
  readonly credential: CredentialKind;
}

const ADDRESS_KEYS = ['control', 'production', 'grpc', 'observability'] as const;

/** A DNS host name: dot-separated labels of letters, digits and inner hyphens (no wildcard). */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * Reads an optional `addresses` object ({control, production, grpc, observability} of {host, port}).
 * A host must be a DNS name or an IP address: a wildcard (`*.example.com`) or anything else that
 * would widen a certificate's names is refused.
 */
export function readAddresses(o: JsonObject): NodeAddresses | undefined {
  if (o.addresses === undefined) return undefined;
  const a = asObject(o.addresses, "'addresses'");
  onlyKeys(a, ADDRESS_KEYS, "'addresses'");
  const out: Record<string, { host: string; port: number }> = {};
  for (const k of ADDRESS_KEYS) {
    const hp = optHostPort(a, k);
    if (!hp) continue;
    if (net.isIP(hp.host) === 0 && !HOST_NAME.test(hp.host)) {
      throw new HttpError('invalid_request', `'addresses.${k}.host' must be a DNS host name or an IP address, got ${JSON.stringify(hp.host)}${hp.host.includes('*') ? ' (wildcards are not accepted)' : ''}`);
    }
    out[k] = hp;
  }
  return out;
}

/** Why `name` may not be a node's name (the DMS's own name and `admin` are taken), or undefined. */
export function reservedName(name: string, ctx: DmsContext): string | undefined {
  if (name === ADMIN_ROLE || name === ctx.settings.nodeName) return `'${name}' is reserved (the DMS's own name and 'admin' are not node names)`;
  return undefined;
}

/** Reads a node role at `key`. */
export function readRole(o: JsonObject, key = 'role'): NodeRole {
  const r = reqString(o, key);
  if (!(NODE_ROLES as readonly string[]).includes(r)) throw new HttpError('invalid_request', `'${key}' must be one of ${NODE_ROLES.join(', ')}, got ${JSON.stringify(r)}`);
  return r as NodeRole;
}

function checkedCsr(pem: string, ctx: DmsContext): CheckedCsr {
  try {
    return checkCsr(pem, ctx.settings.minKeyBits);
  } catch (err) {
    if (err instanceof CsrError) throw new HttpError('invalid_csr', err.message);
    throw err;
  }
}

function hostsOf(addresses: NodeAddresses): string[] {
  return [...new Set(Object.values(addresses).map((a: { host: string }) => a.host))];
}

/**
 * Subject alternative names of a node's certificate: the hosts of the addresses an administrator
 * declared for it, none for a node nobody declared (the node name itself is always added). What a
 * node says about its own addresses goes into the topology, never into a certificate.
 */
function altNamesOf(node: NodeRecord | undefined): SubjectAltNames {
  const hosts = node?.declared ? (node.declared_hosts ?? []) : [];
  return { ips: hosts.filter((h) => net.isIP(h) !== 0), dns: hosts.filter((h) => net.isIP(h) === 0) };
}

/**
 * Refuses what `role` may not get for node `name` as the store holds it: a privileged role for a
 * node no administrator declared, any certificate for a quarantined node, addresses on hosts other
 * than the declared ones. Checked before signing and again inside the store update.
 */
function checkNodeMayRegister(name: string, role: NodeRole, node: NodeRecord | undefined, addresses: NodeAddresses | undefined): void {
  if (node && node.role !== role) throw new HttpError('conflict', `node '${name}' is declared as a ${node.role}, not a ${role}`);
  if (PRIVILEGED_ROLES.includes(role) && !node?.declared) {
    throw new HttpError('forbidden', `a ${role} certificate is issued only for a node an administrator declared; '${name}' is not (PUT /v1/nodes/${name} with role ${role})`);
  }
  if (node?.state === 'quarantined') throw new HttpError('forbidden', `node '${name}' is quarantined; an administrator must lift it (PUT /v1/nodes/${name} with another state) before it registers again`);
  const declared = node?.declared ? (node.declared_hosts ?? []) : [];
  if (addresses && declared.length > 0) {
    const other = hostsOf(addresses).filter((h) => !declared.includes(h));
    if (other.length > 0) throw new HttpError('forbidden', `node '${name}' may register only the addresses declared for it (${declared.join(', ')}), not ${other.join(', ')}`);
  }
}

/** Who the credential says the caller is. */
interface Authenticated {
  readonly kind: CredentialKind;
  readonly nodeName: string;
  /** The role the credential was made for (a certificate's OU, a token's role, the account's role). */
  readonly role: string;
  /** Bootstrap tokens: the stored hash to consume. */
  readonly tokenHash?: string;
}

async function authenticate(body: JsonObject, peer: Peer | undefined, ctx: DmsContext): Promise<Authenticated> {
  if (peer) return { kind: 'certificate', nodeName: peer.name, role: peer.role };
  const token = optString(body, 'bootstrap_token', { max: 256 });
  if (token !== undefined) {
    if (!BOOTSTRAP_TOKEN_PATTERN.test(token)) throw new HttpError('unauthenticated', 'bootstrap_token is not a DMS bootstrap token (hdbt.…)');
    const hash = hashToken(token);
    const rec = ctx.store.get().tokens[hash];
    if (!rec) throw new HttpError('unauthenticated', 'bootstrap_token is unknown to this DMS');
    if (rec.used_at) throw new HttpError('unauthenticated', `bootstrap_token was already used at ${rec.used_at}; tokens are single-use, ask for a new one`);
    if (Date.parse(rec.expires_at) <= Date.now()) throw new HttpError('unauthenticated', `bootstrap_token expired at ${rec.expires_at}`);
    return { kind: 'bootstrap_token', nodeName: rec.node_name, role: rec.role ?? 'client', tokenHash: hash };
  }
  const k8sToken = optString(body, 'k8s_token', { max: 16384 });
  if (k8sToken !== undefined) {
    if (!ctx.k8s) throw new HttpError('unauthenticated', 'k8s_token given but this DMS has no Kubernetes issuer configured (DMS_K8S_ISSUER, DMS_K8S_ISSUER_KEY_FILE)');
    const id = await ctx.k8s.verify(k8sToken);
    // A projected token names its pod: the node must register under the pod's name.
    return { kind: 'k8s_token', nodeName: id.podName, role: id.role };
  }
  throw new HttpError('unauthenticated', 'no credential: present a client certificate from DMS-CA, a bootstrap_token, or a k8s_token');
}

/** Handles `POST /v1/register`. */
export async function register(rawBody: unknown, peer: Peer | undefined, ctx: DmsContext): Promise<RegistrationResponse> {
  const body = asObject(rawBody);
  onlyKeys(body, ['node_name', 'role', 'csr_pem', 'bootstrap_token', 'k8s_token', 'dataset', 'cluster', 'addresses', 'config_url', 'hash_offload_platform', 'mtu_mode']);
  const nodeName = reqString(body, 'node_name', { pattern: NAME_PATTERN, patternDoc: NAME_DOC });
  const role = readRole(body);
  const csrPem = reqString(body, 'csr_pem', { max: 16384 });
  const dataset = optString(body, 'dataset', { max: 64 });
  const cluster = optString(body, 'cluster', { pattern: NAME_PATTERN, patternDoc: NAME_DOC });
  const configUrl = optString(body, 'config_url', { max: 512, pattern: /^https:\/\/\S+$/, patternDoc: 'an https:// URL' });
  const offload = optString(body, 'hash_offload_platform', { max: 64 });
  const addresses = readAddresses(body);
  const mtuMode = optString(body, 'mtu_mode', { max: 16 });

  const auth = await authenticate(body, peer, ctx);
  const what = `the ${auth.kind.replace('_', ' ')}`;
  if (auth.nodeName !== nodeName) throw new HttpError('name_mismatch', `${what} is for node '${auth.nodeName}', not '${nodeName}'`);
  if (auth.role !== role) throw new HttpError('forbidden', `${what} is for a ${auth.role || 'role-less'} node, not a ${role}; a credential registers only the role it was made for`);
  const reserved = reservedName(nodeName, ctx);
  if (reserved) throw new HttpError('forbidden', reserved);
  checkDeclaredMtuMode(nodeName, role, mtuMode, ctx.settings.mtuMode);
  const csr = checkedCsr(csrPem, ctx);
  if (csr.commonName !== nodeName) throw new HttpError('name_mismatch', `csr_pem is for '${csr.commonName}', not for node '${nodeName}'`);
  const existing = ctx.store.get().nodes[nodeName];
  checkNodeMayRegister(nodeName, role, existing, addresses);
  checkNodeSeat(ctx.store.get(), nodeName, role, ctx.limitsInEffect());
  if (cluster !== undefined && !ctx.store.get().clusters[cluster]) throw new HttpError('invalid_request', `'cluster': no cluster '${cluster}'; declare it with PUT /v1/clusters/${cluster}`);

  const lifetimeMs = ctx.settings.certLifetimeS * 1000;
  const issued = ctx.ca.issue({ commonName: nodeName, role, publicKeyPem: csr.publicKeyPem, lifetimeMs, altNames: altNamesOf(existing) });
  const now = new Date();
  const node = await ctx.store.update((s) => {
    // Checked again inside the serialised update: an administrator's quarantine or removal that
    // landed since the checks above wins (the certificate is then never recorded nor handed out).
    const current = s.nodes[nodeName];
    checkNodeMayRegister(nodeName, role, current, addresses);
    // Two new nodes racing for the last seat: only one takes it.
    checkNodeSeat(s, nodeName, role, ctx.limitsInEffect());
    if (auth.tokenHash) {
      // Checked again inside the serialised update: two racing uses of one token cannot both pass.
      const t = s.tokens[auth.tokenHash];
      if (!t || t.used_at) throw new HttpError('unauthenticated', 'bootstrap_token was already used; tokens are single-use');
      t.used_at = now.toISOString();
    }
    const n: NodeRecord = s.nodes[nodeName] ?? { name: nodeName, role, state: 'registered', addresses: {} };
    if (cluster !== undefined) n.cluster = cluster;
    if (addresses) n.addresses = { ...n.addresses, ...addresses };
    if (configUrl !== undefined) n.config_url = configUrl;
    if (offload !== undefined) n.hash_offload_platform = offload;
    if (n.state === 'declared' || n.state === 'down') n.state = 'registered';
    n.registered_at = now.toISOString();
    n.last_seen = now.toISOString();
    n.cert_serial = issued.serial;
    s.nodes[nodeName] = n;
    s.certificates[issued.serial] = { node_name: nodeName, role, not_after: issued.notAfter.toISOString(), issued_at: now.toISOString() };
    return structuredClone(n);
  });
  ctx.log(`registered ${role} '${nodeName}' (credential: ${auth.kind}, certificate ${issued.serial} until ${issued.notAfter.toISOString()})`, 'info');
  return {
    success: true,
    node_name: nodeName,
    role,
    credential: auth.kind,
    ...certificateAnswer(ctx, issued, now),
    ...nodeConfig(ctx.store.get(), node, dataset, ctx),
  };
}

/** Handles `POST /v1/certificates/renew`: a new certificate for the caller's own name and role. */
export async function renew(rawBody: unknown, peer: Peer, ctx: DmsContext): Promise<RenewalResponse> {
  const body = asObject(rawBody);
  onlyKeys(body, ['csr_pem']);
  const csr = checkedCsr(reqString(body, 'csr_pem', { max: 16384 }), ctx);
  if (csr.commonName !== peer.name) throw new HttpError('name_mismatch', `csr_pem is for '${csr.commonName}', but the client certificate is for '${peer.name}'`);
  const node = ctx.store.get().nodes[peer.name];
  if (!node) throw new HttpError('unknown_node', `node '${peer.name}' is no longer known to the DMS; register again`);
  if (node.state === 'quarantined') throw new HttpError('forbidden', `node '${peer.name}' is quarantined`);
  if (node.role !== peer.role) throw new HttpError('forbidden', `node '${peer.name}' is now a ${node.role}; a ${peer.role} certificate does not renew it`);
  if (PRIVILEGED_ROLES.includes(node.role) && !node.declared) throw new HttpError('forbidden', `node '${peer.name}' is not declared by an administrator; a ${node.role} certificate is not renewed for it`);
  const lifetimeMs = ctx.settings.certLifetimeS * 1000;
  const issued = ctx.ca.issue({ commonName: peer.name, role: peer.role, publicKeyPem: csr.publicKeyPem, lifetimeMs, altNames: altNamesOf(node) });
  const now = new Date();
  await ctx.store.update((s) => {
    s.certificates[issued.serial] = { node_name: peer.name, role: peer.role, not_after: issued.notAfter.toISOString(), issued_at: now.toISOString() };
    const n = s.nodes[peer.name];
    if (n) {
      n.cert_serial = issued.serial;
      n.last_seen = now.toISOString();
    }
  });
  return certificateAnswer(ctx, issued, now);
}
