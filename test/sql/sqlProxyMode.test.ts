/**
 * hd_sql behind the HD Proxy, as in a deployment: a DMS (in this process) holding the dataset schema,
 * a real Proxy process registered with it, a real SCC and two Storage Nodes, and `hd run
 * pipelines/sql.yaml` with HD_PROXY_ENDPOINT and the reference's HD_DMS_* variables. hd_sql reads its
 * schemas from the DMS over mutual TLS and sends every read through the Proxy, whose policy applies
 * to the service's identity: a role with a hidden field gets zeros there through SQL too.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { SignJWT } from 'jose';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { registerWithDms } from '../../net/registerWithDms';
import { generateRsaKey } from '../../net/pki/x509';
import { ingestMinutes } from '../support/ingestMinutes';
import { startCluster, type Cluster } from '../support/cluster';
import { startHd, type HdProcess } from '../support/hdProcess';
import { startProxyProcess } from '../control/proxySupport';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { query, startProxySql } from './proxyCluster';

const schemaJson = readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const POLICY = 'package hd.authz\nimport rego.v1\ndefault allow := true\nhidden_fields contains "src_ip" if input.role == "guest"\n';

interface Ctx {
  dms: TestDms;
  cluster: Cluster;
  proxy: HdProcess;
  proxyUrl: string;
  dir: string;
  remove(): void;
  files: { ca: string; cert: string; key: string };
}

const WINDOW = `ts >= ${T0} AND ts < ${T0 + 180}`;

const pm = suite<Ctx>('hd_sql in Proxy mode: schemas from the DMS, reads through a real Proxy process');
pm.before(async (ctx) => {
  ctx.dms = await startTestDms();
  ctx.cluster = await startCluster({ recordSize: 64, schemas: [schemaJson] });
  const { dms, cluster } = ctx;
  const t = tempDir();
  ctx.dir = t.dir;
  ctx.remove = t.remove;
  // The Proxy also verifies JWTs: hd_sql without a DMS certificate proves its identity with one
  // (forwarded headers count only from an ingress's certificate or secret).
  const issuer = await generateRsaKey(2048);
  writeFileSync(path.join(t.dir, 'jwt.pub.pem'), issuer.publicKeyPem);
  const jwt = await new SignJWT({ role: 'analyst', email: 'analyst@example.com' }).setProtectedHeader({ alg: 'RS256' }).setIssuer('https://idp.example').setIssuedAt().setExpirationTime('1h').sign(createPrivateKey(issuer.privateKeyPem));
  writeFileSync(path.join(t.dir, 'analyst.jwt'), jwt);
  const proxy = await startProxyProcess(dms, cluster, schemaJson, t.dir, 'proxy-sql', { PROXY_JWT_ISSUER: 'https://idp.example', PROXY_JWT_KEY_FILE: path.join(t.dir, 'jwt.pub.pem') });
  ctx.proxy = proxy.proc;
  ctx.proxyUrl = proxy.url;
  const ca = proxy.caFile;
  // hd_sql's own certificate, issued by the DMS (registration v2 with a bootstrap token).
  const sqlToken = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'hd-sql', role: 'sqlServer' })).body as { token: string }).token;
  const reg = await registerWithDms({ dmsUrl: dms.url, nodeName: 'hd-sql', role: 'sqlServer', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: sqlToken }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  ctx.files = { ca, cert: path.join(t.dir, 'sql.crt'), key: path.join(t.dir, 'sql.key') };
  writeFileSync(ctx.files.cert, reg.signed_cert_pem);
  writeFileSync(ctx.files.key, reg.client_key_pem, { mode: 0o600 });

  assert.is((await dms.call('PUT', '/v1/policy', dms.admin, { rego: POLICY })).status, 200);

  await ingestMinutes(cluster, schemaJson, T0, 3, (b) => Array.from({ length: 100 }, (_, i) => ({ ts: String(T0 + b * 60 + (i % 60)), src_ip: `10.0.${b}.${i}`, dst_ip: '10.9.9.9', src_port: '1000', dst_port: i % 2 === 0 ? '443' : '53', proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' })));
});
pm.after(async (ctx) => {
  await ctx.proxy?.stop();
  await ctx.cluster?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

pm('an analyst role reads through the Proxy: the schema came from the DMS, filters and counts are right', async (ctx) => {
  const { sql, pgPort } = await startProxySql(ctx, 'analyst');
  try {
    assert.match(sql.output(), /1 dataset\(s\) \(flows\) from the DMS at https:\/\/127\.0\.0\.1:\d+(, re-read every \d+ ms \(HD_SQL_CATALOG_REFRESH_MS\))?; Proxy https:\/\/127\.0\.0\.1:\d+ \(as analyst, with its client certificate\)/);
    assert.equal(await query(pgPort, `SELECT count(*)::INTEGER AS n FROM flows WHERE ${WINDOW}`), [{ n: 300 }]);
    assert.equal(await query(pgPort, `SELECT count(*)::INTEGER AS n, min(src_ip) AS lo FROM flows WHERE ${WINDOW} AND dst_port = 443`), [{ n: 150, lo: '10.0.0.0' }]);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

pm("the policy applies to the service's identity: a guest gets src_ip zeroed, every other column intact", async (ctx) => {
  const { sql, pgPort } = await startProxySql(ctx, 'guest');
  try {
    const rows = await query(pgPort, `SELECT DISTINCT src_ip, dst_ip FROM flows WHERE ${WINDOW}`);
    assert.equal(rows, [{ src_ip: '0.0.0.0', dst_ip: '10.9.9.9' }]);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
});

pm("without HD_DMS_* the schemas are the Proxy's copy (GET /v1/datasets, which needs an identity)", async (ctx) => {
  const { sql, pgPort } = await startProxySql(ctx, 'analyst', { HD_DMS_ENDPOINT: '', HD_DMS_CA_FILE: '', HD_DMS_CLIENT_CERT_FILE: '', HD_DMS_CLIENT_KEY_FILE: '', PLATFORM_CA_CERT_PEM: ctx.files.ca, HD_SQL_PROXY_TOKEN_FILE: path.join(ctx.dir, 'analyst.jwt') });
  try {
    assert.match(sql.output(), /1 dataset\(s\) \(flows\) from the Proxy at https:\/\/127\.0\.0\.1:\d+(, re-read every \d+ ms \(HD_SQL_CATALOG_REFRESH_MS\))?; Proxy .* \(as analyst\)/);
    assert.equal(await query(pgPort, `SELECT count(*)::INTEGER AS n FROM flows WHERE ${WINDOW}`), [{ n: 300 }]);
  } finally {
    assert.is(await sql.stop(), 0, sql.output());
  }
  const anonymous = await new Promise<number>((resolve, reject) => {
    https.get(`${ctx.proxyUrl}/v1/datasets`, { ca: readFileSync(ctx.files.ca, 'utf8') }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
  assert.is(anonymous, 401, 'no identity, no schemas');
});

pm('a certificate the DMS did not issue: the start fails saying which variable to fix', async (ctx) => {
  const other = await startTestDms();
  try {
    const foreignCa = path.join(ctx.dir, 'other-ca.pem');
    writeFileSync(foreignCa, other.server.caCertPem);
    const p = startHd(['run', 'pipelines/sql.yaml', '--quiet'], {
      HD_PROXY_ENDPOINT: ctx.proxyUrl,
      HD_SQL_PROXY_ROLE: 'analyst',
      HD_DMS_ENDPOINT: ctx.dms.url,
      HD_DMS_CA_FILE: foreignCa,
      HD_DMS_CLIENT_CERT_FILE: ctx.files.cert,
      HD_DMS_CLIENT_KEY_FILE: ctx.files.key,
      HD_SQL_PGWIRE_ADDRESS: '127.0.0.1:0',
      HD_SQL_HTTP_ENABLED: 'false',
      HD_SQL_FLIGHTSQL_ENABLED: 'false',
      PLATFORM_DATA_RETURN_PORT: '0',
      OBSERVABILITY_PORT: '-1',
    });
    assert.is.not(await p.exited, 0);
    assert.match(p.output(), /cannot read the schemas from the DMS at https:\/\/127\.0\.0\.1:\d+ \(HD_DMS_ENDPOINT\)/);
  } finally {
    await other.close();
  }
});

pm.run();
