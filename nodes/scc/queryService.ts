/**
 * The SCC's gRPC server for `hd.query.v1.QueryDispatch` (docs/query.md, "Dispatch") on
 * QUERY_GRPC_PORT: Dispatch and CancelQuery handed to the {@link QueryDispatcher}, its refusals
 * answered with their gRPC status and message. Plain without a node identity (no DMS); with one,
 * mutual TLS (net/grpcTls.ts): a caller without a certificate of our CA, or with an expired or
 * revoked one, fails in the handshake (the caller sees UNAVAILABLE), and a verified caller whose
 * certificate role is not allowed gets PERMISSION_DENIED naming the setting that would allow it.
 * By default only the Proxy's role is allowed (DEFAULT_DISPATCH_ROLES): a query that reaches the
 * SCC past the Proxy is not rewritten by the policy, so hd_sql in direct mode and SDK clients
 * dispatch only where QUERY_GRPC_ROLES names their roles.
 */
import * as grpc from '@grpc/grpc-js';
import { MAX_DISPATCH_MESSAGE_BYTES, MAX_DISPATCH_REPLY_BYTES, queryDispatchService, type CancelReply, type CancelRequest, type DispatchReply, type DispatchRequest } from '../../query/dispatch/dispatchService';
import { QueryDispatchFailure, type QueryDispatcher } from './queryDispatcher';
import { hostPort } from '../../lib/reachability';
import { callPeer, IdentityServerCredentials, type CallAuthContext } from '../../net/grpcTls';
import type { NodeIdentity } from '../../net/nodeIdentity';
import { DEFAULT_DISPATCH_ROLES } from './settings';
import { contextFromMetadata, inSpan, SpanKind } from '../../lib/tracing/index';

/** Mutual TLS of the service: the node's identity and the certificate roles that may call. */
export interface QueryServiceTls {
  readonly node: NodeIdentity;
  /** Roles that may call (QUERY_GRPC_ROLES); default {@link DEFAULT_DISPATCH_ROLES}, the Proxy only. */
  readonly roles?: readonly string[];
}

/** Serves one dispatcher over gRPC. */
export class QueryService {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_DISPATCH_MESSAGE_BYTES, 'grpc.max_send_message_length': MAX_DISPATCH_REPLY_BYTES });
  private bound = false;
  private credentials: IdentityServerCredentials | undefined;

  /** @param dispatcher what the calls go to; @param tls mutual TLS (absent: plain, no DMS) */
  constructor(
    private readonly dispatcher: QueryDispatcher,
    private readonly tls?: QueryServiceTls,
  ) {
    this.server.addService(queryDispatchService, {
      dispatch: (call: grpc.ServerUnaryCall<DispatchRequest, DispatchReply>, cb: grpc.sendUnaryData<DispatchReply>) => {
        const refused = this.refusal(call, 'Dispatch');
        if (refused) return cb(refused);
        // The `scc.dispatch` span, under the caller's span named in the call's metadata (docs/observability.md, "Traces").
        inSpan('scc.dispatch', () => this.dispatcher.dispatch(call.request.queryJson), { parent: contextFromMetadata(call.metadata), kind: SpanKind.SERVER }).then(
          (reply) => cb(null, reply),
          (err: unknown) => cb(toStatus(err)),
        );
      },
      cancelQuery: (call: grpc.ServerUnaryCall<CancelRequest, CancelReply>, cb: grpc.sendUnaryData<CancelReply>) => {
        const refused = this.refusal(call, 'CancelQuery');
        if (refused) return cb(refused);
        try {
          cb(null, this.dispatcher.cancel(call.request.queryId, call.request.token));
        } catch (err) {
          cb(toStatus(err));
        }
      },
    });
  }

  /** With mutual TLS: why the call's peer may not call (its status), or undefined. */
  private refusal(call: { getAuthContext(): CallAuthContext; getPeer(): string }, method: string): Partial<grpc.StatusObject> | undefined {
    if (!this.tls) return undefined;
    const peer = callPeer(call);
    if (!peer) {
      // The handshake requires a verified certificate, so this is a listener set up without one.
      const why = `grpc port: ${method} from ${call.getPeer()} presented no certificate of DMS-CA`;
      this.tls.node.peerRefused(why);
      return { code: grpc.status.UNAUTHENTICATED, details: why };
    }
    const roles = this.tls.roles ?? DEFAULT_DISPATCH_ROLES;
    if (!roles.includes(peer.role)) {
      const why =
        `grpc port: ${method} from ${call.getPeer()} is ${peer.role} '${peer.name}'; only ${roles.join(', ')} certificates may query this SCC ` +
        `(queries past the Proxy skip its policy): send the query through the Proxy, or add '${peer.role}' to QUERY_GRPC_ROLES (query_roles) on the SCC`;
      this.tls.node.peerRefused(why);
      return { code: grpc.status.PERMISSION_DENIED, details: why };
    }
    this.tls.node.peerAccepted(peer, 'grpc');
    return undefined;
  }

  /** Binds `host:port` (0: a free port); resolves with the bound port. */
  listen(host: string, port: number): Promise<number> {
    if (this.tls) this.credentials = new IdentityServerCredentials(this.tls.node.identity);
    return new Promise((resolve, reject) => {
      this.server.bindAsync(hostPort(host, port), this.credentials ?? grpc.ServerCredentials.createInsecure(), (err, bound) => {
        if (err) return reject(new Error(`QUERY_GRPC_PORT: cannot listen on ${hostPort(host, port)}: ${err.message}`));
        this.bound = true;
        resolve(bound);
      });
    });
  }

  /** Stops: calls in flight get a moment to finish, then connections are closed. */
  close(): Promise<void> {
    this.credentials?.dispose();
    if (!this.bound) return Promise.resolve();
    this.bound = false;
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 1000);
      t.unref();
      this.server.tryShutdown(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

function toStatus(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof QueryDispatchFailure) return { code: err.code, details: err.message };
  return { code: grpc.status.INTERNAL, details: `internal error: ${err instanceof Error ? err.message : String(err)}` };
}
