/**
 * Security issue #14, item 6, in the parser: the PostgreSQL wire startup phase is capped at
 * MAX_STARTUP_BYTES (PostgreSQL's 10 000) whatever the later cap, a bad length is refused as soon as
 * its four bytes are read (before any body is buffered), the same bytes cut at every point parse the
 * same, and bytes dripped one at a time are not re-copied per chunk (no Buffer.concat of all that is
 * held on each chunk: linear, not quadratic). ByteQueue, the parser's buffer, is checked on its own.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ByteQueue } from '../../sql/pgwire/byteQueue';
import { CANCEL_REQUEST, FrontendParser, MAX_STARTUP_BYTES, PgProtocolError, PROTOCOL_3, SSL_REQUEST, type FrontendMessage } from '../../sql/pgwire/frontend';

function startup(params: Record<string, string>): Buffer {
  const body = Buffer.concat([Buffer.alloc(4), ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`)), Buffer.from([0])]);
  body.writeInt32BE(PROTOCOL_3, 0);
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  return Buffer.concat([len, body]);
}
function header(length: number, code = PROTOCOL_3): Buffer {
  const b = Buffer.alloc(8);
  b.writeInt32BE(length, 0);
  b.writeInt32BE(code, 4);
  return b;
}
const sslRequest = header(8, SSL_REQUEST);
const isProtocol = (re: RegExp) => (e: unknown): boolean => e instanceof PgProtocolError && re.test(e.message);

/** Pushes `bytes` in pieces cut at `cuts`; the messages, or the error thrown. */
function parse(bytes: Buffer, cuts: readonly number[], p = new FrontendParser()): FrontendMessage[] | Error {
  const out: FrontendMessage[] = [];
  let at = 0;
  try {
    for (const c of [...cuts, bytes.length]) {
      out.push(...p.push(bytes.subarray(at, c)));
      at = c;
    }
  } catch (err) {
    return err as Error;
  }
  return out;
}

const sp = suite('capped startup parse: split points and malformed lengths');

sp('SSLRequest then a startup near the cap: the same messages at every split point and in chunks of 1, 2, 5 and 13 bytes', () => {
  const big = startup({ user: 'u', database: 'd', application_name: 'a'.repeat(MAX_STARTUP_BYTES - 60) });
  assert.ok(big.length <= MAX_STARTUP_BYTES && big.length > MAX_STARTUP_BYTES - 40, `${big.length}`);
  const bytes = Buffer.concat([sslRequest, startup({ user: 'hd', database: 'hd' })]);
  for (const b of [bytes, Buffer.concat([sslRequest, big])]) {
    const whole = parse(b, []);
    assert.ok(Array.isArray(whole));
    assert.equal((whole as FrontendMessage[]).map((m) => m.kind), ['sslRequest', 'startup']);
    for (let cut = 1; cut < b.length; cut += b === bytes ? 1 : 97) assert.equal(parse(b, [cut]), whole, `split at ${cut}`);
    for (const size of [1, 2, 5, 13]) {
      if (b !== bytes && size < 5) continue;
      const cuts = [];
      for (let i = size; i < b.length; i += size) cuts.push(i);
      assert.equal(parse(b, cuts), whole, `chunks of ${size}`);
    }
  }
});

sp('a startup length that is negative, below 8 or above the cap is refused once its four bytes are in, at every split point', () => {
  for (const len of [-1, -2147483648, 0, 4, 7, MAX_STARTUP_BYTES + 1, 10 * 1024 * 1024, 2147483647]) {
    const bytes = Buffer.concat([header(len), Buffer.alloc(32, 0x61)]);
    const re = new RegExp(`startup packet length ${len} is out of range \\(8\\.\\.${MAX_STARTUP_BYTES}`);
    for (let cut = 1; cut <= bytes.length; cut++) {
      const p = new FrontendParser();
      if (cut < 4) assert.equal(p.push(bytes.subarray(0, cut)), [], `${len}: ${cut} bytes are not yet a length`);
      else {
        assert.throws(() => p.push(bytes.subarray(0, cut)), isProtocol(re), `${len} cut at ${cut}`);
        continue;
      }
      assert.throws(() => p.push(bytes.subarray(cut)), isProtocol(re), `${len} after ${cut}`);
    }
  }
  // The cap holds in the startup phase even when typed messages may be larger, and after an SSLRequest.
  const p = new FrontendParser();
  p.maxMessageBytes = 64 * 1024 * 1024;
  assert.throws(() => p.push(Buffer.concat([sslRequest, header(MAX_STARTUP_BYTES + 1)])), isProtocol(/out of range/));
  // Exactly the cap is a length the parser waits on.
  assert.equal(new FrontendParser().push(header(MAX_STARTUP_BYTES)), []);
});

