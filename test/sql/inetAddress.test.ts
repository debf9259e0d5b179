/**
 * Address literals and keys against the decoder: the text sql/inetAddress.ts gives an integer is the
 * text the decoder presents for it, every literal form parses to the integer the engine's encoder
 * stores, and the DuckDB key macros (sql/addressFunctions.ts) read the decoder's text back into the
 * same integer.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { RecordCodec } from '../../engine-rs/codec';
import { decodeRecordsSync } from '../../engine-rs/decode';
import { Schema } from '../../engine-rs/schema';
import { mulberry32 } from '../../lib/mulberry32';
import { LocalSql } from '../../local/localSql';
import { ensureAddressFunctions } from '../../sql/addressFunctions';
import { addressLiteral, ipv4Text, ipv4Value, ipv6Text, ipv6Value } from '../../sql/inetAddress';

const schema = Schema.parse(JSON.stringify({ id: 'ips', record_size: 20, time_field: 't', time_index_interval: 60, fields: [{ name: 't', offset: 0, size: 4, type: 'timestamp' }, { name: 'a', offset: 4, size: 16, type: 'ipv6' }] }));
const schema4 = Schema.parse(JSON.stringify({ id: 'ips4', record_size: 8, time_field: 't', time_index_interval: 60, fields: [{ name: 't', offset: 0, size: 4, type: 'timestamp' }, { name: 'a', offset: 4, size: 4, type: 'ipv4' }] }));

/** Special and random ipv6 integers: zero runs of every length and place, mapped addresses, extremes. */
function ipv6Samples(seed: number, n: number): bigint[] {
  const rnd = mulberry32(seed);
  const group = (): bigint => (rnd() < 0.5 ? 0n : BigInt(Math.floor(rnd() * 65536)));
  const out = [0n, 1n, (1n << 128n) - 1n, 0xffffn << 32n, (0xffffn << 32n) | 0x0a000001n, 0xffffn, 1n << 112n, (1n << 112n) | 1n, 0x20010db8n << 96n, 0x102_0304n];
  for (let i = 0; i < n; i++) {
    let v = 0n;
    for (let g = 0; g < 8; g++) v = (v << 16n) | group();
    out.push(rnd() < 0.1 ? (0xffffn << 32n) | BigInt(Math.floor(rnd() * 2 ** 32)) : v);
  }
  return out;
}

/** Decoded text of each ipv6 integer (one record each). */
function decodedIpv6(values: readonly bigint[]): string[] {
  const buf = Buffer.alloc(20 * values.length);
  values.forEach((v, i) => {
    for (let b = 0; b < 16; b++) buf[i * 20 + 4 + b] = Number((v >> BigInt(8 * (15 - b))) & 0xffn);
  });
  const col = decodeRecordsSync(schema, buf).getChild('a')!;
  return values.map((_, i) => String(col.get(i)));
}

const literals = suite('inet literals');

literals('ipv6Text is the decoder\'s text for every integer, and ipv6Value reads it back', () => {
  const values = ipv6Samples(11, 3000);
  const texts = decodedIpv6(values);
  values.forEach((v, i) => {
    assert.is(ipv6Text(v), texts[i], `text of ${v.toString(16)}`);
    assert.is(ipv6Value(texts[i]!), v, `value of ${texts[i]}`);
  });
});

literals('ipv4Text / ipv4Value against the decoder, either byte order', () => {
  const codec = new RecordCodec();
  codec.loadDatasetSchema(schema4);
  const rnd = mulberry32(5);
  const values = [0, 1, 2 ** 32 - 1, 0x0a000009, 0x0a00000a, ...Array.from({ length: 500 }, () => Math.floor(rnd() * 2 ** 32))];
  const buf = Buffer.concat(values.map((v) => Buffer.from(codec.convertRecordToBinary({ t: '0', a: String(v) }))));
  const col = decodeRecordsSync(schema4, buf).getChild('a')!;
  values.forEach((v, i) => {
    assert.is(ipv4Text(v), String(col.get(i)));
    assert.is(ipv4Value(String(col.get(i))), v);
  });
});

