/**
 * The tests' own license key pair (docs/webux.md, "License"): made fresh in each test process, so
 * no private key is kept anywhere. A test DMS is given its public half through the test-only WebUX
 * option `licensePublicKeyPem` instead of the vendor key built in, and licenses signed here verify
 * only there.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../../control/dms/webux/license';

const pair = generateKeyPairSync('ed25519');

/** The public key test DMSes verify licenses with (SPKI PEM). */
export const TEST_LICENSE_PUBLIC_KEY = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const DAY = 24 * 3600 * 1000;

/** A license file: `over` replaces fields of a valid one-year license; signed with `key` (default the test key). */
export function testLicense(over: Record<string, unknown> = {}, key: KeyObject = pair.privateKey): { license: Record<string, unknown>; signature: string } {
  const license = { id: 'L-TEST', licensee: 'HD test suite', issued_at: new Date(Date.now() - DAY).toISOString(), expires_at: new Date(Date.now() + 365 * DAY).toISOString(), limits: { clusters: 100, storage_nodes: 1000, proxies: 100 }, ...over };
  return { license, signature: sign(null, Buffer.from(canonicalJson(license)), key).toString('base64') };
}
