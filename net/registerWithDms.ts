/**
 * The node side of registration v2, as the SDK's `registerWithDms` and every HD node use it:
 * make (or reuse) an RSA key, send an authenticated CSR to the DMS over TLS verified by the CA
 * bundle, and return the reference's RegistrationResult plus what the node needs to run. Never
 * throws for a refusal: `success` is false and `error_message` says why (the reference's contract).
 */
import { createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { NodeAddresses, NodeRole, ReplicaAddress, SccAddress } from '../control/api';
import { DMS_PEER_ROLES, requestJson } from './jsonClient';
import { createCsr } from './pki/csr';
import { readSecretFile } from './pki/wrapKey';
import { DEFAULT_KEY_BITS, generateRsaKey } from './pki/x509';

/** A node's registration credentials; the first present in this order is used (docs/control-plane.md). */
export interface RegistrationCredentials {
  /** Pre-issued certificate and key (PLATFORM_CLIENT_CERT_FILE / PLATFORM_CLIENT_KEY_FILE), PEM. */
  readonly certPem?: string;
  readonly keyPem?: string;
  /** PLATFORM_BOOTSTRAP_TOKEN. */
  readonly bootstrapToken?: string;
  /** K8S_SERVICEACCOUNT_TOKEN. */
  readonly k8sToken?: string;
}

/** Options of {@link registerWithDms}. */
export interface RegisterOptions {
  /** DMS URL (DMS_URL / PLATFORM_DMS_URL), https://host:6986. */
  readonly dmsUrl: string;
  readonly nodeName: string;
  /** The node's role; default `client`. */
  readonly role?: NodeRole;
  /** CA bundle the DMS's certificate must chain to (PLATFORM_CA_CERT_PEM). */
  readonly caCertPem: string;
  readonly credentials: RegistrationCredentials;
  /** Register this existing key instead of making one (the reference's override_key_pem). */
  readonly overrideKeyPem?: string;
  /** Size of a new key; default 4096 (registration v2). */
  readonly keyBits?: number;
  /** Name the DMS certificate must carry, when it differs from the URL's host. */
  readonly dmsServerName?: string;
  /** The dataset whose schema `schema_json` should hold. */
  readonly dataset?: string;
  /** Cluster to join when the DMS has not declared the node. */
  readonly cluster?: string;
  /** Where the node is reached (written into the certificate's names). */
  readonly addresses?: NodeAddresses;
  /** Proxies: the URL the DMS posts policy updates to. */
  readonly configUrl?: string;
  readonly hashOffloadPlatform?: string;
  /** SCCs and Storage Nodes: the node's MTU mode (MTU_MODE); the DMS refuses one other than the instance's. */
  readonly mtuMode?: string;
  readonly timeoutMs?: number;
}

/** The reference's RegistrationResult, and what our DMS adds to it. */
export interface RegistrationResult {
  readonly success: boolean;
  readonly client_key_pem: string;
  readonly signed_cert_pem: string;
  readonly schema_json: string;
  readonly scc_targets: SccAddress[];
  readonly error_message: string;
  /** The rest is empty when `success` is false. */
  readonly ca_cert_pem: string;
  readonly crl_pem: string;
  readonly not_after: string;
  readonly renew_after: string;
  readonly record_size: number;
  readonly devices: { name: string; address: string; type: string }[];
  readonly hash_election: { algorithm: string; chain_block_size: number; record_size: number; computed_by: string; offload: string } | null;
  readonly datasets: Record<string, unknown>[];
  readonly cluster: string | null;
  readonly policy?: { version: number; rego: string; data?: Record<string, unknown> };
  /** How often the node should report its health to the DMS (absent from an older DMS). */
  readonly health_interval_ms?: number;
  /** SCCs and Storage Nodes: the Storage Nodes of the node's cluster (absent from an older DMS). */
  readonly replicas?: ReplicaAddress[];
  /** How often the node re-reads its configuration (`GET /v1/nodes/{name}/config`; absent from an older DMS). */
  readonly config_poll_ms?: number;
  /** The instance's MTU mode (absent from an older DMS). */
  readonly mtu_mode?: string;
  /** A refusal: the DMS's error code (`conflict`, `forbidden`...); absent when the DMS was not reached. */
  readonly error_code?: string;
}

function failure(message: string, keyPem = '', code?: string): RegistrationResult {
  return {
    ...(code !== undefined && { error_code: code }),
    success: false,
    client_key_pem: keyPem,
    signed_cert_pem: '',
    schema_json: '',
    scc_targets: [],
    error_message: message,
    ca_cert_pem: '',
    crl_pem: '',
    not_after: '',
    renew_after: '',
    record_size: 0,
    devices: [],
    hash_election: null,
    datasets: [],
    cluster: null,
  };
}

/** Registers with the DMS (see the module doc). */
export async function registerWithDms(opts: RegisterOptions): Promise<RegistrationResult> {
  const c = opts.credentials;
  const useCert = c.certPem !== undefined && c.keyPem !== undefined;
  let keyPem: string;
  let publicKeyPem: string;
  try {
    if (opts.overrideKeyPem) keyPem = opts.overrideKeyPem;
    else if (useCert) keyPem = c.keyPem as string;
    else keyPem = (await generateRsaKey(opts.keyBits ?? DEFAULT_KEY_BITS)).privateKeyPem;
    publicKeyPem = createPublicKey(keyPem).export({ type: 'spki', format: 'pem' }).toString();
  } catch (err) {
    return failure(`cannot use the private key: ${(err as Error).message}`);
  }
  if (!useCert && !c.bootstrapToken && !c.k8sToken) return failure('no registration credential: set PLATFORM_CLIENT_CERT_FILE and PLATFORM_CLIENT_KEY_FILE, PLATFORM_BOOTSTRAP_TOKEN, or K8S_SERVICEACCOUNT_TOKEN', keyPem);
  let csrPem: string;
  try {
    csrPem = createCsr(opts.nodeName, keyPem, publicKeyPem);
  } catch (err) {
    return failure(`cannot make a certificate request: ${(err as Error).message}`, keyPem);
  }
  // Only the highest-precedence credential is sent: the DMS would use no other.
  const body: Record<string, unknown> = {
    node_name: opts.nodeName,
    role: opts.role ?? 'client',
    csr_pem: csrPem,
    ...(!useCert && c.bootstrapToken ? { bootstrap_token: c.bootstrapToken } : {}),
    ...(!useCert && !c.bootstrapToken && c.k8sToken ? { k8s_token: c.k8sToken } : {}),
    ...(opts.dataset !== undefined && { dataset: opts.dataset }),
    ...(opts.cluster !== undefined && { cluster: opts.cluster }),
    ...(opts.addresses !== undefined && { addresses: opts.addresses }),
    ...(opts.configUrl !== undefined && { config_url: opts.configUrl }),
    ...(opts.hashOffloadPlatform !== undefined && { hash_offload_platform: opts.hashOffloadPlatform }),
    ...(opts.mtuMode !== undefined && { mtu_mode: opts.mtuMode }),
  };
  let answer;
  try {
    answer = await requestJson(
      'POST',
      new URL('/v1/register', opts.dmsUrl).toString(),
      { ca: opts.caCertPem, servername: opts.dmsServerName, roles: DMS_PEER_ROLES, ...(useCert && { cert: c.certPem, key: c.keyPem }) },
      body,
      { timeoutMs: opts.timeoutMs ?? 30_000 },
    );
  } catch (err) {
    return failure(`cannot reach the DMS: ${(err as Error).message}`, keyPem);
  }
  const r = answer.body as Record<string, unknown> | undefined;
  if (answer.status !== 200 || typeof r !== 'object' || r === null || r.success !== true) {
    const msg = typeof r === 'object' && r !== null && typeof r.message === 'string' ? `${String(r.error)}: ${r.message}` : `HTTP ${answer.status}`;
    return failure(`the DMS refused the registration (${msg})`, keyPem, typeof r === 'object' && r !== null && typeof r.error === 'string' ? r.error : undefined);
  }
  return {
    success: true,
    client_key_pem: keyPem,
    signed_cert_pem: String(r.signed_cert_pem),
    schema_json: String(r.schema_json ?? ''),
    scc_targets: (r.scc_targets as SccAddress[]) ?? [],
    error_message: '',
    ca_cert_pem: String(r.ca_cert_pem),
    crl_pem: String(r.crl_pem ?? ''),
    not_after: String(r.not_after),
    renew_after: String(r.renew_after),
    record_size: Number(r.record_size),
    devices: (r.devices as RegistrationResult['devices']) ?? [],
    hash_election: (r.hash_election as RegistrationResult['hash_election']) ?? null,
    datasets: (r.datasets as Record<string, unknown>[]) ?? [],
    cluster: (r.cluster as string | null) ?? null,
    ...(r.policy !== undefined && { policy: r.policy as RegistrationResult['policy'] }),
    ...(typeof r.health_interval_ms === 'number' && r.health_interval_ms > 0 && { health_interval_ms: r.health_interval_ms }),
    ...(Array.isArray(r.replicas) && { replicas: r.replicas as ReplicaAddress[] }),
    ...(typeof r.config_poll_ms === 'number' && r.config_poll_ms > 0 && { config_poll_ms: r.config_poll_ms }),
    ...(typeof r.mtu_mode === 'string' && { mtu_mode: r.mtu_mode }),
  };
}

/** Registration settings read from a node's environment (the reference's variable names). */
export interface RegistrationEnv {
  readonly dmsUrl: string | undefined;
  readonly caCertPem: string | undefined;
  readonly credentials: RegistrationCredentials;
}

/**
 * Reads DMS_URL / PLATFORM_DMS_URL, PLATFORM_CA_CERT_PEM (PEM text or a file path),
 * PLATFORM_CLIENT_CERT_FILE / PLATFORM_CLIENT_KEY_FILE (the key may be sealed with
 * PLATFORM_PKI_WRAP_KEY), PLATFORM_BOOTSTRAP_TOKEN and K8S_SERVICEACCOUNT_TOKEN.
 */
export async function registrationEnv(env: Readonly<Record<string, string | undefined>>, wrapKey?: Buffer): Promise<RegistrationEnv> {
  const get = (k: string): string | undefined => (env[k] && env[k] !== '' ? env[k] : undefined);
  const caRaw = get('PLATFORM_CA_CERT_PEM');
  const caCertPem = caRaw === undefined ? undefined : caRaw.includes('-----BEGIN') ? caRaw : await readFile(caRaw, 'utf8');
  const certFile = get('PLATFORM_CLIENT_CERT_FILE');
  const keyFile = get('PLATFORM_CLIENT_KEY_FILE');
  if ((certFile === undefined) !== (keyFile === undefined)) throw new Error('PLATFORM_CLIENT_CERT_FILE and PLATFORM_CLIENT_KEY_FILE must be set together');
  const certPem = certFile ? await readFile(certFile, 'utf8') : undefined;
  const keyPem = keyFile ? (await readSecretFile(keyFile, wrapKey, 'node.key.pem')).text : undefined;
  return {
    dmsUrl: get('PLATFORM_DMS_URL') ?? get('DMS_URL'),
    caCertPem,
    credentials: { certPem, keyPem, bootstrapToken: get('PLATFORM_BOOTSTRAP_TOKEN'), k8sToken: get('K8S_SERVICEACCOUNT_TOKEN') },
  };
}
