import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CaError, CertificateAuthority } from '../../net/pki/certificateAuthority';
import { checkCsr, createCsr, CsrError } from '../../net/pki/csr';
import { isSealed, parseWrapKey, seal, unseal, WrapKeyError } from '../../net/pki/wrapKey';
import { certificateInfo, generateRsaKey } from '../../net/pki/x509';
import { tempDir } from '../control/support';

const KEY_HEX = 'a'.repeat(64);

const wrap = suite('PLATFORM_PKI_WRAP_KEY');
wrap('takes 64 hex digits or 32 bytes of base64 / base64url; empty means none', () => {
  assert.equal(parseWrapKey(KEY_HEX)?.length, 32);
  assert.equal(parseWrapKey(Buffer.alloc(32, 7).toString('base64'))?.length, 32);
  assert.equal(parseWrapKey(Buffer.alloc(32, 0xfb).toString('base64url'))?.length, 32);
  assert.is(parseWrapKey(''), undefined);
  assert.is(parseWrapKey(undefined), undefined);
});
wrap('refuses other keys with a message naming the setting', () => {
  for (const bad of ['abc', 'a'.repeat(63), Buffer.alloc(16).toString('base64'), 'z'.repeat(64)]) {
    assert.throws(() => parseWrapKey(bad), (e: Error) => e instanceof WrapKeyError && e.message.includes('PLATFORM_PKI_WRAP_KEY'));
  }
});
wrap('seal / unseal round trip; a wrong key, another purpose or a damaged file are refused', () => {
  const key = parseWrapKey(KEY_HEX) as Buffer;
  const s = seal('secret text', key, 'p1');
  assert.ok(isSealed(s));
  assert.not.ok(s.includes('secret'));
  assert.is(unseal(s, key, 'p1'), 'secret text');
  assert.throws(() => unseal(s, Buffer.alloc(32, 1), 'p1'), /wrong key/);
  assert.throws(() => unseal(s, key, 'p2'), /wrong key/);
  assert.throws(() => unseal(s.replace(/[A-Za-z](?=[A-Za-z0-9+/=]*\n-----END)/, (c) => (c === 'A' ? 'B' : 'A')), key, 'p1'), (e: Error) => e instanceof WrapKeyError);
  assert.throws(() => unseal('-----BEGIN HD WRAPPED SECRET-----\nAAAA\n-----END HD WRAPPED SECRET-----', key, 'p1'), /not a valid sealed file/);
});

