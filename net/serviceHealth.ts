/**
 * Health reports of a service that holds a DMS-CA certificate but does not register at start (hd_sql
 * with HD_DMS_CLIENT_CERT_FILE / HD_DMS_CLIENT_KEY_FILE, issued to it beforehand): the same
 * {@link HealthReporter} as the registered nodes, under the node name its certificate carries (CN),
 * since the DMS takes a report only for the caller's own name. The period is the DMS's default
 * (DEFAULT_HEALTH_REPORT_MS) unless given: the service never sees a registration answer.
 *
 * @example
 * const health = startServiceHealth({ dmsUrl, tls: { ca, cert, key }, source: async () => ({ status: 'ok' }), log });
 * // ... on shutdown:
 * health.stop();
 */
import type { LogFn } from '../lib/logging';
import { DEFAULT_HEALTH_REPORT_MS, HealthReporter, type HealthReport } from './healthReporter';
import { MtlsIdentity } from './mtls';

/** Options of {@link startServiceHealth}. */
export interface ServiceHealthOptions {
  /** The DMS, https://host:6986. */
  readonly dmsUrl: string;
  /** The service's DMS-CA material: CA bundle, certificate, key (PEM); or `identity`. */
  readonly tls?: { readonly ca: string; readonly cert: string; readonly key: string };
  /** The service's identity, when something renews it (hd_sql's sql/serviceIdentity.ts): reports follow its renewals. */
  readonly identity?: MtlsIdentity;
  /** Name the DMS certificate must carry when not the URL's host. */
  readonly dmsServerName?: string;
  /** Report period; default DEFAULT_HEALTH_REPORT_MS (10 s, the DMS's default). */
  readonly intervalMs?: number;
  /** What to report now. */
  readonly source: () => Promise<HealthReport>;
  /** Where the reporter's lines go, each with its level. */
  readonly log: LogFn;
}

/** Starts reporting (the first report at once); throws when the material does not fit together. */
export function startServiceHealth(opts: ServiceHealthOptions): { readonly nodeName: string; readonly reporter: HealthReporter; stop(): void } {
  if (!opts.identity && !opts.tls) throw new Error('startServiceHealth needs the service identity or its TLS material');
  const identity = opts.identity ?? new MtlsIdentity({ keyPem: opts.tls?.key ?? '', certPem: opts.tls?.cert ?? '', caPem: opts.tls?.ca ?? '' });
  const nodeName = identity.certificate.commonName;
  const reporter = new HealthReporter({
    nodeName,
    identity,
    dmsUrl: opts.dmsUrl,
    ...(opts.dmsServerName !== undefined && { dmsServerName: opts.dmsServerName }),
    intervalMs: opts.intervalMs ?? DEFAULT_HEALTH_REPORT_MS,
    source: opts.source,
    log: opts.log,
  });
  reporter.start();
  return { nodeName, reporter, stop: () => reporter.stop() };
}
