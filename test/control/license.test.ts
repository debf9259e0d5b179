import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson, COMMUNITY_LIMITS, HD_LICENSE_KEY_FINGERPRINT, HD_LICENSE_PUBLIC_KEY, licenseKeyFingerprint, licenseStatus, verifyLicense } from '../../control/dms/webux/license';
import { run as licenseTool } from '../../scripts/license';
import { tempDir } from './support';
import { startWebuxDms, type WebuxDms } from './webuxSupport';

// The test key pair: the DMS under test is given its public half instead of the vendor key.
const keys = generateKeyPairSync('ed25519');
const TEST_PUBLIC = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const other = generateKeyPairSync('ed25519');

const DAY = 24 * 3600 * 1000;
function licenseFile(over: Record<string, unknown> = {}, key = keys.privateKey): { license: Record<string, unknown>; signature: string } {
  const license = { id: 'L-1', licensee: 'Example Corp', issued_at: new Date(Date.now() - DAY).toISOString(), expires_at: new Date(Date.now() + 365 * DAY).toISOString(), limits: { clusters: 4, storage_nodes: 64, proxies: 8 }, ...over };
  return { license, signature: sign(null, Buffer.from(canonicalJson(license)), key).toString('base64') };
}

const lic = suite<{ dms: WebuxDms }>('Enterprise License');
lic.before(async (ctx) => {
  ctx.dms = await startWebuxDms({ licensePublicKeyPem: TEST_PUBLIC, port: -1 });
});
lic.after(async (ctx) => ctx.dms.close());

lic('verifyLicense: a good license verifies; tampered, other key, expired, not yet valid and malformed are refused with the reason', () => {
  assert.is(verifyLicense(licenseFile(), TEST_PUBLIC).license.licensee, 'Example Corp');
  const tampered = licenseFile();
  tampered.license.limits = { clusters: 99, storage_nodes: 999, proxies: 99 };
  assert.throws(() => verifyLicense(tampered, TEST_PUBLIC), /signature does not verify/);
  assert.throws(() => verifyLicense(licenseFile({}, other.privateKey), TEST_PUBLIC), /signature does not verify/);
  assert.throws(() => verifyLicense(licenseFile({}), undefined), /signature does not verify/, 'the built-in vendor key does not accept a test-signed license');
  assert.throws(() => verifyLicense(licenseFile({ expires_at: new Date(Date.now() - 1000).toISOString() }), TEST_PUBLIC), /expired at/);
  assert.throws(() => verifyLicense(licenseFile({ issued_at: new Date(Date.now() + DAY).toISOString() }), TEST_PUBLIC), /valid from/);
  assert.throws(() => verifyLicense(licenseFile({ limits: { clusters: 0, storage_nodes: 1, proxies: 1 } }), TEST_PUBLIC), /limits.clusters/);
  assert.throws(() => verifyLicense({ license: 'x' }, TEST_PUBLIC), /JSON object/);
  assert.throws(() => verifyLicense(licenseFile({ licensee: '' }), TEST_PUBLIC), /licensee/);
});

lic('community mode without a license: limits reported against usage, never an error', () => {
  const s = licenseStatus(undefined, { clusters: 2, storage_nodes: 3, proxies: 1 }, TEST_PUBLIC);
  assert.is(s.mode, 'community');
  assert.equal(s.limits, COMMUNITY_LIMITS);
  assert.equal(s.over, ['clusters']);
  // A stored license that expired since falls back to community mode, saying why.
  const expired = licenseStatus(licenseFile({ expires_at: new Date(Date.now() + 10).toISOString() }), { clusters: 1, storage_nodes: 1, proxies: 1 }, TEST_PUBLIC, new Date(Date.now() + 1000));
  assert.is(expired.mode, 'community');
  assert.match(expired.problem ?? '', /expired/);
});

