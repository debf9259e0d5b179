/**
 * PgTextRows (engine-rs/pgTextRows.ts): DataRow messages from column buffers, and the refusals of
 * descriptors whose buffers cannot hold the rows asked for (an error with a code, never a crash).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PgTextRows } from '../../engine-rs/index';
import { backend } from '../../sql/pgwire/backend';

const rows = suite('engine-rs PgTextRows');

const dataRow = (values: (string | null)[]): Buffer => backend.dataRow(values.map((v) => (v === null ? null : Buffer.from(v, 'utf8'))));

rows('every kind of column, a row range and NULLs from the validity bits', () => {
  const r = new PgTextRows([
    { cells: { kind: 'int', values: new BigUint64Array([1n, 2n ** 64n - 1n, 3n]) } },
    { cells: { kind: 'int', values: new Int16Array([-1, 2, -3]) }, validity: { bits: new Uint8Array([0b101]), offset: 0 } },
    { cells: { kind: 'float', values: new Float64Array([0.5, 1e21, NaN]) } },
    { cells: { kind: 'bool', bits: new Uint8Array([0b1010]), offset: 1 } },
    { cells: { kind: 'text', offsets: new Int32Array([0, 2, 2, 5]), bytes: Buffer.from('hiabc') } },
    { cells: { kind: 'labels', codes: new Uint8Array([1, 0, 9]), labels: [Buffer.from('tcp'), Buffer.from('udp')] } },
  ]);
  assert.ok(r.dataRows(0, 3).equals(Buffer.concat([
    dataRow(['1', '-1', '0.5', 't', 'hi', 'udp']),
    dataRow(['18446744073709551615', null, '1e+21', 'f', '', 'tcp']),
    dataRow(['3', '-3', 'NaN', 't', 'abc', null]),
  ])));
  assert.ok(r.dataRows(1, 2).equals(dataRow(['18446744073709551615', null, '1e+21', 'f', '', 'tcp'])));
  assert.is(r.dataRows(2, 2).length, 0);
});

rows('buffers shorter than the rows asked for are refused with HD_PG_TEXT_ROWS', () => {
  const refused = (r: PgTextRows, to: number, pattern: RegExp): void => {
    try {
      r.dataRows(0, to);
      assert.unreachable('should have thrown');
    } catch (e) {
      assert.is((e as { code?: string }).code, 'HD_PG_TEXT_ROWS');
      assert.match((e as Error).message, pattern);
    }
  };
  refused(new PgTextRows([{ cells: { kind: 'int', values: new Int32Array(2) } }]), 3, /column 0: values shorter/);
  refused(new PgTextRows([{ cells: { kind: 'bool', bits: new Uint8Array(1), offset: 4 } }]), 5, /boolean bits shorter/);
  refused(new PgTextRows([{ cells: { kind: 'text', offsets: new Int32Array([0, 9]), bytes: Buffer.from('abc') } }]), 1, /outside the text bytes/);
  refused(new PgTextRows([{ cells: { kind: 'text', offsets: new Int32Array([0, 2, 1]), bytes: Buffer.from('abc') } }]), 2, /row 1 outside/);
  refused(new PgTextRows([{ cells: { kind: 'int', values: new Int8Array(8) }, validity: { bits: new Uint8Array(1), offset: 4 } }]), 6, /validity bitmap shorter/);
  assert.throws(() => new PgTextRows([]).dataRows(2, 1), /not a range of rows/);
});

rows.run();
