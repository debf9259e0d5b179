/**
 * The benchmarks' network-flow dataset: a 150-byte record with every presentation family the SQL
 * doors see most, and deterministic records of it (shared by decode.bench.ts and
 * encodeArrow.bench.ts, so both measure the same bytes).
 */
import type { JsSchema } from './decodeJs';

/** A network flow: 150 bytes, every presentation family the SQL doors see most. */
export const FLOW: JsSchema & Record<string, unknown> = {
  id: 'netflow',
  name: 'Network flows',
  record_size: 150,
  byte_order: 'little',
  time_field: 'ts',
  time_index_interval: 60,
  enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17, gre: 47 }, default_label: 'other' } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'src', offset: 9, size: 4, type: 'ipv4' },
    { name: 'dst', offset: 13, size: 4, type: 'ipv4' },
    { name: 'src6', offset: 17, size: 16, type: 'ipv6' },
    { name: 'sport', offset: 33, size: 2, type: 'uint16' },
    { name: 'dport', offset: 35, size: 2, type: 'uint16' },
    { name: 'bytes', offset: 37, size: 8, type: 'uint64' },
    { name: 'packets', offset: 45, size: 4, type: 'uint32' },
    { name: 'dt', offset: 49, size: 4, type: 'uint32', time_reference: { field: 'ts', unit: 'ms' } },
    { name: 'amount', offset: 53, size: 8, type: 'numeric', precision: 18, scale: 4 },
    { name: 'ttl', offset: 61, size: 1, type: 'uint8' },
    { name: 'rtt', offset: 62, size: 4, type: 'float' },
    { name: 'score', offset: 66, size: 8, type: 'double' },
    { name: 'ok', offset: 74, size: 1, type: 'boolean' },
    { name: 'host', offset: 75, size: 32, type: 'string' },
    { name: 'ports', offset: 107, size: 8, type: 'bytes', array: { element: 'uint16', count: 4 } },
    { name: 'tags', offset: 115, size: 8, type: 'bytes', array: { element: 'uint8', count: 8, enum: 'proto' } },
    { name: 'asn', offset: 123, size: 4, type: 'int32' },
    { name: 'vlan', offset: 127, size: 2, type: 'int16' },
    { name: 'flow_id', offset: 129, size: 8, type: 'int64' },
    { name: 'country', offset: 137, size: 13, type: 'string' },
  ],
};

/** Deterministic flows (xorshift32), so every run and both decoders see the same bytes. */
export function generate(n: number): Buffer {
  const b = Buffer.alloc(n * 150);
  let x = 0x9e3779b9;
  const rnd = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  const protos = [1, 6, 6, 6, 17, 17, 47, 99];
  const hosts = ['api.example.com', 'cdn.example.net', 'db-7.internal', 'mail.example.org', 'x.example'];
  for (let i = 0; i < n; i++) {
    const o = i * 150;
    b.writeBigInt64LE(BigInt(1_700_000_000 + (i >> 10)), o);
    b[o + 8] = protos[rnd() & 7]!;
    b.writeUInt32LE(rnd(), o + 9);
    b.writeUInt32LE(rnd(), o + 13);
    if (i & 1) b.writeUInt32BE(0x20010db8, o + 17);
    else b.writeUInt16BE(0xffff, o + 27);
    b.writeUInt32BE(rnd(), o + 29);
    b.writeUInt16LE(rnd() & 0xffff, o + 33);
    b.writeUInt16LE([80, 443, 53, 22][rnd() & 3]!, o + 35);
    b.writeBigUInt64LE(BigInt(rnd()) * 1000n, o + 37);
    b.writeUInt32LE(rnd() & 0xffff, o + 45);
    b.writeUInt32LE(rnd() % 60_000, o + 49);
    b.writeBigInt64LE(BigInt((rnd() | 0) * 10), o + 53);
    b[o + 61] = rnd() & 255;
    b.writeFloatLE((rnd() & 0xffff) / 100, o + 62);
    b.writeDoubleLE(rnd() / 7, o + 66);
    b[o + 74] = rnd() & 1;
    b.write(hosts[rnd() % hosts.length]!, o + 75, 'latin1');
    for (let k = 0; k < 4; k++) b.writeUInt16LE(rnd() & 0xffff, o + 107 + 2 * k);
    for (let k = 0; k < 8; k++) b[o + 115 + k] = protos[rnd() & 7]!;
    b.writeInt32LE(rnd() | 0, o + 123);
    b.writeInt16LE((rnd() & 0xfff) - 2048, o + 127);
    b.writeBigInt64LE(BigInt(i) * 7919n, o + 129);
    b.write(['DE', 'US', 'FR', 'JP', 'BR'][rnd() % 5]!, o + 137, 'latin1');
  }
  return b;
}
