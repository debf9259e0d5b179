/**
 * 256-bit integers in DuckDB: the decoder presents uint256 / int256 as decimal text (no Arrow type
 * holds 78 digits), and they load as DuckDB's BIGNUM, which stores any integer exactly and compares,
 * sorts, takes min / max and sums exactly (a VARCHAR column would compare as text: `'9' > '10'`).
 * BIGNUM's storage is a blob DuckDB compares byte by byte: a 3-byte header (bit 23 set for
 * non-negative values, the low bits the byte count, all inverted for a negative value), then the
 * magnitude big-endian in as few bytes as hold it (one zero byte for 0), inverted when negative.
 */
import type * as arrow from 'apache-arrow';
import type duckdb from '@duckdb/node-bindings';
import { BIGNUM, type DuckDBType } from '@duckdb/node-api';
import { boundsOf, writeStrings, writeValidity } from './duckdbVectorWrite';
import { LocalSqlError } from './localSqlError';

/** DuckDB's BIGNUM bytes of `v`. */
export function bignumBytes(v: bigint): Uint8Array {
  const negative = v < 0n;
  let mag = negative ? -v : v;
  const digits: number[] = [];
  do {
    digits.push(Number(mag & 0xffn));
    mag >>= 8n;
  } while (mag > 0n);
  const out = new Uint8Array(3 + digits.length);
  const header = negative ? ~(0x800000 | digits.length) : 0x800000 | digits.length;
  out[0] = (header >> 16) & 0xff;
  out[1] = (header >> 8) & 0xff;
  out[2] = header & 0xff;
  for (let i = 0; i < digits.length; i++) {
    const b = digits[digits.length - 1 - i] as number;
    out[3 + i] = negative ? ~b & 0xff : b;
  }
  return out;
}

const INTEGER = /^-?\d+$/;

/**
 * Loads a Utf8 column of decimal integers (the decoder's uint256 / int256 text) as BIGNUM.
 * @throws LocalSqlError `ERR_SQL_LOAD` for a value that is not a decimal integer, naming the column and row.
 */
export function bignumLoader(column: string): { readonly type: DuckDBType; write(vector: duckdb.Vector, data: arrow.Data, start: number, n: number): void } {
  return {
    type: BIGNUM,
    write(vector, data, start, n) {
      const [b, base] = boundsOf(data.valueOffsets as Int32Array | BigInt64Array, start, n);
      const text = data.values as Uint8Array;
      const encoded: Uint8Array[] = [];
      const ends = new Int32Array(n + 1);
      for (let i = 0; i < n; i++) {
        let bytes: Uint8Array = new Uint8Array(0);
        if (data.getValid(start + i)) {
          const s = Buffer.from(text.buffer, text.byteOffset + b[base + i]!, b[base + i + 1]! - b[base + i]!).toString('latin1');
          if (!INTEGER.test(s)) throw new LocalSqlError('ERR_SQL_LOAD', `column "${column}" row ${start + i}: ${JSON.stringify(s.slice(0, 90))} is not a decimal integer (a 256-bit integer loads as BIGNUM)`);
          bytes = bignumBytes(BigInt(s));
        }
        encoded.push(bytes);
        ends[i + 1] = ends[i]! + bytes.length;
      }
      const all = new Uint8Array(ends[n]!);
      encoded.forEach((x, i) => all.set(x, ends[i]!));
      writeStrings(vector, n, ends, 0, ends, 1, all);
      writeValidity(vector, data, start, n);
    },
  };
}

/** True for a field the decoder presents as 256-bit decimal text. */
export function isWideIntegerText(field: arrow.Field): boolean {
  const t = field.metadata.get('hd.type');
  return t === 'uint256' || t === 'int256';
}
