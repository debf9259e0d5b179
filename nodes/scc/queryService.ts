/**
 * The SCC's gRPC server for `hd.query.v1.QueryDispatch` (docs/query.md, "Dispatch") on
 * QUERY_GRPC_PORT: Dispatch and CancelQuery handed to the {@link QueryDispatcher}, its refusals
 * answered with their gRPC status and message. Insecure until the control plane issues certificates
 * (the same rule as the HDWP listeners).
 */
import * as grpc from '@grpc/grpc-js';
import { MAX_DISPATCH_MESSAGE_BYTES, queryDispatchService, type CancelReply, type CancelRequest, type DispatchReply, type DispatchRequest } from '../../query/dispatchService';
import { QueryDispatchFailure, type QueryDispatcher } from './queryDispatcher';
import { hostPort } from '../../lib/reachability';

/** Serves one dispatcher over gRPC. */
export class QueryService {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_DISPATCH_MESSAGE_BYTES, 'grpc.max_send_message_length': MAX_DISPATCH_MESSAGE_BYTES });
  private bound = false;

  /** @param dispatcher what the calls go to */
  constructor(private readonly dispatcher: QueryDispatcher) {
    this.server.addService(queryDispatchService, {
      dispatch: (call: grpc.ServerUnaryCall<DispatchRequest, DispatchReply>, cb: grpc.sendUnaryData<DispatchReply>) => {
        this.dispatcher.dispatch(call.request.queryJson).then(
          (reply) => cb(null, reply),
          (err: unknown) => cb(toStatus(err)),
        );
      },
      cancelQuery: (call: grpc.ServerUnaryCall<CancelRequest, CancelReply>, cb: grpc.sendUnaryData<CancelReply>) => {
        try {
          cb(null, this.dispatcher.cancel(call.request.queryId, call.request.token));
        } catch (err) {
          cb(toStatus(err));
        }
      },
    });
  }

  /** Binds `host:port` (0: a free port); resolves with the bound port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.bindAsync(hostPort(host, port), grpc.ServerCredentials.createInsecure(), (err, bound) => {
        if (err) return reject(new Error(`QUERY_GRPC_PORT: cannot listen on ${hostPort(host, port)}: ${err.message}`));
        this.bound = true;
        resolve(bound);
      });
    });
  }

  /** Stops: calls in flight get a moment to finish, then connections are closed. */
  close(): Promise<void> {
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
