import path from 'node:path';
import { DmsServer } from '../../control/dms/dmsServer';
import { MTU_MODES } from '../../net/mtuMode';
import { dmsSettings, DEFAULT_CERT_LIFETIME_S, MIN_CERT_LIFETIME_S } from '../../control/dms/settings';
import type { ServiceType } from '../../pipelines/registry';
import { int, oneOf, str } from '../../pipelines/settings';
import { list, publicKeyFile, wrapKeySetting } from '../stages/controlSettings';
import { serve } from './serve';

const settings = {
  node_name: str({ doc: 'the DMS node name: logs and its own certificate — NODE_NAME', default: 'dms-core' }),
  data_dir: str({ doc: 'store and CA directory, relative to the working directory — DMS_DATA_DIR', default: '.hd/dms' }),
  host: str({ doc: 'control-plane bind address — COMMAND_INTERFACE', default: '0.0.0.0' }),
  port: int({ doc: 'control-plane HTTPS port — COMMAND_PORT', default: 6986, min: 0, max: 65535 }),
  observability_host: str({ doc: '/health and /metrics bind address — OBSERVABILITY_INTERFACE', default: '0.0.0.0' }),
  observability_port: int({ doc: '/health and /metrics port; -1 turns them off — OBSERVABILITY_PORT', default: 8080, min: -1, max: 65535 }),
  server_names: list('host names and addresses in the DMS certificate — DMS_SERVER_NAMES', ['dms-core', 'localhost', '127.0.0.1']),
  pki_wrap_key: wrapKeySetting,
  cert_lifetime_s: int({ doc: 'lifetime of issued certificates, seconds — DMS_CERT_LIFETIME_S', default: DEFAULT_CERT_LIFETIME_S, min: MIN_CERT_LIFETIME_S, max: 365 * 24 * 3600 }),
  min_key_bits: int({ doc: 'smallest RSA key accepted in a CSR — DMS_MIN_KEY_BITS', default: 4096, min: 2048, max: 16384 }),
  ca_key_bits: int({ doc: 'RSA key size of a new DMS-CA root — DMS_CA_KEY_BITS', default: 4096, min: 2048, max: 16384 }),
  k8s_issuer: str({ doc: "Kubernetes service-account issuer (the tokens' iss); empty: no k8s tokens — DMS_K8S_ISSUER", default: '', allowEmpty: true }),
  k8s_issuer_key_file: publicKeyFile("the Kubernetes service-account issuer's public key — DMS_K8S_ISSUER_KEY_FILE"),
  k8s_audience: str({ doc: 'audience the k8s tokens must carry — DMS_K8S_AUDIENCE', default: 'hd-dms' }),
  k8s_service_accounts: list('service accounts that may register, each as namespace/name=role (namespace/name alone: client); empty: none — DMS_K8S_SERVICE_ACCOUNTS', []),
  hash_algorithm: oneOf(['sha512', 'sha256', 'blake3'] as const, { doc: 'the elected hash algorithm — HASH_ALGORITHM', default: 'sha512' }),
  hash_chain_block_size: int({ doc: 'the elected hash chain block size — HASH_CHAIN_BLOCK_SIZE', default: 64, min: 1, max: 1 << 20 }),
  record_size: int({ doc: 'record size handed out when no dataset decides it — RECORD_SIZE', default: 150, min: 1, max: 1 << 20 }),
  mtu_mode: oneOf(MTU_MODES, { doc: "the instance's data-plane MTU mode: every SCC and Storage Node must register with it (docs/control-plane.md, \"MTU mode\") — MTU_MODE", default: 'standard' }),
  policy_push_timeout_ms: int({ doc: 'time a policy push to one Proxy may take — DMS_POLICY_PUSH_TIMEOUT_MS', default: 5000, min: 100, max: 600_000 }),
  health_interval_ms: int({ doc: 'how often registered nodes report their health (handed out at registration) — DMS_HEALTH_INTERVAL_MS', default: 10_000, min: 100, max: 3_600_000 }),
  health_missed_reports: int({ doc: 'reports a node may miss before it is marked down — DMS_HEALTH_MISSED_REPORTS', default: 3, min: 1, max: 1000 }),
  config_poll_ms: int({ doc: 'how often registered SCCs and Storage Nodes re-read their configuration (datasets, replica set; handed out at registration) — DMS_CONFIG_POLL_MS', default: 5000, min: 100, max: 3_600_000 }),
  webux_port: int({ doc: 'DMS-WebUX HTTPS port (docs/webux.md); -1 turns it off; a port in use is logged, not fatal — DMS_WEBUX_PORT', default: 3000, min: -1, max: 65535 }),
  metrics_interval_ms: int({ doc: "how often the DMS reads its nodes' /metrics and /health for the WebUX's graphs (docs/webux.md, \"Metrics\"); 0: never — DMS_METRICS_INTERVAL_MS", default: 5000, min: 0, max: 3_600_000 }),
  metrics_history: int({ doc: 'points of metrics history kept in memory per node (the oldest go first) — DMS_METRICS_HISTORY', default: 360, min: 1, max: 100_000 }),
  policy_retry_ms: int({ doc: 'how often Proxies that missed a policy are pushed to again — DMS_POLICY_RETRY_MS', default: 10_000, min: 100, max: 3_600_000 }),
};

/** `dmsService`: DMS-Core and DMS-CA on the control plane (docs/control-plane.md). */
export const dmsServiceType: ServiceType<typeof settings, Record<string, never>, undefined> = {
  name: 'dmsService',
  kind: 'service',
  server: true,
  doc: 'DMS-Core with its embedded DMS-CA: topology, schemas, registration v2 and certificates over HTTPS on the control plane, until the run stops.',
  settings,
  start: async (c) => {
    if ((c.k8s_issuer === '') !== (c.k8s_issuer_key_file === undefined)) {
      throw new Error('k8s_issuer (DMS_K8S_ISSUER) and k8s_issuer_key_file (DMS_K8S_ISSUER_KEY_FILE) must be set together');
    }
    const s = dmsSettings(path.resolve(c.data_dir), {
      nodeName: c.node_name,
      host: c.host,
      port: c.port,
      observabilityHost: c.observability_host,
      observabilityPort: c.observability_port,
      serverNames: c.server_names,
      wrapKey: c.pki_wrap_key,
      certLifetimeS: c.cert_lifetime_s,
      minKeyBits: c.min_key_bits,
      caKeyBits: c.ca_key_bits,
      k8s: c.k8s_issuer_key_file ? { issuer: c.k8s_issuer, publicKeyPem: c.k8s_issuer_key_file, audience: c.k8s_audience, serviceAccounts: c.k8s_service_accounts } : undefined,
      hashElection: { algorithm: c.hash_algorithm, chainBlockSize: c.hash_chain_block_size, recordSize: c.record_size },
      mtuMode: c.mtu_mode,
      policyPushTimeoutMs: c.policy_push_timeout_ms,
      policyRetryMs: c.policy_retry_ms,
      healthIntervalMs: c.health_interval_ms,
      healthMissedReports: c.health_missed_reports,
      configPollMs: c.config_poll_ms,
    });
    return serve(() => DmsServer.start(s, undefined, { port: c.webux_port, metricsIntervalMs: c.metrics_interval_ms, metricsHistory: c.metrics_history }));
  },
};
