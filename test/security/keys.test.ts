/**
 * Security issue #14, item 7: the administrator certificate is recorded and revocable, and identity
 * files (a node's key, the administrator's key) are sealed with PLATFORM_PKI_WRAP_KEY. Against a
 * real DMS process.
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readAdminKey } from '../../control/dms/adminCredentials';
import { NodeIdentity } from '../../net/nodeIdentity';
import { WrapKeyError } from '../../net/pki/wrapKey';
import { certificateInfo } from '../../net/pki/x509';
import { tempDir } from '../control/support';
import { adminToken, startDmsProcess } from './dmsProcess';

const WRAP = 'c'.repeat(64);
const WRONG = Buffer.from('d'.repeat(64), 'hex');

/** Whether `pem`'s private key is the one `certPem` was issued for. */
function belongs(keyPem: string, certPem: string): boolean {
  const a = createPublicKey(keyPem).export({ type: 'spki', format: 'der' });
  const b = createPublicKey(certPem).export({ type: 'spki', format: 'der' });
  return a.equals(b);
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: Error) => e,
  );
}

const admin = suite('the administrator certificate is recorded and revocable (real DMS process)');
admin('revoked through the admin route, the DMS refuses it; the next start issues a new one', async () => {
  const t = tempDir('hd-sec-admin-');
  let dms = await startDmsProcess(t.dir);
  try {
    const cred = await dms.admin();
    const serial = certificateInfo(cred.cert as string).serial;
    const listed = await dms.call('GET', '/v1/admin/certificates', cred);
    assert.is(listed.status, 200, JSON.stringify(listed.body));
    const rec = (listed.body as { certificates: { serial: string; subject: string; issued_at: string }[] }).certificates.find((c) => c.serial === serial);
    assert.ok(rec, 'the administrator certificate is recorded');
    assert.is(rec?.subject, 'O=HD, OU=admin, CN=admin');
    assert.ok(Date.parse(rec?.issued_at ?? '') > 0);

    const revoked = await dms.call('POST', '/v1/certificates/revoke', cred, { serial, reason: 'key leaked' });
    assert.is(revoked.status, 200, JSON.stringify(revoked.body));
    assert.equal(revoked.body, { revoked: [serial] });
    const after = await dms.call('GET', '/v1/topology', cred);
    assert.is(after.status, 401);
    assert.match((after.body as { message: string }).message, new RegExp(`client certificate ${serial} was revoked`));
    assert.is((await dms.call('PUT', '/v1/clusters/c1', cred, {})).status, 401);
    // It is on the revocation list every node fetches.
    assert.is((await dms.call('GET', '/v1/crl', { ca: dms.ca })).status, 200);

    assert.is(await dms.stop(), 0);
    dms = await startDmsProcess(t.dir);
    const fresh = await dms.admin();
    assert.is.not(certificateInfo(fresh.cert as string).serial, serial);
    assert.is((await dms.call('GET', '/v1/topology', fresh)).status, 200);
    assert.is((await dms.call('GET', '/v1/topology', cred)).status, 401, 'the revoked one stays refused after a restart');
  } finally {
    await dms.stop();
    t.remove();
  }
});

const sealed = suite('PLATFORM_PKI_WRAP_KEY seals the identity files (real DMS process)');
sealed('the administrator key and a node key are no plain PEM on disk, open with the key and fail clearly without it', async () => {
  const t = tempDir('hd-sec-wrap-');
  const dmsDir = path.join(t.dir, 'dms');
  const dms = await startDmsProcess(dmsDir, { PLATFORM_PKI_WRAP_KEY: WRAP });
  let node: NodeIdentity | undefined;
  try {
    // The administrator key.
    const adminKeyFile = path.join(dmsDir, 'admin', 'admin.key.pem');
    const onDisk = readFileSync(adminKeyFile, 'utf8');
    assert.not.ok(onDisk.includes('PRIVATE KEY'), 'the administrator key is not a plain PEM private key');
    assert.ok(onDisk.includes('BEGIN HD WRAPPED SECRET'));
    const cred = await dms.admin();
    assert.ok(belongs(cred.key as string, cred.cert as string));
    assert.is((await dms.call('GET', '/v1/topology', cred)).status, 200);
    let err = await rejection(readAdminKey(adminKeyFile, WRONG));
    assert.ok(err instanceof WrapKeyError);
    assert.match(err.message, /cannot decrypt .*admin\.key\.pem with PLATFORM_PKI_WRAP_KEY \(wrong key or damaged file\)/);
    err = await rejection(readAdminKey(adminKeyFile, undefined));
    assert.match(err.message, /admin\.key\.pem is encrypted but PLATFORM_PKI_WRAP_KEY is not set/);

    // A node's key (what the nodeIdentity stage of an SCC or a Storage Node keeps).
    const state = path.join(t.dir, 'sn-w.identity');
    const options = { nodeName: 'sn-w', role: 'storageNode' as const, dmsUrl: dms.url, caCertPem: dms.ca, stateDir: state, keyBits: 2048, crlRefreshMs: 0, log: () => undefined };
    node = await NodeIdentity.start({ ...options, wrapKey: Buffer.from(WRAP, 'hex'), credentials: { bootstrapToken: await adminToken(dms, { node_name: 'sn-w', role: 'storageNode' }) } });
    await node.stop();
    const nodeKey = readFileSync(path.join(state, 'node.key.pem'), 'utf8');
    assert.not.ok(nodeKey.includes('PRIVATE KEY'), 'the node key is not a plain PEM private key');
    assert.ok(nodeKey.includes('BEGIN HD WRAPPED SECRET'));
    // With the right key the node starts from what it stored (no credential needed).
    node = await NodeIdentity.start({ ...options, wrapKey: Buffer.from(WRAP, 'hex'), credentials: {} });
    assert.is(node.source, 'stored certificate');
    assert.ok(belongs(node.identity.material.keyPem, node.identity.material.certPem));
    await node.stop();
    node = undefined;
    // With a wrong key, or none, it stops naming the file and the setting (it does not register afresh).
    err = await rejection(NodeIdentity.start({ ...options, wrapKey: WRONG, credentials: { bootstrapToken: await adminToken(dms, { node_name: 'sn-w' }) } }));
    assert.match(err.message, /cannot decrypt .*node\.key\.pem with PLATFORM_PKI_WRAP_KEY \(wrong key or damaged file\)/);
    err = await rejection(NodeIdentity.start({ ...options, credentials: {} }));
    assert.match(err.message, /node\.key\.pem is encrypted but PLATFORM_PKI_WRAP_KEY is not set/);
  } finally {
    await node?.stop();
    await dms.stop();
    t.remove();
  }
});

admin.run();
sealed.run();
