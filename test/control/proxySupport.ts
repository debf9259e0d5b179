/**
 * Helpers of the Proxy tests: a stand-in SCC serving the real gRPC QueryDispatch service (it keeps
 * the query JSON it was sent and answers as told), a Proxy in this process registered with a
 * test DMS, and a Proxy process in front of a real cluster.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_INGRESS_ROLES, INGRESS_SECRET_HEADER } from '../../control/proxy/identity';
import { ProxyServer } from '../../control/proxy/proxyServer';
import type { ProxySettings } from '../../control/proxy/settings';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { queryDispatchService, type DispatchReply } from '../../query/dispatch/dispatchService';
import type { Cluster } from '../support/cluster';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import type { TestDms } from './support';

/**
 * The shared ingress secret the test Proxies accept (PROXY_INGRESS_SECRET_FILE): the tests' clients
 * stand in for the authenticating ingress, which alone may send X-Forwarded-Role / -Email.
 */
export const TEST_INGRESS_SECRET = 'test-ingress-secret-0123456789abcdef';
/** The header that proves a test client is the ingress; spread it beside the identity headers. */
export const INGRESS: Readonly<Record<string, string>> = { [INGRESS_SECRET_HEADER]: TEST_INGRESS_SECRET };

/** A gRPC QueryDispatch server that records queries. */
export class StandInScc {
  /** Query JSON received, in order. */
  readonly queries: Record<string, unknown>[] = [];
  /** CancelQuery calls received, in order. */
  readonly cancels: { queryId: number; token: string }[] = [];
  /** How Dispatch answers: ok, or a gRPC status. */
  answer: 'ok' | { code: grpc.status; details: string } = 'ok';
  private server = new grpc.Server();
  port = 0;

  async start(): Promise<this> {
    this.server.addService(queryDispatchService, {
      dispatch: (call: grpc.ServerUnaryCall<{ queryJson: string }, DispatchReply>, cb: grpc.sendUnaryData<DispatchReply>) => {
        const q = JSON.parse(call.request.queryJson) as Record<string, unknown>;
        this.queries.push(q);
        if (this.answer !== 'ok') return cb({ code: this.answer.code, details: this.answer.details });
        cb(null, { queryId: q.query_id as number, batches: (q.batch_ids as string[]).length, nodes: ['sn-1'], missingBatchIds: [] });
      },
      // As the SCC: a cancel of a query it took (same id and token) stops it; anything else is NOT_FOUND.
      cancelQuery: (call: grpc.ServerUnaryCall<{ queryId: number; token: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        const { queryId, token } = call.request;
        this.cancels.push({ queryId, token });
        if (!this.queries.some((q) => q.query_id === queryId && String(q.token).toLowerCase() === token.toLowerCase())) return cb({ code: grpc.status.NOT_FOUND, details: `no query ${queryId} with that token` });
        cb(null, { cancelled: true, nodes: 1 });
      },
    });
    this.port = await new Promise<number>((resolve, reject) => this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => this.server.tryShutdown(() => r()));
  }
}

/** A Proxy in this process and how to call it. */
export interface TestProxy {
  readonly proxy: ProxyServer;
  readonly url: string;
  /** TLS with the CA bundle only (a client behind the ingress). */
  readonly anon: ClientTls;
  /** TLS with the DMS's certificate (allowed to post policies). */
  readonly dms: ClientTls;
  /** POST /v1/query; default headers: a guest identity with the ingress secret ({@link INGRESS}). */
  query(body: unknown, headers?: Record<string, string>): Promise<JsonAnswer>;
  close(): Promise<void>;
}

/** Registers and starts a Proxy against `dms` (a bootstrap token is made for it). */
export async function startTestProxy(dms: TestDms, name = 'proxy-1', overrides: Partial<ProxySettings> = {}): Promise<TestProxy> {
  // A Proxy certificate is issued only for a declared node, naming only its declared host.
  await dms.call('PUT', `/v1/nodes/${name}`, dms.admin, { role: 'proxy', addresses: { control: { host: '127.0.0.1', port: 1 } } });
  const t = (await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name })).body as { token: string };
  const proxy = await ProxyServer.start(
    {
      nodeName: name,
      host: '127.0.0.1',
      port: 0,
      advertiseHost: '127.0.0.1',
      observabilityHost: '127.0.0.1',
      observabilityPort: -1,
      dmsUrl: dms.url,
      caCertPem: dms.server.caCertPem,
      credentials: { bootstrapToken: t.token },
      keyBits: 2048,
      topologyRefreshMs: 60_000,
      dispatchTimeoutMs: 5000,
      dispatchTls: false,
      ingress: { roles: DEFAULT_INGRESS_ROLES, secret: TEST_INGRESS_SECRET },
      ...overrides,
    },
    { log: () => undefined },
  );
  const url = `https://127.0.0.1:${proxy.address.port}`;
  const anon = { ca: dms.server.caCertPem };
  const id = dms.server.tlsIdentity;
  return {
    proxy,
    url,
    anon,
    dms: { ca: id.caPem, cert: id.certPem, key: id.keyPem },
    query: (body, headers = { ...INGRESS, 'x-forwarded-role': 'guest', 'x-forwarded-email': 'g@example.com' }) => requestJson('POST', `${url}/v1/query`, anon, body, { headers }),
    close: () => proxy.close(),
  };
}

