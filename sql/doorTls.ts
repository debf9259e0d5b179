/**
 * The certificate hd_sql's doors serve TLS with: HD_SQL_TLS_CERT_FILE / HD_SQL_TLS_KEY_FILE, or the
 * service's DMS-issued identity (sql/serviceIdentity.ts), whose renewals the doors pick up without a
 * restart. Also the `tls-server-end-point` channel binding (RFC 5929) the PostgreSQL wire's
 * SCRAM-SHA-256-PLUS checks: the hash of the certificate the connection was served with.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

/** Certificate chain and key (PEM); each read gives the current material. */
export interface DoorTlsMaterial {
  readonly cert: string;
  readonly key: string;
}

/** The doors' TLS: a context per certificate, rebuilt when the material changes. */
export class DoorTls {
  private context: tls.SecureContext | undefined;
  private contextCert = '';

  /** @param source where the material came from, for the start-up lines */
  constructor(
    private readonly material: DoorTlsMaterial,
    readonly source: string,
  ) {
    // A key that does not fit the certificate fails the start, not the first client.
    this.secureContext();
  }

  /** Reads HD_SQL_TLS_CERT_FILE and HD_SQL_TLS_KEY_FILE (once: replace them and restart to change them). */
  static fromFiles(certFile: string, keyFile: string): DoorTls {
    const read = (file: string, variable: string): string => {
      try {
        return readFileSync(file, 'utf8');
      } catch (err) {
        throw new Error(`${variable}: cannot read ${file}: ${(err as Error).message}`);
      }
    };
    const material = { cert: read(certFile, 'HD_SQL_TLS_CERT_FILE'), key: read(keyFile, 'HD_SQL_TLS_KEY_FILE') };
    try {
      return new DoorTls(material, `${certFile} (HD_SQL_TLS_CERT_FILE)`);
    } catch (err) {
      throw new Error(`HD_SQL_TLS_CERT_FILE (${certFile}) and HD_SQL_TLS_KEY_FILE (${keyFile}) do not make a usable TLS identity: ${(err as Error).message}`);
    }
  }

  /** The current certificate chain and key (PEM). */
  get pem(): { cert: string; key: string } {
    return { cert: this.material.cert, key: this.material.key };
  }

  /**
   * Calls `listener` whenever the certificate changes (checked every `everyMs`: a DMS renewal
   * happens hours before expiry); returns how to stop. For doors that cannot ask per connection.
   */
  watch(listener: (pem: { cert: string; key: string }) => void, everyMs = 60_000): () => void {
    let seen = this.material.cert;
    const t = setInterval(() => {
      if (this.material.cert === seen) return;
      seen = this.material.cert;
      listener(this.pem);
    }, everyMs);
    t.unref();
    return () => clearInterval(t);
  }

  /** The context for a new connection: the current certificate. */
  secureContext(): tls.SecureContext {
    const cert = this.material.cert;
    if (!this.context || cert !== this.contextCert) {
      this.context = tls.createSecureContext({ cert, key: this.material.key, minVersion: 'TLSv1.2' });
      this.contextCert = cert;
    }
    return this.context;
  }
}

/** Signature algorithms (DER of their OIDs) whose hash is not SHA-256 but wider (RFC 5929 §4.1). */
const WIDER_HASHES: readonly [Buffer, 'sha384' | 'sha512'][] = [
  [Buffer.from('06092a864886f70d01010c', 'hex'), 'sha384'], // sha384WithRSAEncryption
  [Buffer.from('06092a864886f70d01010d', 'hex'), 'sha512'], // sha512WithRSAEncryption
  [Buffer.from('06082a8648ce3d040303', 'hex'), 'sha384'], // ecdsa-with-SHA384
  [Buffer.from('06082a8648ce3d040304', 'hex'), 'sha512'], // ecdsa-with-SHA512
];

/**
 * `tls-server-end-point` data of a certificate (DER): its hash with the hash of its signature
 * algorithm, SHA-256 for MD5, SHA-1 and SHA-256 (RFC 5929), as libpq computes it.
 */
export function serverEndPoint(der: Buffer): Buffer {
  // Those OIDs appear in a certificate only as its signature algorithm (twice: in and after the TBS part).
  const wider = WIDER_HASHES.find(([oid]) => der.includes(oid));
  return createHash(wider?.[1] ?? 'sha256').update(der).digest();
}

/** The end-point binding of the certificate a TLS socket presented. */
export function socketEndPoint(socket: tls.TLSSocket): Buffer | undefined {
  const der = socket.getX509Certificate?.()?.raw ?? (socket.getCertificate() as { raw?: Buffer } | null)?.raw;
  return der ? serverEndPoint(Buffer.from(der)) : undefined;
}

/** The subject names of a PEM certificate chain's first certificate (for the start-up lines). */
export function certificateNames(pem: string): string {
  try {
    const c = new X509Certificate(pem);
    return c.subjectAltName ?? c.subject;
  } catch {
    return 'unknown';
  }
}
