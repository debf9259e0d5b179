/**
 * The gRPC service `hd.query.v1.QueryDispatch` (query/dispatch/queryDispatch.proto, docs/query.md "Dispatch"):
 * its four messages with hand-written codecs, and the service definition @grpc/grpc-js serves and
 * calls. The codecs are checked against the .proto file by test/query/dispatch/dispatchService.test.ts, so a
 * client generated from the .proto in any language talks to it.
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { ProtoWireError, ProtoWriter, readFields, type ProtoField } from '../../lib/protoWire';

/** Dispatch's request: one HDQuery as JSON. */
export interface DispatchRequest {
  readonly queryJson: string;
}

/** Dispatch's answer. */
export interface DispatchReply {
  readonly queryId: number;
  /** Batches sent to Storage Nodes. */
  readonly batches: number;
  /** Names of the Storage Nodes the query went to. */
  readonly nodes: readonly string[];
  /** Batches no healthy replica could take. */
  readonly missingBatchIds: readonly string[];
  /**
   * Ours: the batches the query's `time_window` was resolved to (ascending), what the client waits
   * for; empty for a query that named its `batch_ids`. Absent when encoding: none.
   */
  readonly batchIds?: readonly string[];
}

/** CancelQuery's request: the query id and its token (32 hex digits). */
export interface CancelRequest {
  readonly queryId: number;
  readonly token: string;
}

/** CancelQuery's answer. */
export interface CancelReply {
  readonly cancelled: boolean;
  /** Storage Nodes sent a cancel frame. */
  readonly nodes: number;
}

const text = (f: ProtoField): string => {
  if (f.kind !== 'bytes') throw new ProtoWireError(`field ${f.field} should be a string`);
  return f.value.toString('utf8');
};
const num = (f: ProtoField): number => {
  if (f.kind !== 'varint') throw new ProtoWireError(`field ${f.field} should be a varint`);
  return f.value;
};

/** Encodes a {@link DispatchRequest}. */
export const encodeDispatchRequest = (m: DispatchRequest): Buffer => new ProtoWriter().string(1, m.queryJson).finish();

/** Decodes a {@link DispatchRequest} (unknown fields skipped). */
export function decodeDispatchRequest(b: Buffer): DispatchRequest {
  let queryJson = '';
  for (const f of readFields(b)) if (f.field === 1) queryJson = text(f);
  return { queryJson };
}

/** Encodes a {@link DispatchReply}. */
export const encodeDispatchReply = (m: DispatchReply): Buffer =>
  new ProtoWriter().uint32(1, m.queryId).uint32(2, m.batches).strings(3, m.nodes).strings(4, m.missingBatchIds).strings(5, m.batchIds ?? []).finish();

/** Decodes a {@link DispatchReply}. */
export function decodeDispatchReply(b: Buffer): DispatchReply {
  let queryId = 0;
  let batches = 0;
  const nodes: string[] = [];
  const missingBatchIds: string[] = [];
  const batchIds: string[] = [];
  for (const f of readFields(b)) {
    if (f.field === 1) queryId = num(f);
    else if (f.field === 2) batches = num(f);
    else if (f.field === 3) nodes.push(text(f));
    else if (f.field === 4) missingBatchIds.push(text(f));
    else if (f.field === 5) batchIds.push(text(f));
  }
  return { queryId, batches, nodes, missingBatchIds, batchIds };
}

/** Encodes a {@link CancelRequest}. */
export const encodeCancelRequest = (m: CancelRequest): Buffer => new ProtoWriter().uint32(1, m.queryId).string(2, m.token).finish();

/** Decodes a {@link CancelRequest}. */
export function decodeCancelRequest(b: Buffer): CancelRequest {
  let queryId = 0;
  let token = '';
  for (const f of readFields(b)) {
    if (f.field === 1) queryId = num(f);
    else if (f.field === 2) token = text(f);
  }
  return { queryId, token };
}

/** Encodes a {@link CancelReply}. */
export const encodeCancelReply = (m: CancelReply): Buffer => new ProtoWriter().bool(1, m.cancelled).uint32(2, m.nodes).finish();

/** Decodes a {@link CancelReply}. */
export function decodeCancelReply(b: Buffer): CancelReply {
  let cancelled = false;
  let nodes = 0;
  for (const f of readFields(b)) {
    if (f.field === 1) cancelled = num(f) !== 0;
    else if (f.field === 2) nodes = num(f);
  }
  return { cancelled, nodes };
}

/** The fully qualified service name. */
export const QUERY_DISPATCH_SERVICE = 'hd.query.v1.QueryDispatch';

/** The service's methods. */
export interface QueryDispatchMethods extends ServiceDefinition {
  readonly dispatch: MethodDefinition<DispatchRequest, DispatchReply>;
  readonly cancelQuery: MethodDefinition<CancelRequest, CancelReply>;
}

/** The service definition for `grpc.Server.addService` and `makeGenericClientConstructor`. */
export const queryDispatchService: QueryDispatchMethods = {
  dispatch: {
    path: `/${QUERY_DISPATCH_SERVICE}/Dispatch`,
    originalName: 'Dispatch',
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeDispatchRequest,
    requestDeserialize: decodeDispatchRequest,
    responseSerialize: encodeDispatchReply,
    responseDeserialize: decodeDispatchReply,
  },
  cancelQuery: {
    path: `/${QUERY_DISPATCH_SERVICE}/CancelQuery`,
    originalName: 'CancelQuery',
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeCancelRequest,
    requestDeserialize: decodeCancelRequest,
    responseSerialize: encodeCancelReply,
    responseDeserialize: decodeCancelReply,
  },
};

/** Default QUERY_GRPC_PORT. */
export const DEFAULT_QUERY_GRPC_PORT = 6990;
/** Largest Dispatch request the service takes: 16 MiB (100 000 batch ids fit). */
export const MAX_DISPATCH_MESSAGE_BYTES = 16 * 1024 * 1024 + 64 * 1024;
/** Largest DispatchReply: a resolved window's 100 000 ids and as many missing ones (131 bytes each on the wire). */
export const MAX_DISPATCH_REPLY_BYTES = 32 * 1024 * 1024;