lic('the admin API imports a license, shows it, refuses bad ones with the reason (400), and goes back to community mode', async ({ dms }) => {
  const none = await dms.call('GET', '/v1/license', dms.admin);
  assert.is((none.body as { mode: string }).mode, 'community');
  const bad = licenseFile();
  bad.license.licensee = 'Someone Else';
  const refused = await dms.call('PUT', '/v1/license', dms.admin, bad);
  assert.is(refused.status, 400);
  assert.match((refused.body as { message: string }).message, /license refused: the license signature does not verify/);
  const expired = await dms.call('PUT', '/v1/license', dms.admin, licenseFile({ expires_at: new Date(Date.now() - DAY).toISOString() }));
  assert.is(expired.status, 400);
  assert.match((expired.body as { message: string }).message, /expired/);
  const ok = await dms.call('PUT', '/v1/license', dms.admin, licenseFile());
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.is((ok.body as { mode: string; license: { licensee: string } }).license.licensee, 'Example Corp');
  assert.equal((ok.body as { limits: unknown }).limits, { clusters: 4, storage_nodes: 64, proxies: 8 });
  assert.is(((await dms.call('GET', '/v1/license', dms.admin)).body as { mode: string }).mode, 'enterprise');
  assert.is(((await dms.call('DELETE', '/v1/license', dms.admin)).body as { mode: string }).mode, 'community');
});

lic('the built-in key is a real Ed25519 vendor key; GET /v1/license names the key in use (a test key here, the vendor key by default)', async ({ dms }) => {
  const key = createPublicKey(HD_LICENSE_PUBLIC_KEY);
  assert.is(key.asymmetricKeyType, 'ed25519');
  assert.is(licenseKeyFingerprint(HD_LICENSE_PUBLIC_KEY), HD_LICENSE_KEY_FINGERPRINT);
  assert.is.not(HD_LICENSE_KEY_FINGERPRINT, licenseKeyFingerprint('-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA5Uu2K+9WJj0RFjaCSLxaWjWeBx/JyvRuCDmOpfD/tfQ=\n-----END PUBLIC KEY-----\n'), 'not the old placeholder');
  assert.equal(licenseStatus(undefined, { clusters: 0, storage_nodes: 0, proxies: 0 }).key, { fingerprint: HD_LICENSE_KEY_FINGERPRINT, vendor: true });
  const shown = (await dms.call('GET', '/v1/license', dms.admin)).body as { key: { fingerprint: string; vendor: boolean } };
  assert.equal(shown.key, { fingerprint: licenseKeyFingerprint(TEST_PUBLIC), vendor: false });
});

lic('scripts/license.ts: keygen writes a 0600 private key, sign makes a license the key verifies, verify checks it; the vendor key refuses it', () => {
  const dir = tempDir('hd-license-tool-');
  try {
    assert.match(licenseTool(['keygen', '--out', dir.dir]), /hd-license-vendor\.key\.pem \(keep it offline\)/);
    const keyFile = path.join(dir.dir, 'hd-license-vendor.key.pem');
    const pubFile = path.join(dir.dir, 'hd-license-vendor.pub.pem');
    assert.is(statSync(keyFile).mode & 0o777, 0o600);
    assert.throws(() => licenseTool(['keygen', '--out', dir.dir]), /EEXIST/, 'never overwrites a key');
    const out = path.join(dir.dir, 'license.json');
    const said = licenseTool(['sign', '--key', keyFile, '--id', 'L-9', '--licensee', 'Example Corp', '--expires', new Date(Date.now() + 30 * DAY).toISOString(), '--storage-nodes', '16', '--out', out]);
    assert.match(said, /note: this key .* is not the one built into HD/);
    const file = JSON.parse(readFileSync(out, 'utf8')) as { license: { limits: unknown } };
    assert.equal(file.license.limits, { clusters: 1, storage_nodes: 16, proxies: 1 });
    assert.is(verifyLicense(file, readFileSync(pubFile, 'utf8')).license.id, 'L-9');
    assert.match(licenseTool(['verify', out, '--public-key', pubFile]), /valid: license L-9 for Example Corp/);
    assert.throws(() => licenseTool(['verify', out]), /signature does not verify/);
    assert.throws(() => licenseTool(['sign', '--key', keyFile, '--licensee', 'X']), /--expires is required/);
    assert.throws(() => licenseTool(['sign', '--key', keyFile, '--licensee', 'X', '--expires', 'soon']), /ISO 8601/);
    assert.throws(() => licenseTool(['sign', '--key', keyFile, '--licensee', 'X', '--expires', '2100-01-01', '--proxies', '0']), /positive integer/);
    writeFileSync(path.join(dir.dir, 'rsa.pem'), generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    assert.throws(() => licenseTool(['sign', '--key', path.join(dir.dir, 'rsa.pem'), '--licensee', 'X', '--expires', '2100-01-01']), /not Ed25519/);
    assert.throws(() => licenseTool(['nope']), /usage/);
  } finally {
    dir.remove();
  }
});

lic.run();
