import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { requestJson, type ClientTls } from '../../net/jsonClient';
import { isSealed, parseWrapKey, unseal } from '../../net/pki/wrapKey';
import { registerWithDms } from '../../net/registerWithDms';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { tempDir } from './support';

const WRAP = 'b'.repeat(64);

function getText(port: number, route: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    }).on('error', reject);
  });
}

/** The administrator key, opened with the wrap key when the DMS sealed it. */
function adminKey(file: string, wrap: string | undefined): string {
  const text = readFileSync(file, 'utf8');
  return isSealed(text) ? unseal(text, parseWrapKey(wrap) as Buffer, 'admin.key.pem', file) : text;
}

async function startDms(dir: string, env: Record<string, string> = {}): Promise<{ hd: HdProcess; url: string; obs: number; admin: () => ClientTls }> {
  const [port, obs] = [await freePort(), await freePort()];
  const hd = startHd(['run', 'pipelines/dms.yaml', '--quiet'], {
    DMS_DATA_DIR: dir,
    COMMAND_INTERFACE: '127.0.0.1',
    COMMAND_PORT: String(port),
    OBSERVABILITY_INTERFACE: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    DMS_MIN_KEY_BITS: '2048',
    DMS_CA_KEY_BITS: '2048',
    ...env,
  });
  await waitForPort('127.0.0.1', port, hd, 60_000);
  const admin = (): ClientTls => ({
    ca: readFileSync(path.join(dir, 'ca', 'ca.cert.pem'), 'utf8'),
    cert: readFileSync(path.join(dir, 'admin', 'admin.cert.pem'), 'utf8'),
    key: adminKey(path.join(dir, 'admin', 'admin.key.pem'), env.PLATFORM_PKI_WRAP_KEY),
  });
  return { hd, url: `https://127.0.0.1:${port}`, obs, admin };
}

const proc = suite('hd run pipelines/dms.yaml (real process)');
proc('a restarted DMS keeps its CA, topology, schemas and issued certificates; /health and /metrics answer', async () => {
  const t = tempDir();
  let a: Awaited<ReturnType<typeof startDms>> | undefined;
  let b: Awaited<ReturnType<typeof startDms>> | undefined;
  try {
    a = await startDms(t.dir, { PLATFORM_PKI_WRAP_KEY: WRAP });
    const admin = a.admin();
    assert.ok(isSealed(readFileSync(path.join(t.dir, 'ca', 'ca.key.pem'), 'utf8')));
    assert.ok(isSealed(readFileSync(path.join(t.dir, 'admin', 'admin.key.pem'), 'utf8')));
    assert.is((await requestJson('PUT', `${a.url}/v1/clusters/c1`, admin, { primary: true })).status, 200);
    assert.is((await requestJson('PUT', `${a.url}/v1/nodes/scc-1`, admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: '127.0.0.9', port: 6987 } } })).status, 200);
    const schema = JSON.parse(readFileSync('pipelines/examples/data/flows.schema.json', 'utf8')) as object;
    assert.is((await requestJson('PUT', `${a.url}/v1/datasets/flows`, admin, { schema })).status, 200);
    const tok = (await requestJson('POST', `${a.url}/v1/bootstrap-tokens`, admin, { node_name: 'sql-1', role: 'sqlServer' })).body as { token: string };
    const reg = await registerWithDms({ dmsUrl: a.url, nodeName: 'sql-1', role: 'sqlServer', caCertPem: admin.ca as string, credentials: { bootstrapToken: tok.token }, keyBits: 2048 });
    assert.ok(reg.success, reg.error_message);
    const health = await getText(a.obs, '/health');
    assert.is(health.status, 200);
    assert.is(JSON.parse(health.text).role, 'dms');
    const metrics = await getText(a.obs, '/metrics');
    assert.match(metrics.text, /hd_dms_registrations_total\{credential="bootstrap_token",result="ok"\} 1/);
    assert.match(metrics.text, /hd_dms_nodes\{state="registered"\} 1/);
    const before = (await requestJson('GET', `${a.url}/v1/topology`, admin)).body;
    assert.is(await a.hd.stop(), 0);

    b = await startDms(t.dir, { PLATFORM_PKI_WRAP_KEY: WRAP });
    const admin2 = b.admin();
    assert.is(admin2.ca, admin.ca);
    assert.equal((await requestJson('GET', `${b.url}/v1/topology`, admin2)).body, before);
    assert.is(((await requestJson('GET', `${b.url}/v1/datasets/flows`, admin2)).body as { id: string }).id, 'flows');
    // The node's certificate from before the restart still opens the control plane.
    const nodeTls = { ca: reg.ca_cert_pem, cert: reg.signed_cert_pem, key: reg.client_key_pem };
    assert.is((await requestJson('GET', `${b.url}/v1/datasets`, nodeTls)).status, 200);
    // The used token stays used across the restart.
    const again = await registerWithDms({ dmsUrl: b.url, nodeName: 'sql-1', role: 'sqlServer', caCertPem: admin.ca as string, credentials: { bootstrapToken: tok.token }, keyBits: 2048 });
    assert.match(again.error_message, /already used/);
    assert.is(await b.hd.stop(), 0);

    // Without the wrap key the sealed root cannot be opened: the DMS refuses to start and says why.
    const [port] = [await freePort()];
    const c = startHd(['run', 'pipelines/dms.yaml', '--quiet'], { DMS_DATA_DIR: t.dir, COMMAND_INTERFACE: '127.0.0.1', COMMAND_PORT: String(port), OBSERVABILITY_PORT: '-1' });
    assert.is(await c.exited, 1);
    assert.match(c.output(), /encrypted but PLATFORM_PKI_WRAP_KEY is not set/);
  } finally {
    await a?.hd.stop();
    await b?.hd.stop();
    t.remove();
  }
});
proc('a bad setting is reported at load with the variable it came from', async () => {
  const c = startHd(['run', 'pipelines/dms.yaml', '--quiet'], { DMS_CERT_LIFETIME_S: '5', PLATFORM_PKI_WRAP_KEY: 'short' });
  assert.is(await c.exited, 1);
  assert.match(c.output(), /setting 'cert_lifetime_s' expects an integer 60\.\.31536000, got "5" \(from DMS_CERT_LIFETIME_S\)/);
  assert.match(c.output(), /setting 'pki_wrap_key' expects .* \(from PLATFORM_PKI_WRAP_KEY\)/);
});

proc.run();
