/** HD Proxy settings: what `pipelines/proxy.yaml` passes to the `proxyService` stage. */
import type { RegistrationCredentials } from '../../net/registerWithDms';
import type { IngressSettings, JwtSettings } from './identity';

/** Everything the Proxy needs. */
export interface ProxySettings {
  /** Node name: its certificate's CN, its DMS registration (NODE_NAME; default `hd-proxy`). */
  readonly nodeName: string;
  /** HTTPS bind address and port (COMMAND_INTERFACE, COMMAND_PORT 6986): queries, topology, policy webhook. */
  readonly host: string;
  readonly port: number;
  /** Host the DMS and clients reach the Proxy at (PROXY_ADVERTISE_HOST; default the bind address, or the node name for 0.0.0.0). */
  readonly advertiseHost: string;
  /** /health and /metrics (OBSERVABILITY_INTERFACE, OBSERVABILITY_PORT 8080); -1 turns them off. */
  readonly observabilityHost: string;
  readonly observabilityPort: number;
  /** DMS URL (DMS_URL) and the CA bundle to verify it (PLATFORM_CA_CERT_PEM). */
  readonly dmsUrl: string;
  readonly caCertPem: string;
  /** Name the DMS certificate must carry when not the URL's host. */
  readonly dmsServerName?: string;
  readonly credentials: RegistrationCredentials;
  /** RSA key size of the Proxy's key (PLATFORM_KEY_BITS; default 4096). */
  readonly keyBits: number;
  /** Verify bearer JWTs and take the identity from their claims (PROXY_JWT_*). */
  readonly jwt?: JwtSettings;
  /**
   * Who may send X-Forwarded-Role / X-Forwarded-Email: certificate roles (PROXY_INGRESS_ROLES) and
   * the shared secret (PROXY_INGRESS_SECRET_FILE). Default: `ingress` and `sqlServer` certificates, no secret.
   */
  readonly ingress?: IngressSettings;
  /** How often topology and schemas are re-read from the DMS (PROXY_TOPOLOGY_REFRESH_MS). */
  readonly topologyRefreshMs: number;
  /** Deadline of a dispatch to an SCC (PROXY_DISPATCH_TIMEOUT_MS). */
  readonly dispatchTimeoutMs: number;
  /** Mutual TLS to every SCC (PROXY_DISPATCH_TLS); false: to the SCCs the DMS lists as registered (`mtls`), plain to the others. */
  readonly dispatchTls: boolean;
  /** Deadline of the batch-filter reads of one query's verdict, over all Storage Nodes (default 1000 ms). */
  readonly batchFilterTimeoutMs?: number;
}
