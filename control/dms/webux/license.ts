/**
 * The Enterprise License (docs/webux.md, "License"): a JSON document signed with Ed25519,
 *
 *   { "license": { "id", "licensee", "issued_at", "expires_at", "limits": { "clusters", "storage_nodes", "proxies" } },
 *     "signature": "<base64 Ed25519 signature of the canonical JSON of 'license'>" }
 *
 * verified against the vendor's public key built into the DMS ({@link HD_LICENSE_PUBLIC_KEY}). The
 * vendor's private key is kept offline, never in this repository; `scripts/license.ts sign` signs a
 * license with a key file given by path. Tests pass their own key pair to `DmsServer.start` (the
 * WebUX option `licensePublicKeyPem`, reachable from code only: no setting or environment variable of
 * a deployed DMS replaces the vendor key). Without a license the platform runs in community mode
 * with {@link COMMUNITY_LIMITS}, enforced where something new would go over them (communityLimits.ts):
 * never against what is already registered, so `hd up` is never blocked.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';

/**
 * The vendor's license-signing public key (Ed25519, SPKI PEM). Its private half was generated
 * offline and is not in the repository; {@link licenseKeyFingerprint} of it is
 * {@link HD_LICENSE_KEY_FINGERPRINT}.
 */
export const HD_LICENSE_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEARN/EMzXGfYGSqXZYnwHNw0CUvJU8bWZFDCbGdBJ8e9o=
-----END PUBLIC KEY-----
`;

/** SHA-256 of a public key's DER (SPKI), hex: which key a DMS verifies licenses with (GET /v1/license shows it). */
export function licenseKeyFingerprint(publicKeyPem: string): string {
  return createHash('sha256').update(createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' })).digest('hex');
}

/** The fingerprint of {@link HD_LICENSE_PUBLIC_KEY}. */
export const HD_LICENSE_KEY_FINGERPRINT = licenseKeyFingerprint(HD_LICENSE_PUBLIC_KEY);

/** What a license (or community mode) allows. */
export interface LicenseLimits {
  readonly clusters: number;
  readonly storage_nodes: number;
  readonly proxies: number;
}

/** Community mode: one cluster of up to 4 Storage Nodes behind one Proxy (what `hd up` runs fits). */
export const COMMUNITY_LIMITS: LicenseLimits = { clusters: 1, storage_nodes: 4, proxies: 1 };

/** The signed part of a license. */
export interface LicenseBody {
  readonly id: string;
  readonly licensee: string;
  readonly issued_at: string;
  readonly expires_at: string;
  readonly limits: LicenseLimits;
}

/** A license file. */
export interface LicenseFile {
  readonly license: LicenseBody;
  readonly signature: string;
}

/** Why a license was refused (the message says what to do). */
export class LicenseError extends Error {
  override readonly name = 'LicenseError';
}

/** JSON with object keys sorted at every depth: the bytes the signature covers. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function limitsOf(v: unknown): LicenseLimits {
  if (!isObj(v)) throw new LicenseError("'license.limits' must be an object {clusters, storage_nodes, proxies}");
  const n = (k: keyof LicenseLimits): number => {
    const x = v[k];
    if (!Number.isInteger(x) || (x as number) < 1) throw new LicenseError(`'license.limits.${k}' must be a positive integer, got ${JSON.stringify(x)}`);
    return x as number;
  };
  return { clusters: n('clusters'), storage_nodes: n('storage_nodes'), proxies: n('proxies') };
}

/**
 * Checks `doc` is a license signed by `publicKeyPem` and valid at `now`; throws {@link LicenseError}
 * naming the problem (malformed, tampered or signed by another key, not yet valid, expired).
 */
export function verifyLicense(doc: unknown, publicKeyPem: string = HD_LICENSE_PUBLIC_KEY, now = new Date()): LicenseFile {
  if (!isObj(doc) || !isObj(doc.license) || typeof doc.signature !== 'string') throw new LicenseError('a license file is a JSON object {"license": {...}, "signature": "<base64>"}; import the file your vendor sent unchanged');
  const l = doc.license;
  for (const k of ['id', 'licensee', 'issued_at', 'expires_at']) if (typeof l[k] !== 'string' || l[k] === '') throw new LicenseError(`'license.${k}' must be a non-empty string`);
  const limits = limitsOf(l.limits);
  const sig = Buffer.from(doc.signature, 'base64');
  let ok = false;
  try {
    ok = sig.length === 64 && verify(null, Buffer.from(canonicalJson(l)), createPublicKey(publicKeyPem), sig);
  } catch {
    ok = false;
  }
  if (!ok) throw new LicenseError('the license signature does not verify: the file was changed after signing, or it was signed for another product key; ask your vendor for the original file');
  const issued = Date.parse(l.issued_at as string);
  const expires = Date.parse(l.expires_at as string);
  if (Number.isNaN(issued) || Number.isNaN(expires)) throw new LicenseError("'license.issued_at' and 'license.expires_at' must be ISO 8601 dates");
  if (issued > now.getTime()) throw new LicenseError(`the license is valid from ${l.issued_at as string}; check the DMS host's clock`);
  if (expires <= now.getTime()) throw new LicenseError(`the license expired at ${l.expires_at as string}; import a renewed license (the platform keeps running in community mode)`);
  return { license: { id: l.id as string, licensee: l.licensee as string, issued_at: l.issued_at as string, expires_at: l.expires_at as string, limits }, signature: doc.signature };
}

/** How many of each limited thing the instance has. */
export interface LicenseUsage {
  readonly clusters: number;
  readonly storage_nodes: number;
  readonly proxies: number;
}

/** The license state the WebUX and GET /v1/license show. */
export interface LicenseStatus {
  readonly mode: 'enterprise' | 'community';
  readonly license?: LicenseBody;
  /** Why a stored license no longer counts (it expired since it was imported). */
  readonly problem?: string;
  readonly limits: LicenseLimits;
  readonly usage: LicenseUsage;
  /**
   * The limits the usage is over: what registered while a license allowed it and runs on after it
   * expired or was removed (kept serving; nothing new of that kind is admitted).
   */
  readonly over: readonly (keyof LicenseLimits)[];
  /** The key licenses are verified with: its fingerprint, and whether it is the vendor's built-in one. */
  readonly key: { readonly fingerprint: string; readonly vendor: boolean };
}

/** The status for a stored license (or none) and the current usage. */
export function licenseStatus(stored: unknown, usage: LicenseUsage, publicKeyPem: string = HD_LICENSE_PUBLIC_KEY, now = new Date()): LicenseStatus {
  let license: LicenseBody | undefined;
  let problem: string | undefined;
  if (stored !== undefined) {
    try {
      license = verifyLicense(stored, publicKeyPem, now).license;
    } catch (err) {
      problem = (err as Error).message;
    }
  }
  const limits = license?.limits ?? COMMUNITY_LIMITS;
  const over = (Object.keys(limits) as (keyof LicenseLimits)[]).filter((k) => usage[k] > limits[k]);
  const fingerprint = licenseKeyFingerprint(publicKeyPem);
  const key = { fingerprint, vendor: fingerprint === HD_LICENSE_KEY_FINGERPRINT };
  return { mode: license ? 'enterprise' : 'community', ...(license && { license }), ...(problem && { problem }), limits, usage, over, key };
}