sp('before the login (maxMessageBytes = MAX_STARTUP_BYTES) a password / SASL message past it is refused on its length', () => {
  const p = new FrontendParser();
  p.maxMessageBytes = MAX_STARTUP_BYTES;
  assert.equal(p.push(startup({ user: 'u' })).map((m) => m.kind), ['startup']);
  const h = Buffer.alloc(5);
  h.write('p', 0, 'latin1');
  h.writeInt32BE(MAX_STARTUP_BYTES + 1, 1);
  for (let cut = 1; cut < 5; cut++) {
    const q = new FrontendParser();
    q.maxMessageBytes = MAX_STARTUP_BYTES;
    q.push(startup({ user: 'u' }));
    assert.equal(q.push(h.subarray(0, cut)), []);
    assert.throws(() => q.push(h.subarray(cut)), isProtocol(/out of range \(4\.\.10000 before the login is done\)/));
  }
  // A CancelRequest (16 bytes) is a startup-phase packet too.
  const cancel = Buffer.concat([header(16, CANCEL_REQUEST), Buffer.from([0, 0, 0, 7, 0, 0, 0, 9])]);
  for (let cut = 1; cut < cancel.length; cut++) assert.equal(parse(cancel, [cut]), [{ kind: 'cancelRequest', processId: 7, secretKey: 9 }]);
});

sp('a startup dripped one byte at a time is not re-concatenated per byte (linear work)', () => {
  const bytes = startup({ user: 'u', application_name: 'b'.repeat(9000) });
  const realConcat = Buffer.concat;
  let concatenated = 0;
  Buffer.concat = ((list: readonly Uint8Array[], total?: number) => {
    const out = realConcat(list, total);
    concatenated += out.length;
    return out;
  }) as typeof Buffer.concat;
  let got: FrontendMessage[] = [];
  try {
    const p = new FrontendParser();
    for (let i = 0; i < bytes.length; i++) got = [...got, ...p.push(bytes.subarray(i, i + 1))];
  } finally {
    Buffer.concat = realConcat;
  }
  assert.equal(got.map((m) => m.kind), ['startup']);
  assert.ok(concatenated <= 2 * bytes.length, `${concatenated} bytes concatenated for a ${bytes.length}-byte message`);
});

const bq = suite('ByteQueue: chunks with a cursor');

bq('int32At, byteAt and take read across chunk borders the same as over one buffer, small and large chunks mixed', () => {
  const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7 + 3) & 0xff));
  for (const sizes of [[1], [3, 1500], [1100, 2], [4096], [17, 1]]) {
    const q = new ByteQueue();
    let at = 0;
    for (let k = 0; at < bytes.length; k++) {
      const n = sizes[k % sizes.length] as number;
      q.push(bytes.subarray(at, at + n));
      at += n;
    }
    assert.is(q.length, bytes.length);
    assert.is(q.int32At(1021), bytes.readInt32BE(1021));
    assert.is(q.byteAt(4999), bytes[4999]);
    let off = 0;
    for (const n of [0, 5, 1024, 1, 3000, 970]) {
      assert.equal(q.take(n), bytes.subarray(off, off + n), `take ${n} at ${off} (chunks ${sizes.join(',')})`);
      off += n;
    }
    assert.is(q.length, 0);
    assert.throws(() => q.byteAt(0), RangeError);
    // Reusable after being emptied.
    q.push(Buffer.from([1, 2, 3, 4]));
    assert.is(q.int32At(0), 0x01020304);
  }
});

sp.run();
bq.run();
