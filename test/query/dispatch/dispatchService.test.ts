import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DispatchError, QueryDispatchClient } from '../../../query/dispatch/dispatchClient';
import {
  decodeCancelReply,
  decodeCancelRequest,
  decodeDispatchReply,
  decodeDispatchRequest,
  encodeCancelReply,
  encodeCancelRequest,
  encodeDispatchReply,
  encodeDispatchRequest,
  queryDispatchService,
} from '../../../query/dispatch/dispatchService';
import { readFields } from '../../../lib/protoWire';

const PROTO = path.resolve(__dirname, '../../../query/dispatch/queryDispatch.proto');
const def = protoLoader.loadSync(PROTO, { keepCase: false, longs: Number, defaults: true, arrays: true });
const fromProto = def['hd.query.v1.QueryDispatch'] as unknown as Record<string, grpc.MethodDefinition<object, object>>;

const codec = suite('QueryDispatch messages: hand-written codecs against queryDispatch.proto');
codec('each message encodes as protobufjs decodes it, and decodes what protobufjs encodes', () => {
  const replies = [
    { queryId: 4294967295, batches: 100000, nodes: ['sn1', 'sn2'], missingBatchIds: ['ab'.repeat(64)], batchIds: [] },
    { queryId: 0, batches: 0, nodes: [], missingBatchIds: [], batchIds: [] },
    { queryId: 300, batches: 1, nodes: ['ünï'], missingBatchIds: [''], batchIds: [] },
    // A resolved time_window (ours, field 5): the ids the client waits for.
    { queryId: 9, batches: 2, nodes: ['sn1'], missingBatchIds: [], batchIds: ['0'.repeat(127) + '1', 'cd'.repeat(64)] },
  ];
  for (const m of replies) {
    assert.equal(fromProto.Dispatch.responseDeserialize(encodeDispatchReply(m)), m);
    assert.equal(decodeDispatchReply(fromProto.Dispatch.responseSerialize(m)), m);
  }
  for (const m of [{ queryJson: '{"query_id":1}' }, { queryJson: '' }, { queryJson: 'x'.repeat(70000) }]) {
    assert.equal(fromProto.Dispatch.requestDeserialize(encodeDispatchRequest(m)), m);
    assert.equal(decodeDispatchRequest(fromProto.Dispatch.requestSerialize(m)), m);
  }
  for (const m of [{ queryId: 7, token: 'ab'.repeat(16) }, { queryId: 0, token: '' }, { queryId: 2 ** 31, token: 't' }]) {
    assert.equal(fromProto.CancelQuery.requestDeserialize(encodeCancelRequest(m)), m);
    assert.equal(decodeCancelRequest(fromProto.CancelQuery.requestSerialize(m)), m);
  }
  for (const m of [{ cancelled: true, nodes: 3 }, { cancelled: false, nodes: 0 }]) {
    assert.equal(fromProto.CancelQuery.responseDeserialize(encodeCancelReply(m)), m);
    assert.equal(decodeCancelReply(fromProto.CancelQuery.responseSerialize(m)), m);
  }
});
codec('unknown fields are skipped; malformed bytes are refused', () => {
  // field 9 varint, field 10 fixed64, field 11 fixed32, field 12 bytes, then query_id = 5.
  const extra = Buffer.from([0x48, 0x01, 0x51, 1, 2, 3, 4, 5, 6, 7, 8, 0x5d, 1, 2, 3, 4, 0x62, 0x01, 0x61, 0x08, 0x05]);
  assert.equal(decodeCancelRequest(extra), { queryId: 5, token: '' });
  assert.throws(() => readFields(Buffer.from([0x0a, 0x05, 0x61])), /malformed protobuf message: field 1 says 5 bytes, 1 remain/);
  assert.throws(() => readFields(Buffer.from([0x08])), /truncated varint/);
  assert.throws(() => readFields(Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), /longer than 10 bytes/);
  assert.throws(() => readFields(Buffer.from([0x0b])), /wire type 3/);
  assert.throws(() => readFields(Buffer.from([0x00, 0x01])), /field number 0/);
  assert.throws(() => decodeCancelRequest(Buffer.from([0x0a, 0x01, 0x61])), /field 1 should be a varint/);
  // A uint32 sent as a wider varint keeps its low 32 bits (protobuf's rule).
  assert.equal(decodeCancelRequest(Buffer.from([0x08, 0x81, 0x80, 0x80, 0x80, 0x10])), { queryId: 1, token: '' });
});

const rpc = suite('QueryDispatch over gRPC (grpc-js, real sockets)');
rpc('a client generated from the .proto calls our service; our client maps statuses to DispatchError', async () => {
  const server = new grpc.Server();
  server.addService(queryDispatchService, {
    dispatch: (call: grpc.ServerUnaryCall<{ queryJson: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      if (call.request.queryJson === 'bad') return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'query_id: required' });
      cb(null, { queryId: 9, batches: 2, nodes: ['sn1'], missingBatchIds: [] });
    },
    cancelQuery: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.NOT_FOUND, details: 'no query 3 here' }),
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const Generated = (grpc.loadPackageDefinition(def) as unknown as { hd: { query: { v1: { QueryDispatch: new (a: string, c: grpc.ChannelCredentials) => grpc.Client & Record<string, (req: object, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void> } } } }).hd.query.v1.QueryDispatch;
  const gen = new Generated(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const ours = new QueryDispatchClient(`127.0.0.1:${port}`);
  try {
    const reply = await new Promise((resolve, reject) => gen.Dispatch({ queryJson: 'ok' }, (e, r) => (e ? reject(e) : resolve(r))));
    // The generated client gives every field of the .proto, batch_ids (ours, for time windows) included.
    assert.equal(reply, { queryId: 9, batches: 2, nodes: ['sn1'], missingBatchIds: [], batchIds: [] });
    assert.equal(await ours.dispatch('ok'), { queryId: 9, batches: 2, nodes: ['sn1'], missingBatchIds: [], batchIds: [] });
    const bad = await ours.dispatch('bad').then(() => undefined, (e: unknown) => e);
    assert.instance(bad, DispatchError);
    assert.is((bad as DispatchError).code, grpc.status.INVALID_ARGUMENT);
    assert.is((bad as DispatchError).status, 'INVALID_ARGUMENT');
    assert.is((bad as DispatchError).details, 'query_id: required');
    const nf = await ours.cancelQuery(3, Buffer.alloc(16, 1)).then(() => undefined, (e: unknown) => e);
    assert.is((nf as DispatchError).code, grpc.status.NOT_FOUND);
  } finally {
    gen.close();
    ours.close();
    await new Promise<void>((r) => server.tryShutdown(() => r()));
  }
});

codec.run();
rpc.run();
