/**
 * A real OTLP/gRPC trace receiver for tests: `opentelemetry.proto.collector.trace.v1.TraceService`
 * served with @grpc/grpc-js from the official OpenTelemetry protobuf definitions (copied from
 * open-telemetry/opentelemetry-proto into test/support/otlp/, Apache-2.0). Keeps every span it
 * receives with its resource's attributes.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** One received span, ids as lowercase hex. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Record<string, unknown>;
  /** The span's events, in order, with their attributes. */
  readonly events: readonly { readonly name: string; readonly attributes: Record<string, unknown> }[];
  /** The exporting process's resource attributes (service.name, service.instance.id, ...). */
  readonly resource: Record<string, unknown>;
  /** When the span started and ended, nanoseconds since the epoch. */
  readonly startTimeUnixNano: bigint;
  readonly endTimeUnixNano: bigint;
}

interface KeyValue {
  key: string;
  value?: { stringValue?: string; intValue?: string; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: KeyValue['value'][] } };
}

interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: { traceId: Buffer; spanId: Buffer; parentSpanId: Buffer; name: string; startTimeUnixNano?: string; endTimeUnixNano?: string; attributes?: KeyValue[]; events?: { name: string; attributes?: KeyValue[] }[] }[] }[] }[];
}

function valueOf(v: KeyValue['value']): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attrs(kvs: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/** A listening receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`, for OTEL_GRPC_URL. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Export calls received. */
  readonly calls: () => number;
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const def = protoLoader.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { includeDirs: [path.join(__dirname, 'otlp')], longs: String, enums: Number, defaults: false });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { opentelemetry: { proto: { collector: { trace: { v1: { TraceService: grpc.ServiceClientConstructor } } } } } };
  const spans: ReceivedSpan[] = [];
  let calls = 0;
  const server = new grpc.Server();
  server.addService(pkg.opentelemetry.proto.collector.trace.v1.TraceService.service, {
    export: (call: grpc.ServerUnaryCall<ExportRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      calls++;
      for (const rs of call.request.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ traceId: Buffer.from(s.traceId).toString('hex'), spanId: Buffer.from(s.spanId).toString('hex'), parentSpanId: s.parentSpanId ? Buffer.from(s.parentSpanId).toString('hex') : '', name: s.name, attributes: attrs(s.attributes), events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })), resource, startTimeUnixNano: BigInt(s.startTimeUnixNano ?? 0), endTimeUnixNano: BigInt(s.endTimeUnixNano ?? 0) });
          }
        }
      }
      cb(null, {});
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    calls: () => calls,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
