/**
 * The shared ingress secret of `hd up`'s Proxy (PROXY_INGRESS_SECRET_FILE, docs/proxy.md
 * "Identity"): made once per data directory (32 random bytes, hex, mode 0600) and kept across
 * restarts. A local client that stands in for the ingress sends it as `X-HD-Ingress-Secret` with
 * its X-Forwarded-Role / X-Forwarded-Email; whoever can read the file can claim any identity, as
 * whoever holds the administrator key can change the policy. hd_sql needs no secret: it presents
 * its DMS-CA `sqlServer` certificate.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The header carrying the secret (the Proxy's INGRESS_SECRET_HEADER, as clients spell it). */
export const INGRESS_SECRET_HEADER_NAME = 'X-HD-Ingress-Secret';

/** `<dataDir>/proxy/ingress-secret`. */
export function ingressSecretFile(dataDir: string): string {
  return path.join(dataDir, 'proxy', 'ingress-secret');
}

/** Writes a fresh secret to {@link ingressSecretFile} unless one is there; returns the file. */
export function ensureIngressSecret(dataDir: string): string {
  const file = ingressSecretFile(dataDir);
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  }
  return file;
}
