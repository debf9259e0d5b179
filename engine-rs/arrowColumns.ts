/**
 * Native column buffers → apache-arrow Data, with no per-value loop: every buffer becomes a typed
 * array view and `makeData` wraps it. The Arrow types come from the native plan (the type mapping
 * lives in Rust only, `engine-rs/core/src/decode/plan.rs`).
 */
import * as arrow from 'apache-arrow';
import type { NativeColumn, PlanColumn, PlanType } from './arrowNative';

/** An Arrow field's type together with the dictionary vector of an enumerated column. */
export interface CompiledType {
  readonly type: arrow.DataType;
  /** The labels of a Dictionary column, built once per schema (so every batch shares them). */
  readonly dictionary?: arrow.Vector<arrow.Utf8>;
  /** A list's element. */
  readonly element?: CompiledType;
}

function intType(bitWidth: 8 | 16 | 32 | 64, signed: boolean): arrow.DataType {
  switch (bitWidth) {
    case 8:
      return signed ? new arrow.Int8() : new arrow.Uint8();
    case 16:
      return signed ? new arrow.Int16() : new arrow.Uint16();
    case 32:
      return signed ? new arrow.Int32() : new arrow.Uint32();
    case 64:
      return signed ? new arrow.Int64() : new arrow.Uint64();
  }
}

/** The Arrow type of a plan type (dictionaries get their label vector here, once). */
export function compileType(t: PlanType): CompiledType {
  switch (t.kind) {
    case 'int':
      return { type: intType(t.bitWidth, t.signed) };
    case 'float':
      return { type: t.bitWidth === 32 ? new arrow.Float32() : new arrow.Float64() };
    case 'bool':
      return { type: new arrow.Bool() };
    case 'decimal':
      return { type: new arrow.Decimal(t.scale, t.precision, t.bitWidth) };
    case 'utf8':
      return { type: new arrow.Utf8() };
    case 'binary':
      return { type: new arrow.Binary() };
    case 'fixedSizeBinary':
      return { type: new arrow.FixedSizeBinary(t.byteWidth) };
    case 'dictionary': {
      const dictionary = arrow.vectorFromArray([...t.labels], new arrow.Utf8());
      return { type: new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()), dictionary };
    }
    case 'list': {
      const element = compileType(t.element);
      return { type: new arrow.List(new arrow.Field('item', element.type, true)), element };
    }
  }
}

/** The Arrow field of a plan column, with its HD metadata. */
export function compileField(c: PlanColumn, type: CompiledType): arrow.Field {
  return new arrow.Field(c.name, type.type, true, new Map(Object.entries(c.metadata)));
}

function offsets(col: NativeColumn): Int32Array {
  if (!col.offsets) throw new Error('native decode returned a variable-length column without offsets');
  return new Int32Array(col.offsets);
}

/** Wraps one native column in Arrow Data of `t` (views over the native buffers, no copies). */
export function columnData(t: CompiledType, col: NativeColumn): arrow.Data {
  const base = {
    length: col.length,
    nullCount: col.nullCount,
    nullBitmap: col.validity ? new Uint8Array(col.validity) : undefined,
  };
  const type = t.type;
  if (arrow.DataType.isDictionary(type)) {
    return arrow.makeData({ ...base, type, data: new Int32Array(col.data), dictionary: t.dictionary });
  }
  if (arrow.DataType.isList(type)) {
    if (!col.child || !t.element) throw new Error('native decode returned a list without its element column');
    return arrow.makeData({ ...base, type, valueOffsets: offsets(col), child: columnData(t.element, col.child) });
  }
  if (arrow.DataType.isUtf8(type)) {
    return arrow.makeData({ ...base, type, valueOffsets: offsets(col), data: new Uint8Array(col.data) });
  }
  if (arrow.DataType.isBinary(type)) {
    return arrow.makeData({ ...base, type, valueOffsets: offsets(col), data: new Uint8Array(col.data) });
  }
  if (arrow.DataType.isInt(type)) {
    // The view's element type (Int16Array, BigInt64Array, ...) is the Arrow type's own.
    const View = type.ArrayType as new (b: ArrayBuffer) => arrow.Int['TArray'];
    return arrow.makeData({ ...base, type, data: new View(col.data) });
  }
  if (arrow.DataType.isFloat(type)) {
    const View = type.ArrayType as new (b: ArrayBuffer) => arrow.Float['TArray'];
    return arrow.makeData({ ...base, type, data: new View(col.data) });
  }
  if (arrow.DataType.isDecimal(type)) {
    return arrow.makeData({ ...base, type, data: new Uint32Array(col.data) });
  }
  if (arrow.DataType.isBool(type)) {
    return arrow.makeData({ ...base, type, data: new Uint8Array(col.data) });
  }
  if (arrow.DataType.isFixedSizeBinary(type)) {
    return arrow.makeData({ ...base, type, data: new Uint8Array(col.data) });
  }
  throw new Error(`no Arrow layout for decoded type ${String(type)}`);
}
