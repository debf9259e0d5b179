/**
 * A bare Flight client for the Flight SQL door's tests: @grpc/grpc-js with raw bytes, the request
 * and answer messages encoded / decoded by protobufjs from sql/flight/*.proto — an encoder
 * independent of the door's hand-written one, so malformed and well-formed requests alike can be
 * sent byte for byte.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as arrow from 'apache-arrow';
import protobuf from 'protobufjs';
import { flightServiceDefinition } from '../../sql/flight/flightServer';

const ROOT = path.resolve(__dirname, '../..');
const root = new protobuf.Root().loadSync([path.join(ROOT, 'sql/flight/Flight.proto'), path.join(ROOT, 'sql/flight/FlightSql.proto')], { keepCase: true });
protobuf.parse('syntax = "proto3"; package google.protobuf; message Any { string type_url = 1; bytes value = 2; }', root, { keepCase: true });

/** A message type by its full name (e.g. `arrow.flight.protocol.FlightInfo`). */
export const T = (name: string): protobuf.Type => root.lookupType(name);
/** Encodes `v` as the message `name`. */
export const enc = (name: string, v: Record<string, unknown>): Buffer => Buffer.from(T(name).encode(T(name).fromObject(v)).finish());
/** Decodes `b` as the message `name` (field names as in the .proto). */
export const dec = <R>(name: string, b: Uint8Array): R => T(name).toObject(T(name).decode(b), { defaults: false }) as R;
/** An Any of any type URL. */
export const anyOf = (typeUrl: string, value: Uint8Array): Buffer => enc('google.protobuf.Any', { type_url: typeUrl, value });
/** A Flight SQL message `name` packed in an Any. */
export const any = (name: string, v: Record<string, unknown>): Buffer => anyOf(`type.googleapis.com/arrow.flight.protocol.sql.${name}`, enc(`arrow.flight.protocol.sql.${name}`, v));
/** A CMD FlightDescriptor. */
export const cmdDescriptor = (cmd: Buffer): Buffer => enc('arrow.flight.protocol.FlightDescriptor', { type: 2, cmd });
/** A Ticket. */
export const ticket = (t: Uint8Array): Buffer => enc('arrow.flight.protocol.Ticket', { ticket: t });

/** A gRPC status as the client sees it. */
export type Status = { code: number; details: string; metadata?: grpc.Metadata };

const Client = grpc.makeGenericClientConstructor(flightServiceDefinition, 'FlightService');
type Raw = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
const client = (address: string): Raw => new Client(address, grpc.credentials.createInsecure()) as unknown as Raw;

/** A unary call. */
export function unary(address: string, name: 'GetFlightInfo' | 'GetSchema', req: Buffer): Promise<{ ok?: Buffer; err?: Status }> {
  const c = client(address);
  return new Promise((resolve) => {
    (c[name] as (r: Buffer, cb: (e: Status | null, v?: Buffer) => void) => void).call(c, req, (e, v) => {
      c.close();
      resolve(e ? { err: e } : { ok: v as Buffer });
    });
  });
}

/** Collects a stream's messages and its end or error. */
function collect(c: Raw, call: grpc.ClientReadableStream<Buffer> | grpc.ClientDuplexStream<Buffer, Buffer>): Promise<{ messages: Buffer[]; err?: Status }> {
  return new Promise((resolve) => {
    const messages: Buffer[] = [];
    call.on('data', (m: Buffer) => messages.push(m));
    call.on('error', (e: Status) => {
      c.close();
      resolve({ messages, err: e });
    });
    call.on('end', () => {
      c.close();
      resolve({ messages });
    });
  });
}

/** A server-streaming call; `onCall` sees the call (to cancel it). */
export function serverStream(address: string, name: 'DoGet' | 'DoAction' | 'ListActions' | 'ListFlights', req: Buffer, onCall?: (call: grpc.ClientReadableStream<Buffer>) => void): Promise<{ messages: Buffer[]; err?: Status }> {
  const c = client(address);
  const call = (c[name] as (r: Buffer) => grpc.ClientReadableStream<Buffer>).call(c, req);
  onCall?.(call);
  return collect(c, call);
}

/** A bidirectional call: writes `reqs`, half-closes, collects the answers. */
export function duplex(address: string, name: 'DoPut' | 'DoExchange' | 'Handshake', reqs: Buffer[]): Promise<{ messages: Buffer[]; err?: Status }> {
  const c = client(address);
  const call = (c[name] as () => grpc.ClientDuplexStream<Buffer, Buffer>).call(c);
  const done = collect(c, call);
  for (const r of reqs) call.write(r);
  call.end();
  return done;
}

/** The table a DoGet stream of FlightData carries (each one IPC message, framed back into a stream). */
export function tableOfFlightData(messages: readonly Buffer[]): arrow.Table {
  const parts: Buffer[] = [];
  for (const m of messages) {
    const f = dec<{ data_header?: Uint8Array; data_body?: Uint8Array }>('arrow.flight.protocol.FlightData', m);
    const h = Buffer.from(f.data_header ?? []);
    const pad = (8 - (h.length % 8)) % 8;
    const pre = Buffer.alloc(8);
    pre.writeUInt32LE(0xffffffff, 0);
    pre.writeUInt32LE(h.length + pad, 4);
    parts.push(pre, h, Buffer.alloc(pad), Buffer.from(f.data_body ?? []));
  }
  return arrow.tableFromIPC(Buffer.concat(parts));
}

/** GetFlightInfo for a command, then DoGet of its one endpoint's ticket. */
export async function fetchCommand(address: string, cmd: Buffer): Promise<{ table?: arrow.Table; schema?: arrow.Schema; err?: Status }> {
  const info = await unary(address, 'GetFlightInfo', cmdDescriptor(cmd));
  if (info.err) return { err: info.err };
  const fi = dec<{ schema: Uint8Array; endpoint: { ticket: { ticket: Uint8Array } }[] }>('arrow.flight.protocol.FlightInfo', info.ok as Buffer);
  const got = await serverStream(address, 'DoGet', ticket(fi.endpoint[0]?.ticket.ticket ?? new Uint8Array()));
  if (got.err) return { err: got.err };
  return { table: tableOfFlightData(got.messages), schema: arrow.tableFromIPC(fi.schema).schema };
}
