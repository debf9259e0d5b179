/**
 * The cost of mutual TLS on the SCC's gRPC QueryDispatch port: the first call on a new channel
 * (connect + TLS handshake + HTTP/2 set-up) and the per-call latency of a small unary call
 * (CancelQuery of an unknown query: the service answers NOT_FOUND at once) on an open channel,
 * plain beside mutual TLS with DMS-CA certificates (a DMS in this process, keys of the size given).
 * Medians of 5 rounds, 2000 calls per round; both ends in this process on loopback.
 * Run: `npx tsx bench/grpcMtls.bench.ts [keyBits]` (default 2048).
 */
import { startTestDms, tempDir } from '../test/control/support';
import { NodeIdentity } from '../net/nodeIdentity';
import { QueryDispatcher } from '../nodes/scc/queryDispatcher';
import { QueryService } from '../nodes/scc/queryService';
import { QueryDispatchClient } from '../query/dispatch/dispatchClient';
import { dispatchCredentials } from '../net/grpcTls';
import { registerWithDms } from '../net/registerWithDms';
import { MtlsIdentity } from '../net/mtls';

async function main() {
  const bits = Number(process.argv[2] ?? 2048);
  const dms = await startTestDms({ minKeyBits: bits });
  const dir = tempDir();
  const tok = async (n: string) => ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: n })).body as { token: string }).token;
  const node = await NodeIdentity.start({ nodeName: 'scc-b', role: 'scc', dmsUrl: dms.url, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await tok('scc-b') }, stateDir: dir.dir, keyBits: bits, log: () => undefined });
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: 'c-b', role: 'client', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: await tok('c-b') }, keyBits: bits });
  const cid = MtlsIdentity.fromRegistration(r);
  const mk = () => new QueryDispatcher({ nodeName: 'x', targets: [], recordSize: 64, health: () => undefined, maxQueries: 4, maxQueryMs: 0, onEvent: () => undefined });
  const sec = new QueryService(mk(), { node, roles: ['client'] });
  const pl = new QueryService(mk());
  const sp = await sec.listen('127.0.0.1', 0);
  const pp = await pl.listen('127.0.0.1', 0);
  const call = (c: QueryDispatchClient) => c.cancelQuery(1, '00112233445566778899aabbccddeeff').catch(() => undefined);
  const res: Record<string, number[]> = { plainFirst: [], tlsFirst: [], plainCall: [], tlsCall: [] };
  for (let round = 0; round < 5; round++) {
    for (const kind of ['plain', 'tls'] as const) {
      const t0 = performance.now();
      const c = new QueryDispatchClient(`127.0.0.1:${kind === 'tls' ? sp : pp}`, kind === 'tls' ? { credentials: dispatchCredentials(cid.material, 'scc-b') } : {});
      await call(c);
      res[`${kind}First`].push(performance.now() - t0);
      const N = 2000;
      const t1 = performance.now();
      for (let i = 0; i < N; i++) await call(c);
      res[`${kind}Call`].push(((performance.now() - t1) / N) * 1000);
      c.close();
    }
  }
  const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(`RSA-${bits}: first call (connect+handshake) plain ${med(res.plainFirst).toFixed(2)} ms, mTLS ${med(res.tlsFirst).toFixed(2)} ms; per call on an open channel plain ${med(res.plainCall).toFixed(0)} us, mTLS ${med(res.tlsCall).toFixed(0)} us`);
  await sec.close(); await pl.close(); await node.stop(); await dms.close(); dir.remove();
}
void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
