/**
 * The protobuf messages of Arrow Flight (sql/flight/Flight.proto) and the Flight SQL commands
 * (sql/flight/FlightSql.proto) the door speaks, with hand-written codecs over lib/protoWire's
 * reader: no code generation and no runtime .proto loading (protobufjs is only a dev dependency).
 * Decoders skip unknown fields, as protobuf requires, and throw ProtoWireError on bad bytes.
 */
import { ProtoWireError, readFields, type ProtoField } from '../../lib/protoWire';

/** Builds one message; fields appended in the order written; proto3 defaults omitted. */
export class FlightWriter {
  private readonly parts: Buffer[] = [];

  /** A varint field (uint32/uint64/int64/bool/enum, non-negative); 0 omitted. */
  varint(field: number, value: number | bigint): this {
    const v = BigInt(value);
    if (v < 0n) throw new RangeError(`field ${field}: ${v} is negative`);
    if (v !== 0n) this.parts.push(varint(BigInt(field << 3)), varint(v));
    return this;
  }

  /** A length-delimited field (bytes, string, nested message); empty omitted unless `always`. */
  bytes(field: number, value: Uint8Array | string, always = false): this {
    const b = typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    if (b.length > 0 || always) this.parts.push(varint(BigInt((field << 3) | 2)), varint(BigInt(b.length)), b);
    return this;
  }

  /** The encoded message. */
  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function varint(v: bigint): Buffer {
  const out: number[] = [];
  let x = v;
  while (x > 0x7fn) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return Buffer.from(out);
}

const bytesOf = (f: ProtoField, name: string): Buffer => {
  if (f.kind !== 'bytes') throw new ProtoWireError(`${name} (field ${f.field}) should be length-delimited`);
  return f.value;
};
const textOf = (f: ProtoField, name: string): string => bytesOf(f, name).toString('utf8');
const numOf = (f: ProtoField, name: string): number => {
  if (f.kind !== 'varint') throw new ProtoWireError(`${name} (field ${f.field}) should be a varint`);
  return f.value;
};

/** google.protobuf.Any: how Flight SQL packs its commands into descriptors, tickets and actions. */
export interface Any {
  readonly typeUrl: string;
  readonly value: Buffer;
}

/** The type URL prefix of the Flight SQL messages. */
export const SQL_TYPE_PREFIX = 'type.googleapis.com/arrow.flight.protocol.sql.';

/** Packs a Flight SQL message `name` (e.g. "TicketStatementQuery") in an Any. */
export const packAny = (name: string, value: Buffer): Buffer => new FlightWriter().bytes(1, SQL_TYPE_PREFIX + name).bytes(2, value).finish();

/** Unpacks an Any; @throws ProtoWireError when the bytes are not one or carry no type URL. */
export function unpackAny(b: Uint8Array): Any {
  let typeUrl = '';
  let value: Buffer = Buffer.alloc(0);
  for (const f of readFields(b)) {
    if (f.field === 1) typeUrl = textOf(f, 'Any.type_url');
    else if (f.field === 2) value = bytesOf(f, 'Any.value');
  }
  if (typeUrl === '') throw new ProtoWireError('not a google.protobuf.Any packing a Flight SQL command (no type_url)');
  return { typeUrl, value };
}

/** FlightDescriptor (type 2 = CMD carries `cmd`). */
export interface FlightDescriptor {
  readonly type: number;
  readonly cmd: Buffer;
  readonly path: readonly string[];
}

/** Decodes a FlightDescriptor. */
export function decodeDescriptor(b: Uint8Array): FlightDescriptor {
  let type = 0;
  let cmd: Buffer = Buffer.alloc(0);
  const path: string[] = [];
  for (const f of readFields(b)) {
    if (f.field === 1) type = numOf(f, 'FlightDescriptor.type');
    else if (f.field === 2) cmd = bytesOf(f, 'FlightDescriptor.cmd');
    else if (f.field === 3) path.push(textOf(f, 'FlightDescriptor.path'));
  }
  return { type, cmd, path };
}

/** Encodes a FlightDescriptor. */
export function encodeDescriptor(d: FlightDescriptor): Buffer {
  const w = new FlightWriter().varint(1, d.type).bytes(2, d.cmd);
  for (const p of d.path) w.bytes(3, p, true);
  return w.finish();
}

/** FlightInfo with one endpoint (no location: "fetch from this same service"). */
export interface FlightInfo {
  /** The encapsulated IPC schema message. */
  readonly schema: Uint8Array;
  readonly descriptor: FlightDescriptor;
  /** Ticket bytes of the one endpoint. */
  readonly ticket: Buffer;
  /** -1: unknown. */
  readonly totalRecords: number;
}

/** Encodes a FlightInfo (int64 -1 as its two's-complement varint, as protobuf does). */
export function encodeFlightInfo(i: FlightInfo): Buffer {
  const endpoint = new FlightWriter().bytes(1, new FlightWriter().bytes(1, i.ticket).finish(), true).finish();
  const minusOne = (1n << 64n) - 1n;
  return new FlightWriter()
    .bytes(1, i.schema)
    .bytes(2, encodeDescriptor(i.descriptor), true)
    .bytes(3, endpoint, true)
    .varint(4, i.totalRecords < 0 ? minusOne : i.totalRecords)
    .varint(5, minusOne)
    .finish();
}

/** Decodes a Ticket's bytes. */
export function decodeTicket(b: Uint8Array): Buffer {
  let t: Buffer = Buffer.alloc(0);
  for (const f of readFields(b)) if (f.field === 1) t = bytesOf(f, 'Ticket.ticket');
  return t;
}

/** One FlightData message: an IPC message's flatbuffer header and its body. */
export interface FlightData {
  readonly descriptor?: FlightDescriptor;
  readonly header: Buffer;
  readonly body: Buffer;
  readonly appMetadata?: Buffer;
}

/** Encodes a FlightData. */
export function encodeFlightData(d: FlightData): Buffer {
  const w = new FlightWriter();
  if (d.descriptor) w.bytes(1, encodeDescriptor(d.descriptor), true);
  w.bytes(2, d.header);
  if (d.appMetadata) w.bytes(3, d.appMetadata);
  return w.bytes(1000, d.body).finish();
}

/** Decodes a FlightData. */
export function decodeFlightData(b: Uint8Array): FlightData {
  let descriptor: FlightDescriptor | undefined;
  let header: Buffer = Buffer.alloc(0);
  let body: Buffer = Buffer.alloc(0);
  let appMetadata: Buffer | undefined;
  for (const f of readFields(b)) {
    if (f.field === 1) descriptor = decodeDescriptor(bytesOf(f, 'FlightData.flight_descriptor'));
    else if (f.field === 2) header = bytesOf(f, 'FlightData.data_header');
    else if (f.field === 3) appMetadata = bytesOf(f, 'FlightData.app_metadata');
    else if (f.field === 1000) body = bytesOf(f, 'FlightData.data_body');
  }
  return { ...(descriptor ? { descriptor } : {}), header, body, ...(appMetadata ? { appMetadata } : {}) };
}

/** Action {type, body}. */
export interface Action {
  readonly type: string;
  readonly body: Buffer;
}

/** Decodes an Action. */
export function decodeAction(b: Uint8Array): Action {
  let type = '';
  let body: Buffer = Buffer.alloc(0);
  for (const f of readFields(b)) {
    if (f.field === 1) type = textOf(f, 'Action.type');
    else if (f.field === 2) body = bytesOf(f, 'Action.body');
  }
  return { type, body };
}

/** HandshakeRequest / HandshakeResponse. */
export interface Handshake {
  readonly protocolVersion: number;
  readonly payload: Buffer;
}

/** Decodes a HandshakeRequest. */
export function decodeHandshake(b: Uint8Array): Handshake {
  let protocolVersion = 0;
  let payload: Buffer = Buffer.alloc(0);
  for (const f of readFields(b)) {
    if (f.field === 1) protocolVersion = numOf(f, 'HandshakeRequest.protocol_version');
    else if (f.field === 2) payload = bytesOf(f, 'HandshakeRequest.payload');
  }
  return { protocolVersion, payload };
}

/** Encodes a HandshakeResponse. */
export const encodeHandshake = (h: Handshake): Buffer => new FlightWriter().varint(1, h.protocolVersion).bytes(2, h.payload).finish();

/** Encodes a message whose only field 1 is bytes: Result, SchemaResult, PutResult, Ticket. */
export const encodeBytesMessage = (b: Uint8Array): Buffer => new FlightWriter().bytes(1, b).finish();

/** Encodes an ActionType. */
export const encodeActionType = (a: { type: string; description: string }): Buffer => new FlightWriter().bytes(1, a.type).bytes(2, a.description).finish();

/** A decoded Flight SQL message: every field by number (strings/bytes as Buffer, varints as numbers). */
export class SqlMessage {
  private constructor(private readonly fields: readonly ProtoField[]) {}

