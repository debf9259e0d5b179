/**
 * Shapes the decode bridge (`engine-rs/node/src/decode.rs`) hands to TypeScript: the column plan
 * (JSON from `decodePlan`) and the column buffers (from `decodeRecords*`). They mirror the Rust
 * types `decode::ColumnPlan` / `decode::ArrowType` and `decode::Column`; keep them in step.
 */

/** The Arrow type of a decoded column, as the native plan names it. */
export type PlanType =
  | { readonly kind: 'int'; readonly bitWidth: 8 | 16 | 32 | 64; readonly signed: boolean }
  | { readonly kind: 'float'; readonly bitWidth: 32 | 64 }
  | { readonly kind: 'bool' }
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number; readonly bitWidth: 128 | 256 }
  | { readonly kind: 'utf8' }
  | { readonly kind: 'binary' }
  | { readonly kind: 'fixedSizeBinary'; readonly byteWidth: number }
  /** Dictionary<Int32, Utf8>: labels in code order, then the default label. */
  | { readonly kind: 'dictionary'; readonly labels: readonly string[] }
  | { readonly kind: 'list'; readonly element: PlanType };

/** One column of the plan: its name, Arrow type and field metadata (`hd.type`, ...). */
export interface PlanColumn {
  readonly name: string;
  readonly type: PlanType;
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * One decoded column in Arrow's memory layout. Every buffer is its own ArrayBuffer starting at
 * offset 0, so typed arrays over it are aligned.
 */
export interface NativeColumn {
  /** Values in the column (rows; elements for a list's child). */
  readonly length: number;
  readonly nullCount: number;
  /** Values: primitives, decimal words, bit-packed booleans, bytes, or Int32 dictionary indices. */
  readonly data: ArrayBuffer;
  /** Int32 offsets (`length + 1`) of Utf8, Binary and List columns. */
  readonly offsets?: ArrayBuffer;
  /** Validity bitmap (LSB first, 1 = valid); absent when no value is null. */
  readonly validity?: ArrayBuffer;
  /** A list's element column. */
  readonly child?: NativeColumn;
}

/** All columns of one decoded buffer of records, in schema field order. */
export interface NativeColumns {
  readonly rows: number;
  readonly columns: readonly NativeColumn[];
}
