/**
 * A real OTLP/gRPC metrics receiver for tests: serves the collector's
 * `opentelemetry.proto.collector.metrics.v1.MetricsService/Export` on a local port and decodes, from
 * the official message layout, the metric names and resource attributes of every request.
 */
import { Server, ServerCredentials, type ServiceDefinition } from '@grpc/grpc-js';
import { readFields, type ProtoField } from '../../lib/protoWire';

/** One export request, decoded. */
export interface ReceivedExport {
  /** Resource attributes (string values) of each ResourceMetrics. */
  readonly resources: Record<string, string>[];
  /** Names of every metric in the request. */
  readonly names: string[];
}

const bytesOf = (fs: ProtoField[], n: number): Buffer[] => fs.filter((f) => f.field === n && f.kind === 'bytes').map((f) => f.value as Buffer);

/** Decodes an ExportMetricsServiceRequest. */
export function decodeExport(buf: Buffer): ReceivedExport {
  const resources: Record<string, string>[] = [];
  const names: string[] = [];
  for (const rm of bytesOf(readFields(buf), 1)) {
    const rmf = readFields(rm);
    const attrs: Record<string, string> = {};
    for (const res of bytesOf(rmf, 1))
      for (const kv of bytesOf(readFields(res), 1)) {
        const kvf = readFields(kv);
        const k = bytesOf(kvf, 1)[0]?.toString();
        const v = bytesOf(kvf, 2).map((a) => bytesOf(readFields(a), 1)[0]?.toString())[0];
        if (k !== undefined && v !== undefined) attrs[k] = v;
      }
    resources.push(attrs);
    for (const sm of bytesOf(rmf, 2)) for (const m of bytesOf(readFields(sm), 2)) names.push(bytesOf(readFields(m), 1)[0]?.toString() ?? '');
  }
  return { resources, names };
}

/** A running receiver. */
export interface OtlpMetricsReceiver {
  readonly port: number;
  readonly received: ReceivedExport[];
  /** Resolves with the first request `pred` accepts (rejects after `timeoutMs`). */
  waitFor(pred: (e: ReceivedExport) => boolean, timeoutMs?: number): Promise<ReceivedExport>;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 (a free port). */
export async function startOtlpMetricsReceiver(): Promise<OtlpMetricsReceiver> {
  const received: ReceivedExport[] = [];
  const waiters: (() => void)[] = [];
  const id = (b: Buffer): Buffer => b;
  const def: ServiceDefinition = {
    Export: { path: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export', requestStream: false, responseStream: false, requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id },
  };
  const server = new Server();
  server.addService(def, {
    Export: (call: { request: Buffer }, cb: (err: null, res: Buffer) => void) => {
      received.push(decodeExport(call.request));
      cb(null, Buffer.alloc(0));
      for (const w of waiters.splice(0)) w();
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const waitFor = async (pred: (e: ReceivedExport) => boolean, timeoutMs = 20_000): Promise<ReceivedExport> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = received.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no matching OTLP export in ${timeoutMs} ms; got ${JSON.stringify(received.map((r) => r.names))}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 250);
      });
    }
  };
  return { port, received, waitFor, close: () => new Promise<void>((r) => server.tryShutdown(() => r())) };
}