literals('every RFC 4291 form parses to the integer the encoder stores; others are refused', () => {
  const codec = new RecordCodec();
  codec.loadDatasetSchema(schema);
  const forms = ['2001:DB8::1', '2001:0db8:0000:0000:0000:0000:0000:0001', '::1.2.3.4', '0:0:0:0:0:ffff:1.2.3.4', '::FFFF:10.0.0.1', '1::', '::', 'fe80::1:2', '1:2:3:4:5:6:7::', '::2:3:4:5:6:7:8', '1:2:3:4:5:6:1.2.3.4'];
  for (const f of forms) {
    const stored = Buffer.from(codec.convertRecordToBinary({ t: '0', a: f })).subarray(4, 20);
    assert.is(ipv6Value(f), BigInt(`0x${stored.toString('hex')}`), f);
    assert.is(addressLiteral('ipv6', f)?.text, decodedIpv6([ipv6Value(f)!])[0], `canonical text of ${f}`);
  }
  for (const bad of ['1::2::3', 'fe80::1%eth0', '::/0', '12345::', '1:2:3:4:5:6:7:8:9', ':1::', 'g::', '1:2:3:4:5:6:7', '', '::1.2.3', '::256.1.1.1', '1.2.3.4', ':::']) assert.is(ipv6Value(bad), undefined, bad);
  for (const bad of ['01.2.3.4', '256.0.0.1', '1.2.3', '1.2.3.4.5', '-1.2.3.4', ' 1.2.3.4', '1.2.3.4 ', '', '::1', '167772161', '1..2.3']) assert.is(ipv4Value(bad), undefined, bad);
  assert.is(addressLiteral('ipv4', '10.0.0.9')?.value, 167772169n);
});

literals('the DuckDB key macros read the decoder\'s text back into the integer', async () => {
  const sql = new LocalSql({ threads: 1 });
  const s = await sql.openSession();
  try {
    await ensureAddressFunctions(sql, s);
    const v6 = ipv6Samples(23, 2000);
    const rnd = mulberry32(9);
    const v4 = [0, 2 ** 32 - 1, 0x0a000009, ...Array.from({ length: 2000 }, () => Math.floor(rnd() * 2 ** 32))];
    await s.register('t6', new arrow.Table({ a: arrow.vectorFromArray([...decodedIpv6(v6), null], new arrow.Utf8()), want: arrow.vectorFromArray([...v6.map(String), null], new arrow.Utf8()) }));
    await s.register('t4', new arrow.Table({ a: arrow.vectorFromArray([...v4.map(ipv4Text), null], new arrow.Utf8()), want: arrow.vectorFromArray([...v4.map(String), null], new arrow.Utf8()) }));
    for (const [t, fn, type] of [['t6', 'hd_inet6_key', 'UHUGEINT'], ['t4', 'hd_inet4_key', 'UINTEGER']] as const) {
      const r = await s.query(`SELECT count(*) AS n, count(*) FILTER (WHERE ${fn}(a) IS DISTINCT FROM CAST(want AS ${type})) AS bad, any_value(typeof(${fn}(a))) AS type FROM ${t}`);
      assert.is(Number(r.getChild('n')!.get(0)), t === 't6' ? v6.length + 1 : v4.length + 1);
      assert.is(Number(r.getChild('bad')!.get(0)), 0, `${fn} disagrees with the integers`);
      assert.is(r.getChild('type')!.get(0), type);
    }
  } finally {
    await s.close();
    await sql.close();
  }
});

literals('a failed install of the macros is tried again on the next session', async () => {
  const sql = new LocalSql({ threads: 1 });
  const closed = await sql.openSession();
  await closed.close();
  try {
    await ensureAddressFunctions(sql, closed).then(() => assert.unreachable('a closed session cannot install'), (err: unknown) => assert.match(String(err), /closed/));
    const s = await sql.openSession();
    await ensureAddressFunctions(sql, s);
    assert.is(String((await s.query(`SELECT hd_inet4_key('10.0.0.9') AS k`)).getChild('k')?.get(0)), '167772169');
    await s.close();
  } finally {
    await sql.close();
  }
});

literals.run();
