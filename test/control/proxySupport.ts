/**
 * Helpers of the Proxy tests: a stand-in SCC serving the real gRPC QueryDispatch service (it keeps
 * the query JSON it was sent and answers as told), and a Proxy in this process registered with a
 * test DMS.
 */
import * as grpc from '@grpc/grpc-js';
import { ProxyServer } from '../../control/proxy/proxyServer';
import type { ProxySettings } from '../../control/proxy/settings';
import { requestJson, type ClientTls, type JsonAnswer } from '../../control/http/jsonClient';
import { queryDispatchService, type DispatchReply } from '../../query/dispatchService';
import type { TestDms } from './support';

/** A gRPC QueryDispatch server that records queries. */
export class StandInScc {
  /** Query JSON received, in order. */
  readonly queries: Record<string, unknown>[] = [];
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
      cancelQuery: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => cb(null, { cancelled: true, nodes: 1 }),
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
  query(body: unknown, headers?: Record<string, string>): Promise<JsonAnswer>;
  close(): Promise<void>;
}

/** Registers and starts a Proxy against `dms` (a bootstrap token is made for it). */
export async function startTestProxy(dms: TestDms, name = 'proxy-1', overrides: Partial<ProxySettings> = {}): Promise<TestProxy> {
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
    query: (body, headers = { 'x-forwarded-role': 'guest', 'x-forwarded-email': 'g@example.com' }) => requestJson('POST', `${url}/v1/query`, anon, body, { headers }),
    close: () => proxy.close(),
  };
}
