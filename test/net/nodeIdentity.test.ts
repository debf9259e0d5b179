/**
 * A node's DMS identity (net/nodeIdentity.ts) in this process against a real DMS: the order of
 * credentials at start (stored certificate, then the configured one), what is kept on disk, a DMS
 * that cannot be reached, a refused stored certificate, and the pipeline stage's setting checks.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { NodeIdentity, type NodeIdentityOptions } from '../../net/nodeIdentity';
import { builtinRegistry } from '../../roles/builtins';
import { loadPipelineFile } from '../../pipelines/load';
import { runPipeline } from '../../pipelines/run';
import { startTestDms, tempDir, type TestDms } from '../control/support';

const KEY_BITS = 2048;

/** Asserts `p` rejects with a message matching `re`. */
async function rejects(p: Promise<unknown>, re: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  assert.ok(err, `expected a rejection matching ${re}`);
  assert.match(err?.message ?? '', re);
}

async function tokenFor(dms: TestDms, name: string): Promise<string> {
  return ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role: 'storageNode' })).body as { token: string }).token;
}

function options(dms: TestDms, dir: string, extra: Partial<NodeIdentityOptions> = {}): NodeIdentityOptions {
  return { nodeName: 'sn-a', role: 'storageNode', dmsUrl: dms.url, caCertPem: dms.server.caCertPem, credentials: {}, stateDir: dir, keyBits: KEY_BITS, log: () => undefined, ...extra };
}

const t = suite('node identity: credentials at start, state directory, refusals');
let dms: TestDms;
let state: { dir: string; remove(): void };
t.before(async () => {
  dms = await startTestDms();
  state = tempDir('hd-identity-');
});
t.after(async () => {
  await dms?.close();
  state?.remove();
});

t('first start registers with the bootstrap token and keeps the material (the key 0600); a restart uses the stored certificate', async () => {
  const token = await tokenFor(dms, 'sn-a');
  const first = await NodeIdentity.start(options(dms, state.dir, { credentials: { bootstrapToken: token } }));
  await first.stop();
  assert.is(first.source, 'registration');
  assert.is(first.identity.certificate.commonName, 'sn-a');
  assert.is(statSync(path.join(state.dir, 'node.key.pem')).mode & 0o777, 0o600);
  // The token is spent; the stored certificate is what registers the node again.
  const again = await NodeIdentity.start(options(dms, state.dir, { credentials: { bootstrapToken: token } }));
  await again.stop();
  assert.is(again.source, 'stored certificate');
  assert.is.not(again.identity.certificate.serial, first.identity.certificate.serial, 'a fresh certificate');
  assert.is(again.identity.material.keyPem, first.identity.material.keyPem, 'for the same key');
});

t('a renewal is written to the state directory, so a restart starts from the renewed certificate', async () => {
  const id = await NodeIdentity.start(options(dms, state.dir, { credentials: { bootstrapToken: await tokenFor(dms, 'sn-a') } }));
  try {
    await id.renewNow();
    await id.stop();
    assert.is(readFileSync(path.join(state.dir, 'node.cert.pem'), 'utf8'), id.identity.material.certPem);
    assert.equal(id.health().certificate, { serial: id.identity.certificate.serial, not_before: id.identity.certificate.notBefore.toISOString(), not_after: id.identity.certificate.notAfter.toISOString() });
  } finally {
    await id.stop();
  }
});

t('a stored certificate of another node or role is not used; a token of another node then fails the start with the DMS reason', async () => {
  const token = await tokenFor(dms, 'sn-a');
  await (await NodeIdentity.start(options(dms, state.dir, { credentials: { bootstrapToken: await tokenFor(dms, 'sn-a') } }))).stop();
  const lines: string[] = [];
  await rejects(
    NodeIdentity.start(options(dms, state.dir, { nodeName: 'sn-b', log: (l) => lines.push(l), credentials: { bootstrapToken: token } })),
    /storageNode 'sn-b' cannot register with the DMS .*bootstrap_token is for node 'sn-a'|is for node 'sn-a'/,
  );
  assert.ok(lines.some((l) => /stored certificate .* is not used: it is for node 'sn-a', not 'sn-b'/.test(l)), lines.join('\n'));
  await rejects(NodeIdentity.start(options(dms, state.dir, { role: 'scc', log: () => undefined })), /no registration credential/);
});

t('a revoked stored certificate is refused by the DMS; the configured token registers the node afresh', async () => {
  const before = await NodeIdentity.start(options(dms, state.dir, { credentials: { bootstrapToken: await tokenFor(dms, 'sn-a') } }));
  await before.stop();
  assert.is((await dms.call('POST', '/v1/certificates/revoke', dms.admin, { node_name: 'sn-a' })).status, 200);
  const lines: string[] = [];
  const after = await NodeIdentity.start(options(dms, state.dir, { log: (l) => lines.push(l), credentials: { bootstrapToken: await tokenFor(dms, 'sn-a') } }));
  await after.stop();
  assert.is(after.source, 'registration');
  assert.ok(lines.some((l) => /the stored certificate was refused/.test(l)), lines.join('\n'));
});

t('with the DMS unreachable the node starts on its stored certificate; without one it does not start', async () => {
  const url = 'https://127.0.0.1:1';
  const id = await NodeIdentity.start(options(dms, state.dir, { dmsUrl: url }));
  await id.stop();
  assert.is(id.source, 'stored certificate (DMS unreachable)');
  const empty = tempDir('hd-identity-empty-');
  try {
    await rejects(NodeIdentity.start(options(dms, empty.dir, { dmsUrl: url, credentials: { bootstrapToken: await tokenFor(dms, 'sn-a') } })), /cannot reach the DMS/);
  } finally {
    empty.remove();
  }
});

t('scc.yaml with DMS_URL but no CA bundle, or no STATE_DIR, fails at start and says what to set', async () => {
  const caFile = path.join(state.dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  const base = { SN_TARGETS: 'sn1:127.0.0.1:1:2', NODE_NAME: 'scc-x', DMS_URL: dms.url, PRODUCTION_IP: '127.0.0.1', PRODUCTION_PORT: '0', OBSERVABILITY_PORT: '0', COMMAND_PORT: '0', QUERY_GRPC_PORT: '0' };
  for (const [env, want] of [
    [base, /PLATFORM_CA_CERT_PEM/],
    [{ ...base, PLATFORM_CA_CERT_PEM: caFile }, /set STATE_DIR/],
  ] as const) {
    const loaded = await loadPipelineFile(path.resolve(__dirname, '../../pipelines/scc.yaml'), { registry: builtinRegistry(), env });
    if (!loaded.ok) throw new Error(loaded.problems.map((p) => p.message).join('\n'));
    const r = await runPipeline(loaded.pipeline, { stopTimeoutMs: 2000 });
    assert.is(r.status, 'failed');
    assert.match(r.error?.message ?? '', want);
  }
});

t.run();
