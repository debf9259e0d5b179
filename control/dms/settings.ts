/**
 * DMS settings: what `pipelines/dms.yaml` passes to the `dmsService` stage (each with the name of
 * the environment variable it comes from), checked before anything starts.
 */
import type { MtuMode } from '../../net/mtuMode';
import type { K8sTokenConfig } from './credentials';

/** Default lifetime of issued node certificates: 24 hours. */
export const DEFAULT_CERT_LIFETIME_S = 24 * 3600;
/** Shortest certificate lifetime accepted (renewal needs room to happen). */
export const MIN_CERT_LIFETIME_S = 60;
/** Default and longest bootstrap-token lifetimes. */
export const DEFAULT_TOKEN_TTL_S = 3600;
export const MAX_TOKEN_TTL_S = 7 * 24 * 3600;
/** Default period of node health reports: 10 s. */
export const DEFAULT_HEALTH_INTERVAL_MS = 10_000;
/** Default DMS_CONFIG_POLL_MS: how often a registered node re-reads its configuration. */
export const DEFAULT_CONFIG_POLL_MS = 5000;

/** The values the DMS elects for every node (they must be identical on all nodes). */
export interface HashElectionSettings {
  /** HASH_ALGORITHM. */
  readonly algorithm: 'sha512' | 'sha256' | 'blake3';
  /** HASH_CHAIN_BLOCK_SIZE. */
  readonly chainBlockSize: number;
  /** RECORD_SIZE: record size handed to nodes when no dataset decides it. */
  readonly recordSize: number;
}

/** Everything DMS-Core and DMS-CA need. */
export interface DmsSettings {
  /** Node name in logs and in the DMS's own certificate (NODE_NAME; default `dms-core`). */
  readonly nodeName: string;
  /** Directory of the store and the CA (DMS_DATA_DIR). */
  readonly dataDir: string;
  /** Control-plane bind address and port (COMMAND_INTERFACE, COMMAND_PORT 6986). */
  readonly host: string;
  readonly port: number;
  /** /health and /metrics (OBSERVABILITY_INTERFACE, OBSERVABILITY_PORT 8080); port -1 turns it off. */
  readonly observabilityHost: string;
  readonly observabilityPort: number;
  /** Host names and addresses the DMS's server certificate names (DMS_SERVER_NAMES). */
  readonly serverNames: readonly string[];
  /** PLATFORM_PKI_WRAP_KEY, parsed. */
  readonly wrapKey?: Buffer;
  /** Lifetime of issued certificates in seconds (DMS_CERT_LIFETIME_S). */
  readonly certLifetimeS: number;
  /** Smallest RSA key accepted in a CSR (DMS_MIN_KEY_BITS; default 4096, registration v2). */
  readonly minKeyBits: number;
  /** Root key size when the CA is created (DMS_CA_KEY_BITS; default 4096). */
  readonly caKeyBits: number;
  /** Kubernetes service-account tokens, when configured (DMS_K8S_*). */
  readonly k8s?: K8sTokenConfig;
  readonly hashElection: HashElectionSettings;
  /** The instance's MTU mode (MTU_MODE): every SCC and Storage Node must register with the same one (docs/control-plane.md, "MTU mode"). */
  readonly mtuMode: MtuMode;
  /** How long a policy push to one Proxy may take (DMS_POLICY_PUSH_TIMEOUT_MS). */
  readonly policyPushTimeoutMs: number;
  /** How often Proxies that missed a policy are pushed to again (DMS_POLICY_RETRY_MS). */
  readonly policyRetryMs: number;
  /** How often registered nodes report their health (DMS_HEALTH_INTERVAL_MS; handed out at registration). */
  readonly healthIntervalMs: number;
  /** Missed reports after which a node is marked `down` (DMS_HEALTH_MISSED_REPORTS). */
  readonly healthMissedReports: number;
  /** How often registered SCCs and Storage Nodes re-read their configuration (DMS_CONFIG_POLL_MS; handed out at registration). */
  readonly configPollMs: number;
}

/** Checks cross-setting rules the per-setting parsers cannot; returns problems naming the settings. */
export function checkDmsSettings(s: DmsSettings): string[] {
  const out: string[] = [];
  if (s.certLifetimeS < MIN_CERT_LIFETIME_S) out.push(`DMS_CERT_LIFETIME_S must be at least ${MIN_CERT_LIFETIME_S} seconds, got ${s.certLifetimeS}`);
  if (s.minKeyBits < 2048) out.push(`DMS_MIN_KEY_BITS must be at least 2048, got ${s.minKeyBits}`);
  if (s.caKeyBits < 2048) out.push(`DMS_CA_KEY_BITS must be at least 2048, got ${s.caKeyBits}`);
  if (s.healthIntervalMs < 100) out.push(`DMS_HEALTH_INTERVAL_MS must be at least 100 ms, got ${s.healthIntervalMs}`);
  if (s.configPollMs < 100) out.push(`DMS_CONFIG_POLL_MS must be at least 100 ms, got ${s.configPollMs}`);
  if (s.healthMissedReports < 1) out.push(`DMS_HEALTH_MISSED_REPORTS must be at least 1, got ${s.healthMissedReports}`);
  if (s.serverNames.length === 0) out.push('DMS_SERVER_NAMES must name at least one host name or address');
  return out;
}

/** Settings with every default filled in, for `dataDir`; `overrides` replace single values. */
export function dmsSettings(dataDir: string, overrides: Partial<DmsSettings> = {}): DmsSettings {
  return {
    nodeName: 'dms-core',
    dataDir,
    host: '0.0.0.0',
    port: 6986,
    observabilityHost: '0.0.0.0',
    observabilityPort: 8080,
    serverNames: ['dms-core', 'localhost', '127.0.0.1'],
    certLifetimeS: DEFAULT_CERT_LIFETIME_S,
    minKeyBits: 4096,
    caKeyBits: 4096,
    hashElection: { algorithm: 'sha512', chainBlockSize: 64, recordSize: 150 },
    mtuMode: 'standard',
    policyPushTimeoutMs: 5000,
    policyRetryMs: 10_000,
    healthIntervalMs: DEFAULT_HEALTH_INTERVAL_MS,
    healthMissedReports: 3,
    configPollMs: DEFAULT_CONFIG_POLL_MS,
    ...overrides,
  };
}
