/**
 * The JavaScript peer of `encodeArrowBatch` for bench/encodeArrow.bench.ts: what a caller holding
 * an Arrow batch does without the columnar path. Row by row it turns each column's value into the
 * text `convertRecordToBinary` reads (decimals rescaled, lists joined, delta times made relative
 * to their source field) and encodes the row with one native call.
 */
import * as arrow from 'apache-arrow';
import { RecordCodec, type Schema } from '../index';

type ToText = (row: number) => string;

/** Unscaled decimal → text with `scale` digits after the point. */
function decimalText(unscaled: string, scale: number): string {
  if (scale === 0) return unscaled;
  const neg = unscaled.startsWith('-');
  const digits = (neg ? unscaled.slice(1) : unscaled).padStart(scale + 1, '0');
  return `${neg ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

function textOf(schema: Schema, batch: arrow.RecordBatch, name: string): ToText {
  const f = schema.fields.find((x) => x.name === name);
  const v = batch.getChild(name);
  if (!f || !v) throw new Error(`no column ${name}`);
  if (f.timeReference) {
    const src = batch.getChild(f.timeReference.field);
    if (!src) throw new Error(`no source column for ${name}`);
    const factor = { s: 1n, ms: 1000n, us: 1_000_000n, ns: 1_000_000_000n }[f.timeReference.unit];
    return (i) => String(BigInt(v.get(i) as bigint) - BigInt(src.get(i) as bigint) * factor);
  }
  if (arrow.DataType.isDecimal(v.type)) {
    const scale = v.type.scale;
    return (i) => decimalText(String(v.get(i)), scale);
  }
  if (arrow.DataType.isList(v.type)) return (i) => [...(v.get(i) as arrow.Vector)].join(',');
  return (i) => String(v.get(i));
}

/** Encodes `batch` row by row through `convertRecordToBinary`. */
export function encodeJs(schema: Schema, batch: arrow.RecordBatch): Buffer {
  const codec = new RecordCodec(schema);
  const rs = schema.recordSize;
  const columns = batch.schema.fields.map((f) => [f.name, textOf(schema, batch, f.name)] as const);
  const out = Buffer.allocUnsafe(batch.numRows * rs);
  for (let i = 0; i < batch.numRows; i++) {
    const map: Record<string, string> = {};
    for (const [name, text] of columns) map[name] = text(i);
    codec.convertRecordToBinary(map).copy(out, i * rs);
    if (codec.lastErrors.length) throw new Error(`row ${i}: ${JSON.stringify(codec.lastErrors)}`);
  }
  return out;
}
