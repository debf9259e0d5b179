/**
 * DMS-CA: the cluster's root of trust. The root key pair is made on first start and kept in the
 * DMS data directory (the key sealed with PLATFORM_PKI_WRAP_KEY when it is set); the CA signs
 * checked CSRs into short-lived certificates and signs the revocation list. Losing the root means
 * every node must be re-registered (the reference: the cluster is rebooted to rebuild the chain).
 */
import { createPublicKey } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../lib/atomicFile';
import { buildCrl, type RevokedEntry } from './crl';
import { readSecretFile, writeSecretFile } from './wrapKey';
import { buildCertificate, DEFAULT_KEY_BITS, generateRsaKey, normalizeSerial, randomSerialHex } from './x509';

/** Root certificate lifetime: ten years. */
export const ROOT_LIFETIME_MS = 10 * 365 * 24 * 3600 * 1000;
/** Issued certificates start this far in the past, so a peer whose clock runs behind accepts them. */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;
/** The purpose sealed into the root key file (see wrapKey.ts). */
const KEY_PURPOSE = 'dms-ca.key.pem';

/** The CA's files could not be used; the message names the file and what to do. */
export class CaError extends Error {
  override readonly name = 'CaError';
}

/** Subject alternative names of an issued certificate. */
export interface SubjectAltNames {
  readonly dns?: readonly string[];
  readonly ips?: readonly string[];
}

/** What to issue. */
export interface IssueRequest {
  readonly commonName: string;
  /** The node's role, written as the subject's OU (our authorisation reads it). */
  readonly role: string;
  readonly publicKeyPem: string;
  readonly lifetimeMs: number;
  readonly altNames?: SubjectAltNames;
}

/** An issued certificate. */
export interface IssuedCertificate {
  readonly certPem: string;
  readonly serial: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** Options of {@link CertificateAuthority.open}. */
export interface CaOptions {
  /** Directory holding `ca.cert.pem` and `ca.key.pem`. */
  readonly dir: string;
  /** PLATFORM_PKI_WRAP_KEY: seals the root key at rest when given. */
  readonly wrapKey?: Buffer;
  /** Root subject common name on creation; default `HD DMS-CA`. */
  readonly commonName?: string;
  /** Root key size on creation; default 4096. */
  readonly keyBits?: number;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

function isIp(s: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s) || s.includes(':');
}

/** The certificate authority of one HD instance. */
export class CertificateAuthority {
  private constructor(
    /** The root certificate (the CA bundle nodes are given as PLATFORM_CA_CERT_PEM). */
    readonly certPem: string,
    private readonly keyPem: string,
    /** True when this start created the root. */
    readonly created: boolean,
  ) {}

  /** Paths of the root files in `dir`. */
  static files(dir: string): { cert: string; key: string } {
    return { cert: path.join(dir, 'ca.cert.pem'), key: path.join(dir, 'ca.key.pem') };
  }

  /**
   * Loads the root from `dir`, or creates it when neither file exists. A plain key found while a
   * wrap key is set is sealed in place. Throws {@link CaError} when only one of the two files is
   * there, when they do not belong together, or when the key cannot be opened.
   */
  static async open(opts: CaOptions): Promise<CertificateAuthority> {
    const f = CertificateAuthority.files(opts.dir);
    const [hasCert, hasKey] = await Promise.all([exists(f.cert), exists(f.key)]);
    if (!hasCert && !hasKey) {
      const kp = await generateRsaKey(opts.keyBits ?? DEFAULT_KEY_BITS);
      const now = Date.now();
      const certPem = buildCertificate(
        {
          subject: { commonName: opts.commonName ?? 'HD DMS-CA', organizationalUnit: 'dms-ca' },
          publicKeyPem: kp.publicKeyPem,
          serialHex: randomSerialHex(),
          notBefore: new Date(now - CLOCK_SKEW_MS),
          notAfter: new Date(now + ROOT_LIFETIME_MS),
          extensions: [
            { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
            { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
            { name: 'subjectKeyIdentifier' },
          ],
        },
        kp.privateKeyPem,
      );
      // Key first: a cert without its key is the state we refuse to start from.
      await writeSecretFile(f.key, kp.privateKeyPem, opts.wrapKey, KEY_PURPOSE);
      await writeFileAtomic(f.cert, certPem, 0o644);
      return new CertificateAuthority(certPem, kp.privateKeyPem, true);
    }
    if (!hasKey) throw new CaError(`${f.key} is missing but ${f.cert} exists: the DMS-CA root key is lost; restore it from backup, or remove ${f.cert} to create a new root (every node must then register again)`);
    if (!hasCert) throw new CaError(`${f.cert} is missing but ${f.key} exists; restore the root certificate from backup`);
    const certPem = await readFile(f.cert, 'utf8');
    const key = await readSecretFile(f.key, opts.wrapKey, KEY_PURPOSE);
    let matches = false;
    try {
      const fromKey = createPublicKey(key.text).export({ type: 'spki', format: 'der' });
      const fromCert = createPublicKey(certPem).export({ type: 'spki', format: 'der' });
      matches = fromKey.equals(fromCert);
    } catch (err) {
      throw new CaError(`cannot read the DMS-CA root in ${opts.dir}: ${(err as Error).message}`);
    }
    if (!matches) throw new CaError(`${f.key} does not belong to ${f.cert}`);
    if (opts.wrapKey && !key.sealed) await writeSecretFile(f.key, key.text, opts.wrapKey, KEY_PURPOSE);
    return new CertificateAuthority(certPem, key.text, false);
  }

  /** Signs a certificate for a node (or a tool) with the root key. */
  issue(req: IssueRequest, now = Date.now()): IssuedCertificate {
    const serial = randomSerialHex();
    const notBefore = new Date(now - CLOCK_SKEW_MS);
    const notAfter = new Date(now + req.lifetimeMs);
    const names = [...(req.altNames?.dns ?? []), ...(req.altNames?.ips ?? [])];
    const altNames = [...new Set([req.commonName, ...names])].map((n) => (isIp(n) ? { type: 7, ip: n } : { type: 2, value: n }));
    const certPem = buildCertificate(
      {
        subject: { commonName: req.commonName, organizationalUnit: req.role },
        issuerPem: this.certPem,
        publicKeyPem: req.publicKeyPem,
        serialHex: serial,
        notBefore,
        notAfter,
        extensions: [
          { name: 'basicConstraints', cA: false, critical: true },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          // Every node is both a TLS server (its ports) and a client (of its peers and the DMS).
          { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
          { name: 'subjectAltName', altNames },
        ],
      },
      this.keyPem,
    );
    return { certPem, serial: normalizeSerial(serial), notBefore, notAfter };
  }

  /** The signed revocation list of `revoked`; `crlNumber` must grow with every list. */
  crl(revoked: readonly RevokedEntry[], crlNumber: number): string {
    return buildCrl(this.certPem, this.keyPem, revoked, crlNumber);
  }
}
