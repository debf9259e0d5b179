/**
 * Keeps a node's certificate fresh without a restart: renews it with the DMS two thirds into its
 * lifetime (POST /v1/certificates/renew over mutual TLS with the current certificate), retries with
 * backoff until it expires, and refreshes the revocation list on a period. Every renewal updates the
 * {@link MtlsIdentity}, so listeners and clients made from it use the new material at once.
 */
import { createPublicKey } from 'node:crypto';
import { DMS_PEER_ROLES, requestJson } from './jsonClient';
import type { MtlsIdentity } from './mtls';
import { createCsr } from './pki/csr';
import { generateRsaKey } from './pki/x509';

/** Options of {@link CertificateRenewer}. */
export interface RenewerOptions {
  readonly identity: MtlsIdentity;
  /** DMS URL, https://host:6986. */
  readonly dmsUrl: string;
  /** Name the DMS certificate must carry, when not the URL's host. */
  readonly dmsServerName?: string;
  /** When to renew first; default two thirds into the current certificate's lifetime. */
  readonly renewAfter?: Date;
  /** Make a new key with each renewal (size `keyBits`, default 4096) instead of keeping the key. */
  readonly rotateKey?: boolean;
  readonly keyBits?: number;
  /** Fetch the revocation list this often; 0 never (default 5 minutes). */
  readonly crlRefreshMs?: number;
  /** First retry delay after a failed renewal (doubling, at most a tenth of the lifetime); default 1 s. */
  readonly retryMs?: number;
  /** Told of every renewal and every failure (for logs). */
  readonly onEvent?: (event: { kind: 'renewed'; notAfter: string } | { kind: 'failed'; message: string }) => void;
}

/** Two thirds into the validity of a certificate. */
function twoThirds(notBefore: Date, notAfter: Date): Date {
  return new Date(notBefore.getTime() + ((notAfter.getTime() - notBefore.getTime()) * 2) / 3);
}

/** Renews one identity's certificate on schedule (see the module doc). */
export class CertificateRenewer {
  private timer: NodeJS.Timeout | undefined;
  private crlTimer: NodeJS.Timeout | undefined;
  private stopped = true;
  private retry: number;

  /** Nothing runs until {@link start}. */
  constructor(private readonly opts: RenewerOptions) {
    this.retry = opts.retryMs ?? 1000;
  }

  /** Schedules the renewals and the revocation-list refreshes. */
  start(): void {
    this.stopped = false;
    const c = this.opts.identity.certificate;
    this.schedule(this.opts.renewAfter ?? twoThirds(c.notBefore, c.notAfter));
    const every = this.opts.crlRefreshMs ?? 5 * 60_000;
    if (every > 0) {
      this.crlTimer = setInterval(() => void this.refreshCrl().catch(() => undefined), every);
      this.crlTimer.unref();
    }
  }

  /** Stops all timers. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.crlTimer);
  }

  private schedule(at: Date): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    // setTimeout takes at most 2^31-1 ms; a later date is reached in steps.
    const ms = Math.min(Math.max(0, at.getTime() - Date.now()), 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      if (Date.now() < at.getTime()) return this.schedule(at);
      void this.renewNow().then(
        () => undefined,
        () => undefined,
      );
    }, ms);
    this.timer.unref();
  }

  /** Renews now; on success schedules the next renewal, on failure a retry. Resolves with the new expiry. */
  async renewNow(): Promise<string> {
    const id = this.opts.identity;
    try {
      const m = id.material;
      const key = this.opts.rotateKey ? (await generateRsaKey(this.opts.keyBits ?? 4096)).privateKeyPem : m.keyPem;
      const pub = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();
      const csr = createCsr(id.certificate.commonName, key, pub);
      const a = await requestJson('POST', new URL('/v1/certificates/renew', this.opts.dmsUrl).toString(), { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: this.opts.dmsServerName, roles: DMS_PEER_ROLES }, { csr_pem: csr });
      const b = a.body as { signed_cert_pem?: string; ca_cert_pem?: string; crl_pem?: string; not_after?: string; renew_after?: string; message?: string; error?: string };
      if (a.status !== 200 || !b.signed_cert_pem) throw new Error(`the DMS refused the renewal (${b.error ?? a.status}: ${b.message ?? ''})`);
      id.update({ keyPem: key, certPem: b.signed_cert_pem, ...(b.ca_cert_pem && { caPem: b.ca_cert_pem }), ...(b.crl_pem && { crlPem: b.crl_pem }) });
      this.retry = this.opts.retryMs ?? 1000;
      this.opts.onEvent?.({ kind: 'renewed', notAfter: b.not_after ?? '' });
      const c = id.certificate;
      this.schedule(b.renew_after ? new Date(b.renew_after) : twoThirds(c.notBefore, c.notAfter));
      return b.not_after ?? c.notAfter.toISOString();
    } catch (err) {
      const message = (err as Error).message;
      this.opts.onEvent?.({ kind: 'failed', message });
      const c = id.certificate;
      const cap = Math.max(1000, (c.notAfter.getTime() - c.notBefore.getTime()) / 10);
      this.schedule(new Date(Date.now() + this.retry));
      this.retry = Math.min(this.retry * 2, cap);
      throw err;
    }
  }

  /** Fetches the current revocation list and hands it to the identity. */
  async refreshCrl(): Promise<void> {
    const m = this.opts.identity.material;
    const a = await requestJson('GET', new URL('/v1/crl', this.opts.dmsUrl).toString(), { ca: m.caPem, cert: m.certPem, key: m.keyPem, servername: this.opts.dmsServerName, roles: DMS_PEER_ROLES });
    if (a.status === 200 && typeof a.body === 'string' && a.body.includes('BEGIN X509 CRL')) this.opts.identity.update({ crlPem: a.body });
  }
}
