/**
 * Arrow IPC ⇄ Flight: a Flight stream carries one IPC message per FlightData (data_header = the
 * flatbuffer Message, data_body = its body), so an encapsulated IPC stream from apache-arrow's
 * writer is split at message boundaries (schema first, then dictionaries and record batches in
 * the writer's order), and the FlightData a client puts are framed back into an IPC stream.
 */
import * as arrow from 'apache-arrow';

/** One IPC message: its flatbuffer metadata and its body. */
export interface IpcMessage {
  readonly header: Buffer;
  readonly body: Buffer;
}

/** Thrown for bytes that are not an Arrow IPC stream. */
export class IpcError extends Error {
  override readonly name = 'IpcError';
}

const CONTINUATION = 0xffffffff;

/**
 * The messages of an encapsulated IPC stream (with or without the 0xFFFFFFFF continuation marker),
 * up to the end-of-stream marker.
 */
export function splitIpcStream(stream: Uint8Array): IpcMessage[] {
  const b = Buffer.from(stream.buffer, stream.byteOffset, stream.byteLength);
  const out: IpcMessage[] = [];
  let at = 0;
  while (at + 4 <= b.length) {
    let len = b.readUInt32LE(at);
    at += 4;
    if (len === CONTINUATION) {
      if (at + 4 > b.length) throw new IpcError('IPC stream truncated after a continuation marker');
      len = b.readUInt32LE(at);
      at += 4;
    }
    if (len === 0) break; // end of stream
    if (at + len > b.length) throw new IpcError(`IPC message metadata says ${len} bytes, ${b.length - at} remain`);
    const header = b.subarray(at, at + len);
    at += len;
    const bodyLength = Number(arrow.Message.decode(header).bodyLength);
    if (at + bodyLength > b.length) throw new IpcError(`IPC message body says ${bodyLength} bytes, ${b.length - at} remain`);
    out.push({ header, body: b.subarray(at, at + bodyLength) });
    at += bodyLength;
  }
  return out;
}

/** A schema as Flight carries it (FlightInfo.schema, table_schema, dataset_schema): an IPC stream of the schema message. */
export function serializeSchema(schema: arrow.Schema): Buffer {
  return Buffer.from(arrow.tableToIPC(new arrow.Table(schema), 'stream'));
}

/**
 * The largest record batch body a FlightData should carry: gRPC clients refuse messages over their
 * receive limit (4 MiB by default in Go's and Java's), so bigger batches are sent in row slices.
 */
export const MAX_BATCH_BYTES = 2 * 1024 * 1024;

/** The bytes of a Data's buffers and its children's (dictionaries included). */
function dataBytes(d: arrow.Data): number {
  let n = (d.values?.byteLength ?? 0) + (d.valueOffsets?.byteLength ?? 0) + (d.nullBitmap?.byteLength ?? 0) + (d.typeIds?.byteLength ?? 0);
  for (const c of d.children) n += dataBytes(c);
  if (d.dictionary) for (const c of d.dictionary.data) n += dataBytes(c);
  return n;
}

/** `batch`, or row slices of it each about `maxBytes` or less. */
function sliced(batch: arrow.RecordBatch, maxBytes: number): arrow.RecordBatch[] {
  const bytes = dataBytes(batch.data);
  if (bytes <= maxBytes || batch.numRows <= 1) return [batch];
  const rows = Math.max(1, Math.floor(batch.numRows / Math.ceil(bytes / maxBytes)));
  const out: arrow.RecordBatch[] = [];
  for (let at = 0; at < batch.numRows; at += rows) out.push(batch.slice(at, Math.min(batch.numRows, at + rows)));
  return out;
}

/**
 * The IPC messages of a table, schema first (dictionaries and batches as apache-arrow writes them),
 * batches over `maxBytes` sent as row slices.
 */
export function tableMessages(table: arrow.Table, maxBytes = MAX_BATCH_BYTES): IpcMessage[] {
  const batches = table.batches.flatMap((b) => sliced(b, maxBytes));
  return splitIpcStream(arrow.tableToIPC(new arrow.Table(table.schema, batches), 'stream'));
}

/** Frames FlightData messages back into an IPC stream a reader takes (metadata padded to 8 bytes). */
export function joinIpcMessages(messages: readonly IpcMessage[]): Buffer {
  const parts: Buffer[] = [];
  for (const m of messages) {
    if (m.header.length === 0) continue; // app_metadata-only FlightData
    const pad = (8 - ((m.header.length + 8) % 8)) % 8;
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32LE(CONTINUATION, 0);
    prefix.writeUInt32LE(m.header.length + pad, 4);
    parts.push(prefix, m.header, Buffer.alloc(pad), m.body);
  }
  parts.push(Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]));
  return Buffer.concat(parts);
}
