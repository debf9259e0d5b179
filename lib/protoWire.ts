/**
 * The few pieces of the protobuf wire format (proto3) the query dispatch messages need: varint and
 * length-delimited fields written in field order, and a reader that skips fields it does not know
 * (so a newer peer's extra fields are ignored, as protobuf requires). No code generation and no
 * runtime schema loading: the messages are small and fixed (query/dispatch/queryDispatch.proto).
 */

/** Thrown for bytes that are not a valid protobuf message. */
export class ProtoWireError extends Error {
  /** @param message what is wrong */
  constructor(message: string) {
    super(`malformed protobuf message: ${message}`);
    this.name = 'ProtoWireError';
  }
}

/** Builds one message; fields are appended in the order written (proto3 omits defaults). */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  /** A uint32 / bool field as a varint; 0 is omitted (the proto3 default). */
  uint32(field: number, value: number): this {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new RangeError(`field ${field}: ${value} is not a uint32`);
    if (value !== 0) this.parts.push(varint((field << 3) | 0), varint(value));
    return this;
  }

  /** A bool field; false is omitted. */
  bool(field: number, value: boolean): this {
    return this.uint32(field, value ? 1 : 0);
  }

  /** A string field (UTF-8); the empty string is omitted. */
  string(field: number, value: string): this {
    if (value === '') return this;
    const bytes = Buffer.from(value, 'utf8');
    this.parts.push(varint((field << 3) | 2), varint(bytes.length), bytes);
    return this;
  }

  /** A repeated string field: one entry per value, empty strings kept (repeated fields keep them). */
  strings(field: number, values: readonly string[]): this {
    for (const v of values) {
      const bytes = Buffer.from(v, 'utf8');
      this.parts.push(varint((field << 3) | 2), varint(bytes.length), bytes);
    }
    return this;
  }

  /** The encoded message. */
  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function varint(v: number): Buffer {
  const out: number[] = [];
  let x = v >>> 0;
  while (x > 0x7f) {
    out.push((x & 0x7f) | 0x80);
    x >>>= 7;
  }
  out.push(x);
  return Buffer.from(out);
}

/** One decoded field: its number and its value (a uint32's low 32 bits, or bytes). */
export type ProtoField = { readonly field: number; readonly kind: 'varint'; readonly value: number } | { readonly field: number; readonly kind: 'bytes'; readonly value: Buffer };

/** Every field of `buf` in order; fixed-width fields (wire types 1 and 5) are skipped. */
export function readFields(buf: Uint8Array): ProtoField[] {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: ProtoField[] = [];
  let at = 0;
  const readVarint = (): number => {
    let low = 0;
    for (let i = 0; i < 10; i++) {
      if (at >= b.length) throw new ProtoWireError('truncated varint');
      const byte = b[at++];
      // Keep the low 32 bits, as protobuf does when it reads a uint32 from a wider varint.
      if (i < 5) low = (low | ((byte & 0x7f) << (7 * i))) >>> 0;
      if ((byte & 0x80) === 0) return low;
    }
    throw new ProtoWireError('varint longer than 10 bytes');
  };
  while (at < b.length) {
    const tag = readVarint();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 0) throw new ProtoWireError('field number 0');
    switch (wire) {
      case 0:
        out.push({ field, kind: 'varint', value: readVarint() });
        break;
      case 1:
      case 5: {
        const n = wire === 1 ? 8 : 4;
        if (at + n > b.length) throw new ProtoWireError(`truncated fixed${n * 8} field ${field}`);
        at += n;
        break;
      }
      case 2: {
        const len = readVarint();
        if (at + len > b.length) throw new ProtoWireError(`field ${field} says ${len} bytes, ${b.length - at} remain`);
        out.push({ field, kind: 'bytes', value: b.subarray(at, at + len) });
        at += len;
        break;
      }
      default:
        throw new ProtoWireError(`wire type ${wire} of field ${field} is not supported`);
    }
  }
  return out;
}
