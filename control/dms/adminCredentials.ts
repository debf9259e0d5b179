/**
 * The administrator's credential: a client certificate with OU `admin`, issued by DMS-CA into the
 * data directory on first start (like a cluster's admin kubeconfig). Whoever holds these files
 * administers the instance; move them off the host, or keep the directory at mode 0700.
 *
 * Every administrator certificate is recorded in the store like a node's (serial, subject, issued
 * at, expiry), so `POST /v1/certificates/revoke` revokes it and the DMS refuses it from then on;
 * a revoked or expiring one is replaced at the next start. With PLATFORM_PKI_WRAP_KEY the key file
 * is sealed (net/pki/wrapKey.ts); {@link readAdminKey} opens it.
 */
import { X509Certificate } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../lib/atomicFile';
import type { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { readSecretFile, writeSecretFile } from '../../net/pki/wrapKey';
import { certificateInfo, generateRsaKey } from '../../net/pki/x509';
import type { Store } from '../store/jsonFileStore';
import { ADMIN_ROLE } from './context';
import type { DmsState } from './state';

/** Lifetime of the administrator certificate: one year. */
export const ADMIN_CERT_LIFETIME_MS = 365 * 24 * 3600 * 1000;
/** It is re-issued at start when it has less than this left. */
const REISSUE_BEFORE_MS = 30 * 24 * 3600 * 1000;
/** The purpose sealed into the administrator key file (see wrapKey.ts). */
export const ADMIN_KEY_PURPOSE = 'admin.key.pem';

/** Where the administrator's certificate and key are. */
export interface AdminCredentialFiles {
  readonly cert: string;
  readonly key: string;
}

/** The subject string recorded for an administrator certificate. */
const SUBJECT = `O=HD, OU=${ADMIN_ROLE}, CN=admin`;

/**
 * Reads the administrator key file, opening it with `wrapKey` when it is sealed; throws a
 * WrapKeyError naming the file and PLATFORM_PKI_WRAP_KEY when the key is missing or wrong.
 */
export async function readAdminKey(file: string, wrapKey: Buffer | undefined): Promise<string> {
  return (await readSecretFile(file, wrapKey, ADMIN_KEY_PURPOSE)).text;
}

/**
 * Issues the administrator credential into `dir` unless a valid one is there (ours, unrevoked, more
 * than 30 days left), and records it in `store`. A plain key found while `wrapKey` is set is sealed
 * in place; a sealed key that `wrapKey` cannot open stops the DMS (the error names the file).
 */
export async function ensureAdminCredentials(dir: string, ca: CertificateAuthority, keyBits: number, store: Store<DmsState>, wrapKey?: Buffer): Promise<AdminCredentialFiles> {
  const files = { cert: path.join(dir, 'admin.cert.pem'), key: path.join(dir, 'admin.key.pem') };
  const present = await access(files.key).then(
    () => true,
    () => false,
  );
  if (present) {
    // A key that cannot be opened is an error to fix, not a reason to mint a new credential.
    const key = await readSecretFile(files.key, wrapKey, ADMIN_KEY_PURPOSE);
    const kept = await usableCertificate(files.cert, ca, store);
    if (kept) {
      if (wrapKey && !key.sealed) await writeSecretFile(files.key, key.text, wrapKey, ADMIN_KEY_PURPOSE);
      await record(store, kept.serial, kept.notAfter, kept.notBefore, false);
      return files;
    }
  }
  const kp = await generateRsaKey(keyBits);
  const now = Date.now();
  const issued = ca.issue({ commonName: 'admin', role: ADMIN_ROLE, publicKeyPem: kp.publicKeyPem, lifetimeMs: ADMIN_CERT_LIFETIME_MS }, now);
  // Recorded before it is written: a certificate on disk is always one the DMS can revoke.
  await record(store, issued.serial, issued.notAfter, new Date(now), true);
  await writeSecretFile(files.key, kp.privateKeyPem, wrapKey, ADMIN_KEY_PURPOSE);
  await writeFileAtomic(files.cert, issued.certPem, 0o600);
  return files;
}

/** The certificate in `file` when it is ours, unrevoked and not about to expire. */
async function usableCertificate(file: string, ca: CertificateAuthority, store: Store<DmsState>): Promise<{ serial: string; notBefore: Date; notAfter: Date } | undefined> {
  let pem: Buffer;
  try {
    pem = await readFile(file);
  } catch {
    return undefined;
  }
  try {
    // A certificate from an earlier root (the CA was recreated) is replaced too.
    if (!new X509Certificate(pem).verify(new X509Certificate(ca.certPem).publicKey)) return undefined;
    const info = certificateInfo(pem);
    if (info.notAfter.getTime() - Date.now() <= REISSUE_BEFORE_MS) return undefined;
    if (store.get().certificates[info.serial]?.revoked_at) return undefined;
    return { serial: info.serial, notBefore: info.notBefore, notAfter: info.notAfter };
  } catch {
    return undefined;
  }
}

/** Records an administrator certificate (a certificate issued before records were kept is recorded at its first start since). */
async function record(store: Store<DmsState>, serial: string, notAfter: Date, issuedAt: Date, fresh: boolean): Promise<void> {
  if (!fresh && store.get().certificates[serial]) return;
  await store.update((s) => {
    s.certificates[serial] = { node_name: ADMIN_ROLE, role: ADMIN_ROLE, not_after: notAfter.toISOString(), issued_at: issuedAt.toISOString(), subject: SUBJECT };
  });
}
