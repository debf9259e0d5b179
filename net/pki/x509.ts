/**
 * X.509 building blocks: RSA keys from Node's crypto (native, off the event loop), certificates and
 * requests laid out by node-forge, and every signature computed by Node's crypto (forge's pure
 * JavaScript RSA is far too slow for 4096-bit keys). Only RSA: node-forge's certificate code knows
 * no other public-key algorithm (see docs/control-plane.md, "Keys").
 */
import { constants, generateKeyPair, privateEncrypt, randomBytes, X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';
import forge from 'node-forge';

const generateKeyPairAsync = promisify(generateKeyPair);

/** Registration v2 key size (the reference: RSA-4096). */
export const DEFAULT_KEY_BITS = 4096;

/** An RSA key pair as PEM text. */
export interface KeyPairPem {
  /** PKCS#8 private key. */
  readonly privateKeyPem: string;
  /** SubjectPublicKeyInfo public key. */
  readonly publicKeyPem: string;
}

/** Generates an RSA key pair (on libuv's thread pool). */
export async function generateRsaKey(bits = DEFAULT_KEY_BITS): Promise<KeyPairPem> {
  const kp = await generateKeyPairAsync('rsa', {
    modulusLength: bits,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: kp.privateKey, publicKeyPem: kp.publicKey };
}

// DER prefix of a DigestInfo for SHA-256 (RFC 8017 §9.2, note 1).
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/**
 * A stand-in for a forge private key whose `sign(md)` computes RSASSA-PKCS1-v1_5 with Node's
 * crypto: forge hashes the to-be-signed bytes, Node does the RSA operation.
 */
export function nodeRsaSigner(privateKeyPem: string): forge.pki.rsa.PrivateKey {
  const sign = (md: forge.md.MessageDigest): string => {
    if (md.algorithm !== 'sha256') throw new Error(`only sha256 signatures are made, got ${md.algorithm}`);
    const digest = Buffer.from(md.digest().getBytes(), 'binary');
    const sig = privateEncrypt({ key: privateKeyPem, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([SHA256_DIGEST_INFO, digest]));
    return sig.toString('binary');
  };
  return { sign } as unknown as forge.pki.rsa.PrivateKey;
}

/** A random positive 128-bit serial number as lowercase hex. */
export function randomSerialHex(): string {
  const b = randomBytes(16);
  b[0] = (b[0] & 0x7f) | 0x01; // positive, and never a leading zero byte that DER would strip
  return b.toString('hex');
}

/** Normalises a serial to lowercase hex without leading zeros (Node writes it uppercase). */
export function normalizeSerial(serial: string): string {
  return serial.toLowerCase().replace(/^0+(?=.)/, '');
}

/** Subject attributes of our certificates. */
export interface SubjectFields {
  readonly commonName: string;
  readonly organizationalUnit?: string;
}

function subjectAttrs(s: SubjectFields): forge.pki.CertificateField[] {
  const out: forge.pki.CertificateField[] = [{ name: 'organizationName', value: 'HD' }];
  if (s.organizationalUnit) out.push({ name: 'organizationalUnitName', value: s.organizationalUnit });
  out.push({ name: 'commonName', value: s.commonName });
  return out;
}

/** What {@link buildCertificate} needs. */
export interface CertificateSpec {
  readonly subject: SubjectFields;
  /** The issuer's certificate; absent for a self-signed root. */
  readonly issuerPem?: string;
  readonly publicKeyPem: string;
  readonly serialHex: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** forge extension objects (basicConstraints, keyUsage, extKeyUsage, subjectAltName, ...). */
  readonly extensions: readonly Record<string, unknown>[];
}

/** Lays out a certificate with forge and signs it (SHA-256 with RSA) with `signerKeyPem`. */
export function buildCertificate(spec: CertificateSpec, signerKeyPem: string): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(spec.publicKeyPem);
  cert.serialNumber = spec.serialHex;
  cert.validity.notBefore = spec.notBefore;
  cert.validity.notAfter = spec.notAfter;
  cert.setSubject(subjectAttrs(spec.subject));
  if (spec.issuerPem) cert.setIssuer(forge.pki.certificateFromPem(spec.issuerPem).subject.attributes);
  else cert.setIssuer(subjectAttrs(spec.subject));
  cert.setExtensions([...spec.extensions]);
  cert.sign(nodeRsaSigner(signerKeyPem), forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

/** What we read back from a certificate. */
export interface CertificateInfo {
  /** Lowercase hex, no leading zeros. */
  readonly serial: string;
  readonly commonName: string;
  readonly organizationalUnit: string | undefined;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly fingerprint256: string;
}

/** Reads subject, serial and validity of a PEM certificate (Node's native parser). */
export function certificateInfo(pem: string | Buffer): CertificateInfo {
  const x = new X509Certificate(pem);
  const field = (name: string): string | undefined => x.subject.split('\n').find((l) => l.startsWith(`${name}=`))?.slice(name.length + 1);
  return {
    serial: normalizeSerial(x.serialNumber),
    commonName: field('CN') ?? '',
    organizationalUnit: field('OU'),
    notBefore: new Date(x.validFrom),
    notAfter: new Date(x.validTo),
    fingerprint256: x.fingerprint256,
  };
}
