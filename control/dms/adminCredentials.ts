/**
 * The administrator's credential: a client certificate with OU `admin`, issued by DMS-CA into the
 * data directory on first start (like a cluster's admin kubeconfig). Whoever holds these files
 * administers the instance; move them off the host, or keep the directory at mode 0700.
 */
import { X509Certificate } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../atomicFile';
import type { CertificateAuthority } from '../pki/certificateAuthority';
import { certificateInfo, generateRsaKey } from '../pki/x509';
import { ADMIN_ROLE } from './context';

/** Lifetime of the administrator certificate: one year. */
export const ADMIN_CERT_LIFETIME_MS = 365 * 24 * 3600 * 1000;
/** It is re-issued at start when it has less than this left. */
const REISSUE_BEFORE_MS = 30 * 24 * 3600 * 1000;

/** Where the administrator's certificate and key are. */
export interface AdminCredentialFiles {
  readonly cert: string;
  readonly key: string;
}

/** Issues the administrator credential into `dir` unless a valid one is there. */
export async function ensureAdminCredentials(dir: string, ca: CertificateAuthority, keyBits: number): Promise<AdminCredentialFiles> {
  const files = { cert: path.join(dir, 'admin.cert.pem'), key: path.join(dir, 'admin.key.pem') };
  try {
    await access(files.key);
    const pem = await readFile(files.cert);
    const root = new X509Certificate(ca.certPem);
    // A certificate from an earlier root (the CA was recreated) is replaced too.
    const ours = new X509Certificate(pem).verify(root.publicKey);
    if (ours && certificateInfo(pem).notAfter.getTime() - Date.now() > REISSUE_BEFORE_MS) return files;
  } catch {
    // Missing or unreadable: issue a new one below.
  }
  const kp = await generateRsaKey(keyBits);
  const issued = ca.issue({ commonName: 'admin', role: ADMIN_ROLE, publicKeyPem: kp.publicKeyPem, lifetimeMs: ADMIN_CERT_LIFETIME_MS });
  await writeFileAtomic(files.key, kp.privateKeyPem, 0o600);
  await writeFileAtomic(files.cert, issued.certPem, 0o600);
  return files;
}