/** A Proxy run as a process (`hd run pipelines/proxy.yaml`) and registered with a test DMS. */
export interface ProxyProcess {
  readonly proc: HdProcess;
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** The DMS's root CA written to a file (PLATFORM_CA_CERT_PEM of the process). */
  readonly caFile: string;
}

/**
 * Declares cluster c1 (primary) with `cluster`'s SCC and `schemaJson`'s dataset in `dms`, then
 * starts a Proxy process registered with a bootstrap token; resolves once it listens. `dir` holds
 * the CA file. The caller stops `proc`.
 */
export async function startProxyProcess(dms: TestDms, cluster: Cluster, schemaJson: string, dir: string, name: string, env: Record<string, string> = {}): Promise<ProxyProcess> {
  await dms.call('PUT', '/v1/clusters/c1', dms.admin, { primary: true });
  await dms.call('PUT', `/v1/nodes/scc-${name}`, dms.admin, { role: 'scc', cluster: 'c1', addresses: { production: { host: cluster.host, port: cluster.scc.productionPort }, grpc: { host: cluster.host, port: cluster.scc.queryGrpcPort } } });
  const declared = await dms.call('PUT', `/v1/datasets/${(JSON.parse(schemaJson) as { id: string }).id}`, dms.admin, { schema: JSON.parse(schemaJson) });
  if (declared.status !== 200) throw new Error(`the DMS refused the dataset: ${JSON.stringify(declared.body)}`);
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, dms.server.caCertPem);
  const { proc, url } = await spawnProxyProcess(dms, caFile, name, 500, env);
  return { proc, url, caFile };
}

/**
 * Starts `hd run pipelines/proxy.yaml` as node `name`, registered with `dms` by a fresh bootstrap
 * token (the DMS's CA in `caFile`; the ingress secret {@link TEST_INGRESS_SECRET} written beside
 * it, `env` added); resolves once its observability port listens.
 */
export async function spawnProxyProcess(dms: TestDms, caFile: string, name: string, topologyRefreshMs = 500, env: Record<string, string> = {}): Promise<{ proc: HdProcess; url: string; obs: number }> {
  await dms.call('PUT', `/v1/nodes/${name}`, dms.admin, { role: 'proxy', addresses: { control: { host: '127.0.0.1', port: 1 } } });
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name })).body as { token: string }).token;
  const [port, obs] = [await freePort(), await freePort()];
  const secretFile = path.join(path.dirname(caFile), `${name}.ingress-secret`);
  writeFileSync(secretFile, `${TEST_INGRESS_SECRET}\n`, { mode: 0o600 });
  const proc = startHd(['run', 'pipelines/proxy.yaml', '--quiet'], {
    NODE_NAME: name,
    COMMAND_INTERFACE: '127.0.0.1',
    COMMAND_PORT: String(port),
    OBSERVABILITY_INTERFACE: '127.0.0.1',
    OBSERVABILITY_PORT: String(obs),
    DMS_URL: dms.url,
    PLATFORM_CA_CERT_PEM: caFile,
    PLATFORM_BOOTSTRAP_TOKEN: token,
    PLATFORM_KEY_BITS: '2048',
    PROXY_TOPOLOGY_REFRESH_MS: String(topologyRefreshMs),
    PROXY_INGRESS_SECRET_FILE: secretFile,
    ...env,
  });
  await waitForPort('127.0.0.1', obs, proc, 60_000);
  return { proc, url: `https://127.0.0.1:${port}`, obs };
}
