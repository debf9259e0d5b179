/**
 * DataRowWriter writes the same bytes as the message-per-row encoder (backend.dataRow), for NULLs,
 * empty and multi-byte text and binary values, across chunk boundaries and buffer growth.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { backend } from '../../sql/pgwire/backend';
import { DataRowWriter } from '../../sql/pgwire/dataRows';

const rows = suite('pgwire DataRowWriter');

rows('byte for byte the message-per-row encoding, over many chunks and a value larger than a chunk', () => {
  const chunks: Buffer[] = [];
  const w = new DataRowWriter((c) => chunks.push(c));
  const want: Buffer[] = [];
  const big = 'é'.repeat(400_000); // 800 000 bytes: more than a chunk, the buffer grows
  for (let r = 0; r < 20_000; r++) {
    const values: (string | Buffer | null)[] = [String(r), r % 7 === 0 ? null : `ü-${r}`, '', Buffer.from([r & 0xff, 0, 255]), r === 12_345 ? big : 'x'];
    w.beginRow(values.length);
    for (const v of values) {
      if (v === null) w.writeNull();
      else if (typeof v === 'string') w.writeText(v);
      else w.writeBytes(v);
    }
    w.endRow();
    want.push(backend.dataRow(values.map((v) => (v === null ? null : typeof v === 'string' ? Buffer.from(v, 'utf8') : v))));
  }
  w.flush();
  assert.ok(chunks.length > 2, `handed on in chunks (${chunks.length})`);
  assert.ok(Buffer.concat(chunks).equals(Buffer.concat(want)));
  // Each chunk holds whole messages: a reader can take it on its own.
  for (const c of chunks) {
    let at = 0;
    while (at < c.length) {
      assert.is(c[at], 0x44);
      at += 1 + c.readInt32BE(at + 1);
    }
    assert.is(at, c.length);
  }
});

rows('nothing written, nothing handed on', () => {
  const chunks: Buffer[] = [];
  new DataRowWriter((c) => chunks.push(c)).flush();
  assert.equal(chunks, []);
});

rows.run();
