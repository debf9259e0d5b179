import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MtlsIdentity } from '../../net/mtls';
import { registerWithDms } from '../../net/registerWithDms';
import { startServiceIdentity } from '../../sql/serviceIdentity';
import { startTestDms, tempDir } from '../control/support';

const t = suite("hd_sql's DMS-CA identity: renewed while it runs, written back, read live");

t('a renewal updates the live material and the certificate file; the key stays; bad files are refused naming them', async () => {
  const dms = await startTestDms();
  const dir = tempDir('hd-sql-identity-');
  try {
    const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'hd-sql-r', role: 'sqlServer' })).body as { token: string }).token;
    const reg = await registerWithDms({ dmsUrl: dms.url, nodeName: 'hd-sql-r', role: 'sqlServer', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
    assert.ok(reg.success, reg.error_message);
    const files = { caFile: path.join(dir.dir, 'ca.pem'), certFile: path.join(dir.dir, 'sql.crt'), keyFile: path.join(dir.dir, 'sql.key') };
    writeFileSync(files.caFile, dms.server.caCertPem);
    writeFileSync(files.certFile, reg.signed_cert_pem);
    writeFileSync(files.keyFile, reg.client_key_pem, { mode: 0o600 });
    const lines: string[] = [];
    // Renewal is due at once (instead of two thirds into the 24 h lifetime).
    const svc = startServiceIdentity({ endpoint: dms.url, ...files }, { log: (l) => lines.push(l), renewAfter: new Date(Date.now() + 50), crlRefreshMs: 0 });
    try {
      const first = svc.identity.certificate.serial;
      const view = svc.tls;
      assert.is(view.cert, reg.signed_cert_pem);
      const deadline = Date.now() + 20_000;
      while (readFileSync(files.certFile, 'utf8') === reg.signed_cert_pem && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      const written = readFileSync(files.certFile, 'utf8');
      assert.is.not(written, reg.signed_cert_pem, lines.join('\n'));
      // The same view object now gives the renewed certificate; the file holds it; the key is unchanged.
      assert.is(view.cert, written);
      assert.is(view.key, reg.client_key_pem);
      const renewed = new MtlsIdentity({ keyPem: view.key, certPem: view.cert, caPem: view.ca });
      assert.is.not(renewed.certificate.serial, first);
      assert.is(renewed.certificate.commonName, 'hd-sql-r');
      assert.ok(lines.some((l) => /^certificate renewed, valid until .*; written to .*sql\.crt$/.test(l)), lines.join('\n'));
    } finally {
      svc.stop();
    }
    writeFileSync(files.keyFile, 'not a key');
    assert.throws(() => startServiceIdentity({ endpoint: dms.url, ...files }, { log: () => undefined }), /HD_DMS_CLIENT_CERT_FILE \(.*sql\.crt\), HD_DMS_CLIENT_KEY_FILE and HD_DMS_CA_FILE do not make a usable identity/);
  } finally {
    dir.remove();
    await dms.close();
  }
});

t.run();
