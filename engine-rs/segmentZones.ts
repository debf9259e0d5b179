/**
 * Zone fields and zone values of segments. Zone maps store *order keys* (docs/segment.md, "Zone
 * maps"); these helpers turn keys back into values of the field's kind.
 */

/** How a zone-mapped field compares. */
export type ZoneKind = 'unsigned' | 'signed' | 'float' | 'bytes';

/** One zone-mapped field of a record. */
export interface ZoneField {
  /** First byte in the record. */
  readonly offset: number;
  /** 1, 2, 4 or 8 for integers; 4 or 8 for floats; any for bytes (compared by the first 8). */
  readonly size: number;
  readonly kind: ZoneKind;
  /** Multi-byte numbers are big-endian (default little-endian). */
  readonly bigEndian?: boolean;
}

/** A zone value: bigint for integers, number for floats, the first 8 bytes for byte strings. */
export type ZoneValue = bigint | number | Buffer;

/** Min and max of one field over a block or a batch; `empty` when it saw no value (all NaN, or no records). */
export interface Zone {
  readonly min: ZoneValue;
  readonly max: ZoneValue;
  readonly empty: boolean;
}

const KIND_CODE: Record<ZoneKind, number> = { unsigned: 1, signed: 2, float: 3, bytes: 4 };
const CODE_KIND: readonly (ZoneKind | undefined)[] = [undefined, 'unsigned', 'signed', 'float', 'bytes'];
const SIGN = 1n << 63n;
const MASK = (1n << 64n) - 1n;

/** The 4-numbers-per-field form the bridge takes. */
export function encodeZoneFields(fields: readonly ZoneField[]): Uint32Array {
  const out = new Uint32Array(fields.length * 4);
  fields.forEach((f, i) => {
    const code = KIND_CODE[f.kind];
    if (code === undefined) throw new RangeError(`unknown zone kind ${String(f.kind)}`);
    out.set([f.offset, f.size, code, f.bigEndian ? 1 : 0], i * 4);
  });
  return out;
}

/** The fields of a segment header, from the bridge's 4-numbers-per-field form. */
export function decodeZoneFields(raw: Uint32Array): ZoneField[] {
  const out: ZoneField[] = [];
  for (let i = 0; i + 4 <= raw.length; i += 4) {
    const kind = CODE_KIND[raw[i + 2]];
    if (kind === undefined) throw new RangeError(`unknown zone kind code ${raw[i + 2]}`);
    out.push({ offset: raw[i], size: raw[i + 1], kind, bigEndian: raw[i + 3] === 1 });
  }
  return out;
}

/** The value an order key stands for. */
export function zoneKeyValue(kind: ZoneKind, key: bigint): ZoneValue {
  switch (kind) {
    case 'unsigned':
      return key;
    case 'signed':
      return BigInt.asIntN(64, key ^ SIGN);
    case 'float': {
      const bits = key & SIGN ? key & ~SIGN & MASK : ~key & MASK;
      const dv = new DataView(new ArrayBuffer(8));
      dv.setBigUint64(0, bits);
      return dv.getFloat64(0);
    }
    case 'bytes': {
      const b = Buffer.alloc(8);
      b.writeBigUInt64BE(key);
      return b;
    }
  }
}

/** A zone from its min and max keys. */
export function zoneOf(kind: ZoneKind, min: bigint, max: bigint): Zone {
  return { min: zoneKeyValue(kind, min), max: zoneKeyValue(kind, max), empty: min > max };
}