  /** Decodes the value of an Any. */
  static decode(b: Uint8Array): SqlMessage {
    return new SqlMessage(readFields(b));
  }

  /** The last value of a length-delimited field (undefined when absent). */
  bytes(field: number, name: string): Buffer | undefined {
    let out: Buffer | undefined;
    for (const f of this.fields) if (f.field === field) out = bytesOf(f, name);
    return out;
  }

  /** A string field (undefined when absent: `optional` fields tell absent from empty). */
  string(field: number, name: string): string | undefined {
    return this.bytes(field, name)?.toString('utf8');
  }

  /** Every value of a repeated string field. */
  strings(field: number, name: string): string[] {
    return this.fields.filter((f) => f.field === field).map((f) => textOf(f, name));
  }

  /** Every value of a repeated uint32 field, packed or not. */
  uint32s(field: number): number[] {
    const out: number[] = [];
    for (const f of this.fields) {
      if (f.field !== field) continue;
      if (f.kind === 'varint') out.push(f.value);
      else for (const p of readPacked(f.value)) out.push(p);
    }
    return out;
  }

  /** A bool field. */
  bool(field: number, name: string): boolean {
    let out = false;
    for (const f of this.fields) if (f.field === field) out = numOf(f, name) !== 0;
    return out;
  }
}

/** The varints of a packed repeated field (a run of varints, no tags). */
function readPacked(b: Buffer): number[] {
  const out: number[] = [];
  let at = 0;
  while (at < b.length) {
    let v = 0;
    let i = 0;
    for (;;) {
      if (at >= b.length || i >= 10) throw new ProtoWireError('truncated packed varint');
      const byte = b[at++] as number;
      if (i < 5) v = (v | ((byte & 0x7f) << (7 * i))) >>> 0;
      i++;
      if ((byte & 0x80) === 0) break;
    }
    out.push(v);
  }
  return out;
}