const ca = suite('DMS-CA root of trust');
ca('is created on first start and re-loaded as the same root (plain key)', async () => {
  const t = tempDir();
  try {
    const a = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    assert.ok(a.created);
    const keyText = readFileSync(path.join(t.dir, 'ca.key.pem'), 'utf8');
    assert.ok(keyText.includes('BEGIN PRIVATE KEY'));
    const b = await CertificateAuthority.open({ dir: t.dir });
    assert.not.ok(b.created);
    assert.is(b.certPem, a.certPem);
    const x = new X509Certificate(a.certPem);
    assert.ok(x.ca);
  } finally {
    t.remove();
  }
});
ca('with PLATFORM_PKI_WRAP_KEY the key is sealed at rest and re-loaded with the key only', async () => {
  const t = tempDir();
  const key = parseWrapKey(KEY_HEX) as Buffer;
  try {
    const a = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048, wrapKey: key });
    const keyText = readFileSync(path.join(t.dir, 'ca.key.pem'), 'utf8');
    assert.ok(isSealed(keyText));
    assert.not.ok(keyText.includes('PRIVATE KEY'));
    const b = await CertificateAuthority.open({ dir: t.dir, wrapKey: key });
    assert.is(b.certPem, a.certPem);
    // The reloaded root still signs certificates that verify against it.
    const kp = await generateRsaKey(2048);
    const issued = b.issue({ commonName: 'sn1', role: 'storageNode', publicKeyPem: kp.publicKeyPem, lifetimeMs: 60_000 });
    assert.ok(new X509Certificate(issued.certPem).verify(new X509Certificate(a.certPem).publicKey));
    let err: unknown;
    try {
      await CertificateAuthority.open({ dir: t.dir });
    } catch (e) {
      err = e;
    }
    assert.match(String(err), /encrypted but PLATFORM_PKI_WRAP_KEY is not set/);
    err = undefined;
    try {
      await CertificateAuthority.open({ dir: t.dir, wrapKey: Buffer.alloc(32, 9) });
    } catch (e) {
      err = e;
    }
    assert.match(String(err), /cannot decrypt .* with PLATFORM_PKI_WRAP_KEY/);
  } finally {
    t.remove();
  }
});
ca('a plain key found while a wrap key is set is sealed in place', async () => {
  const t = tempDir();
  try {
    const a = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    const key = parseWrapKey(KEY_HEX) as Buffer;
    const b = await CertificateAuthority.open({ dir: t.dir, wrapKey: key });
    assert.is(b.certPem, a.certPem);
    assert.ok(isSealed(readFileSync(path.join(t.dir, 'ca.key.pem'), 'utf8')));
  } finally {
    t.remove();
  }
});
ca('refuses a certificate without its key, and a key that belongs to another certificate', async () => {
  const t = tempDir();
  const u = tempDir();
  try {
    await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    await CertificateAuthority.open({ dir: u.dir, keyBits: 2048 });
    writeFileSync(path.join(t.dir, 'ca.key.pem'), readFileSync(path.join(u.dir, 'ca.key.pem')));
    let err: unknown;
    try {
      await CertificateAuthority.open({ dir: t.dir });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof CaError);
    assert.match(String(err), /does not belong to/);
    rmSync(path.join(t.dir, 'ca.key.pem'));
    err = undefined;
    try {
      await CertificateAuthority.open({ dir: t.dir });
    } catch (e) {
      err = e;
    }
    assert.match(String(err), /root key is lost/);
  } finally {
    t.remove();
    u.remove();
  }
});
ca('issues short-lived certificates naming the node, its role and addresses', async () => {
  const t = tempDir();
  try {
    const a = await CertificateAuthority.open({ dir: t.dir, keyBits: 2048 });
    const kp = await generateRsaKey(2048);
    const now = Date.now();
    const issued = a.issue({ commonName: 'scc-1', role: 'scc', publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000, altNames: { ips: ['127.0.0.5'], dns: ['scc-1.hd'] } }, now);
    const info = certificateInfo(issued.certPem);
    assert.is(info.commonName, 'scc-1');
    assert.is(info.organizationalUnit, 'scc');
    assert.is(info.serial, issued.serial);
    assert.ok(Math.abs(info.notAfter.getTime() - (now + 3_600_000)) < 1000);
    const x = new X509Certificate(issued.certPem);
    assert.match(x.subjectAltName ?? '', /IP Address:127\.0\.0\.5/);
    assert.match(x.subjectAltName ?? '', /DNS:scc-1\.hd/);
    assert.not.ok(x.ca);
  } finally {
    t.remove();
  }
});

const csr = suite('certificate signing requests');
csr('a request made by createCsr passes checkCsr with its name and key size', async () => {
  const kp = await generateRsaKey(2048);
  const c = checkCsr(createCsr('sn-7', kp.privateKeyPem, kp.publicKeyPem), 2048);
  assert.is(c.commonName, 'sn-7');
  assert.is(c.keyBits, 2048);
});
csr('refuses a small key, a bad signature, non-PEM and a request without a name', async () => {
  const kp = await generateRsaKey(2048);
  const good = createCsr('sn-7', kp.privateKeyPem, kp.publicKeyPem);
  assert.throws(() => checkCsr(good, 4096), (e: Error) => e instanceof CsrError && /RSA-2048; at least RSA-4096/.test(e.message));
  const other = await generateRsaKey(2048);
  // A request whose public key is not the signer's: its signature cannot verify.
  const forged = createCsr('sn-7', other.privateKeyPem, kp.publicKeyPem);
  assert.throws(() => checkCsr(forged, 2048), /signature does not verify/);
  assert.throws(() => checkCsr('hello', 2048), /not a PEM certificate request/);
  assert.throws(() => checkCsr('-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----', 2048), /cannot be read/);
  assert.throws(() => checkCsr('x'.repeat(20000), 2048), /longer than/);
});

wrap.run();
ca.run();
csr.run();
