import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { lastValueFrom, take, toArray } from 'rxjs';
import { awaitEach } from '../../stream/awaitEach';
import type { ByteChunk } from '../../stream/chunk';
import { Flow } from '../../stream/flow';
import { StageCounters } from '../../stream/stageCounters';
import { fileSource } from '../../sources/fileSource';

const dir = mkdtempSync(path.join(tmpdir(), 'hd-fs-'));
const file = path.join(dir, 'data.bin');
const data = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 256));
writeFileSync(file, data);
const empty = path.join(dir, 'empty.bin');
writeFileSync(empty, '');

const fs = suite('fileSource');
fs('reads every byte in blocks with their offsets, for several block sizes', async () => {
  for (const blockSize of [7, 4096, 9999, 10_000, 1 << 20]) {
    const chunks = await lastValueFrom(fileSource({ path: file, blockSize }).pipe(toArray()));
    assert.ok(Buffer.concat(chunks.map((c) => c.buf)).equals(data), `blockSize ${blockSize}`);
    assert.is(chunks.length, Math.ceil(data.length / blockSize));
    let off = 0;
    for (const c of chunks) {
      assert.is(c.offset, off);
      assert.is(c.source, file);
      off += c.buf.length;
    }
  }
});
fs('empty file completes without emitting', async () => {
  assert.equal(await lastValueFrom(fileSource({ path: empty, blockSize: 4096 }).pipe(toArray())), []);
});
fs('missing file errors', async () => {
  try {
    await lastValueFrom(fileSource({ path: path.join(dir, 'nope'), blockSize: 4096 }));
    assert.unreachable('should fail');
  } catch (err) {
    assert.match(String(err), /ENOENT/);
  }
});
fs('rejects a block size over the chunk bound', () => {
  assert.throws(() => fileSource({ path: file, blockSize: 5 * 1024 * 1024 }), /blockSize/);
});
fs('early unsubscribe stops reading', async () => {
  const counters = new StageCounters('bytes');
  const got = await lastValueFrom(fileSource({ path: file, blockSize: 1000, counters }).pipe(take(2), toArray()));
  assert.is(got.length, 2);
  await new Promise((r) => setTimeout(r, 20));
  assert.ok(counters.received <= 3000, `read ${counters.received} bytes after unsubscribing at 2000`);
});
fs('pulls: reads ahead of a slow consumer by at most the pending limit', async () => {
  const flow = new Flow();
  const counters = new StageCounters('bytes');
  const readAhead: number[] = [];
  let written = 0;
  await lastValueFrom(
    fileSource({ path: file, blockSize: 1000, flow, counters, maxPending: 1 }).pipe(
      awaitEach(async (c: ByteChunk) => {
        readAhead.push(counters.received - written);
        await new Promise((r) => setTimeout(r, 2));
        written += c.buf.length;
        return [c];
      }, flow),
      toArray(),
    ),
  );
  assert.is(written, data.length);
  assert.ok(Math.max(...readAhead) <= 2000, `read ahead ${Math.max(...readAhead)} bytes`);
  assert.equal(counters.snapshot(), { unit: 'bytes', received: 10_000, sent: 10_000, dropped: 0, held: 0, errors: 0, controls: 0 });
});
fs.run();
