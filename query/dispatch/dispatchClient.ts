/**
 * A small typed client of the SCC's gRPC query dispatch service (docs/query.md, "Dispatch"): Promise
 * methods for Dispatch and CancelQuery, failures as {@link DispatchError} carrying the gRPC status.
 * The SDK's query client builds on it.
 */
import * as grpc from '@grpc/grpc-js';
import { serializeHdQuery, type HdQuery } from '../hdQuery';
import { withTraceMetadata } from '../../lib/tracing/grpcTrace';
import { MAX_DISPATCH_MESSAGE_BYTES, MAX_DISPATCH_REPLY_BYTES, queryDispatchService, QUERY_DISPATCH_SERVICE, type CancelReply, type CancelRequest, type DispatchReply, type DispatchRequest } from './dispatchService';

/** A failed call: the gRPC status code (e.g. `grpc.status.FAILED_PRECONDITION`) and the server's message. */
export class DispatchError extends Error {
  /** The gRPC status code. */
  readonly code: grpc.status;
  /** The status name, e.g. `INVALID_ARGUMENT`. */
  readonly status: string;
  /** The server's message alone. */
  readonly details: string;

  /** @param code gRPC status; @param details the server's message; @param cause the grpc-js error */
  constructor(code: grpc.status, details: string, cause?: unknown) {
    const status = grpc.status[code] ?? String(code);
    super(`${status}: ${details}`, cause === undefined ? undefined : { cause });
    this.name = 'DispatchError';
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

/** Options of {@link QueryDispatchClient}. */
export interface QueryDispatchClientOptions {
  /** Channel credentials; default insecure (mTLS comes with the control plane). */
  readonly credentials?: grpc.ChannelCredentials;
  /** Deadline of each call; default 30 s. */
  readonly deadlineMs?: number;
  /**
   * More channel options, e.g. `grpc.ssl_target_name_override` with the SCC's node name, so the TLS
   * handshake names the node (SNI) instead of an address (which Node warns about).
   */
  readonly channelOptions?: grpc.ChannelOptions;
}

type Unary<Req, Res> = (req: Req, meta: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Res) => void) => grpc.ClientUnaryCall;
interface RawClient extends grpc.Client {
  dispatch: Unary<DispatchRequest, DispatchReply>;
  cancelQuery: Unary<CancelRequest, CancelReply>;
}
const RawClientCtor = grpc.makeGenericClientConstructor(queryDispatchService, QUERY_DISPATCH_SERVICE) as unknown as new (address: string, creds: grpc.ChannelCredentials, opts?: grpc.ClientOptions) => RawClient;

/**
 * Talks to one SCC's QueryDispatch service.
 *
 * @example
 * const scc = new QueryDispatchClient('10.0.0.5:6990');
 * const reply = await scc.dispatch(query);          // DispatchError FAILED_PRECONDITION if the return address is unreachable
 * await scc.cancelQuery(query.queryId, query.token);
 * scc.close();
 */
export class QueryDispatchClient {
  private readonly raw: RawClient;
  private readonly deadlineMs: number;

  /** @param address `host:port` of the SCC's QUERY_GRPC_PORT */
  constructor(
    readonly address: string,
    opts: QueryDispatchClientOptions = {},
  ) {
    this.deadlineMs = opts.deadlineMs ?? 30_000;
    this.raw = new RawClientCtor(address, opts.credentials ?? grpc.credentials.createInsecure(), {
      'grpc.max_send_message_length': MAX_DISPATCH_MESSAGE_BYTES,
      'grpc.max_receive_message_length': MAX_DISPATCH_REPLY_BYTES,
      ...opts.channelOptions,
    });
  }

  /** Sends a query (serialised with QoS clamping and checked first; JSON text is sent as it is). */
  dispatch(query: HdQuery | string): Promise<DispatchReply> {
    const queryJson = typeof query === 'string' ? query : serializeHdQuery(query, { maxBytes: 16 * 1024 * 1024 });
    // The caller's span travels in the call's metadata (W3C traceparent; docs/observability.md, "Traces").
    return this.call((cb) => this.raw.dispatch({ queryJson }, withTraceMetadata(new grpc.Metadata()), this.options(), cb));
  }

  /** Cancels a query on every Storage Node holding it; `token` as bytes or 32 hex digits. */
  cancelQuery(queryId: number, token: Uint8Array | string): Promise<CancelReply> {
    const hex = typeof token === 'string' ? token : Buffer.from(token.buffer, token.byteOffset, token.byteLength).toString('hex');
    return this.call((cb) => this.raw.cancelQuery({ queryId, token: hex }, new grpc.Metadata(), this.options(), cb));
  }

  /** Closes the channel. */
  close(): void {
    this.raw.close();
  }

  private options(): grpc.CallOptions {
    return { deadline: Date.now() + this.deadlineMs };
  }

  private call<T>(start: (cb: (err: grpc.ServiceError | null, res?: T) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      start((err, res) => {
        if (err) reject(new DispatchError(err.code, err.details || err.message, err));
        else resolve(res as T);
      });
    });
  }
}
