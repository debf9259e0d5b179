/**
 * Certificate signing requests (PKCS#10): nodes make them for registration and renewal, DMS-CA
 * checks them (signature, RSA key size, a subject that is only a common name we can match).
 */
import forge from 'node-forge';
import { nodeRsaSigner } from './x509';

/** A request the CA will not sign; `message` says why. */
export class CsrError extends Error {
  override readonly name = 'CsrError';
}

/** Makes a PEM CSR for `commonName` signed with the key pair (SHA-256 with RSA). */
export function createCsr(commonName: string, privateKeyPem: string, publicKeyPem: string): string {
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  csr.setSubject([{ name: 'commonName', value: commonName }]);
  csr.sign(nodeRsaSigner(privateKeyPem), forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(csr);
}

/** A checked request. */
export interface CheckedCsr {
  readonly commonName: string;
  readonly publicKeyPem: string;
  readonly keyBits: number;
}

/** Largest CSR accepted, in characters of PEM (a 16384-bit RSA request is about 4.5 KB). */
const MAX_CSR_CHARS = 16 * 1024;

/**
 * Parses and verifies a PEM CSR: well-formed, an RSA key of at least `minKeyBits`, a valid
 * self-signature and a subject common name. Throws {@link CsrError} otherwise.
 */
export function checkCsr(pem: string, minKeyBits: number): CheckedCsr {
  if (pem.length > MAX_CSR_CHARS) throw new CsrError(`csr_pem is longer than ${MAX_CSR_CHARS} characters`);
  if (!pem.includes('-----BEGIN CERTIFICATE REQUEST-----')) throw new CsrError('csr_pem is not a PEM certificate request (BEGIN CERTIFICATE REQUEST)');
  let csr: forge.pki.CertificateSigningRequest;
  try {
    csr = forge.pki.certificationRequestFromPem(pem);
  } catch (err) {
    // forge refuses every non-RSA key here ("OID is not RSA").
    throw new CsrError(`csr_pem cannot be read: ${(err as Error).message}; registration v2 takes RSA keys`);
  }
  const key = csr.publicKey as forge.pki.rsa.PublicKey | null;
  if (!key || typeof key.n?.bitLength !== 'function') throw new CsrError('csr_pem carries no RSA public key');
  const bits = key.n.bitLength();
  if (bits < minKeyBits) throw new CsrError(`csr_pem key is RSA-${bits}; at least RSA-${minKeyBits} is required`);
  let valid = false;
  try {
    valid = csr.verify();
  } catch {
    valid = false;
  }
  if (!valid) throw new CsrError('csr_pem signature does not verify');
  const cn = csr.subject.getField('CN') as { value?: unknown } | null;
  if (!cn || typeof cn.value !== 'string' || cn.value === '') throw new CsrError('csr_pem has no subject common name (CN)');
  return { commonName: cn.value, publicKeyPem: forge.pki.publicKeyToPem(key), keyBits: bits };
}
