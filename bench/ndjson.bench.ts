/**
 * NDJSON → records: native parse+encode (RecordCodec.parseNdjsonSync, one call per 4 MiB block)
 * against a plain JavaScript `JSON.parse` + `DataView` encoder, on 1M generated network-flow
 * lines, one core, median of 5 runs each. Run: `npx tsx bench/ndjson.bench.ts [lines]`.
 */
import { RecordCodec, Schema } from '../index';

const LINES = Number(process.argv[2] ?? 1_000_000);
const RUNS = 5;
const BLOCK = 4 << 20;

const schema = Schema.parse({
  id: 'netflow', record_size: 64, time_field: 'ts',
  enums: { proto: { values: { icmp: 1, tcp: 6, udp: 17 } } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'proto', offset: 8, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'src', offset: 9, size: 4, type: 'ipv4' },
    { name: 'dst', offset: 13, size: 4, type: 'ipv4' },
    { name: 'sport', offset: 17, size: 2, type: 'uint16' },
    { name: 'dport', offset: 19, size: 2, type: 'uint16' },
    { name: 'bytes', offset: 21, size: 8, type: 'uint64' },
    { name: 'packets', offset: 29, size: 4, type: 'uint32' },
    { name: 'host', offset: 33, size: 24, type: 'string' },
    { name: 'flags', offset: 57, size: 1, type: 'uint8' },
  ],
});

/** Deterministic flow lines, cut into blocks that end on line boundaries. */
function generate(): Buffer[] {
  let seed = 12345;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  const protos = ['tcp', 'udp', 'icmp'];
  const blocks: Buffer[] = [];
  let cur: string[] = [];
  let size = 0;
  for (let i = 0; i < LINES; i++) {
    const line = JSON.stringify({
      ts: 1700000000 + (i >> 4), proto: protos[rnd(3)], src: `10.${rnd(256)}.${rnd(256)}.${rnd(256)}`,
      dst: `192.168.${rnd(256)}.${rnd(256)}`, sport: rnd(65536), dport: [80, 443, 53, 22][rnd(4)],
      bytes: rnd(1e9), packets: rnd(1e5), host: `host-${rnd(100000)}.example.com`, flags: rnd(64),
    });
    cur.push(line);
    size += line.length + 1;
    if (size >= BLOCK) {
      blocks.push(Buffer.from(cur.join('\n') + '\n'));
      cur = [];
      size = 0;
    }
  }
  if (cur.length) blocks.push(Buffer.from(cur.join('\n') + '\n'));
  return blocks;
}

const PROTO: Record<string, number> = { icmp: 1, tcp: 6, udp: 17 };
const enc = new TextEncoder();

function ipv4(s: string): number {
  const p = s.split('.');
  return ((+p[0] << 24) | (+p[1] << 16) | (+p[2] << 8) | +p[3]) >>> 0;
}

interface Flow { ts: number; proto: string; src: string; dst: string; sport: number; dport: number; bytes: number; packets: number; host: string; flags: number }

/** The plain JavaScript path: decode, split lines, JSON.parse, DataView writes. */
function jsParse(block: Buffer): number {
  const lines = block.toString('utf8').split('\n');
  const out = new Uint8Array(lines.length * 64);
  const dv = new DataView(out.buffer);
  let n = 0;
  for (const line of lines) {
    if (line.length === 0) continue;
    const o = JSON.parse(line) as Flow;
    const base = n * 64;
    dv.setBigInt64(base, BigInt(o.ts), true);
    dv.setUint8(base + 8, PROTO[o.proto] ?? 0);
    dv.setUint32(base + 9, ipv4(o.src), true);
    dv.setUint32(base + 13, ipv4(o.dst), true);
    dv.setUint16(base + 17, o.sport, true);
    dv.setUint16(base + 19, o.dport, true);
    dv.setBigUint64(base + 21, BigInt(o.bytes), true);
    dv.setUint32(base + 29, o.packets, true);
    enc.encodeInto(o.host, out.subarray(base + 33, base + 57));
    dv.setUint8(base + 57, o.flags);
    n++;
  }
  return n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function time(fn: () => number): { ms: number; count: number } {
  const t0 = process.hrtime.bigint();
  const count = fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, count };
}

const blocks = generate();
const bytes = blocks.reduce((a, b) => a + b.length, 0);
const codec = new RecordCodec(schema);
const native = () => blocks.reduce((a, b) => a + codec.parseNdjsonSync(b).count, 0);
const js = () => blocks.reduce((a, b) => a + jsParse(b), 0);

// Check both paths agree on one block before timing.
const check = codec.parseNdjsonSync(blocks[0]);
const jsOne = (() => {
  const lines = blocks[0].toString().split('\n').filter(Boolean);
  return lines.length;
})();
if (check.count !== jsOne || check.errors.length) throw new Error('native and JS paths disagree on the sample');

native();
js();
const nat: number[] = [];
const jsr: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const a = time(native);
  const b = time(js);
  if (a.count !== LINES || b.count !== LINES) throw new Error(`counted ${a.count} / ${b.count} of ${LINES}`);
  nat.push(a.ms);
  jsr.push(b.ms);
}
const rate = (ms: number) => (LINES / (ms / 1000)).toFixed(0);
const mn = median(nat);
const mj = median(jsr);
console.log(`NDJSON → records: ${LINES} lines, ${(bytes / 1e6).toFixed(1)} MB, ${blocks.length} blocks, median of ${RUNS} runs, one core`);
console.log('| path | median ms | records/s | MB/s |');
console.log('|---|---:|---:|---:|');
console.log(`| native parseNdjsonSync | ${mn.toFixed(0)} | ${rate(mn)} | ${(bytes / 1e3 / mn).toFixed(0)} |`);
console.log(`| JS JSON.parse + DataView | ${mj.toFixed(0)} | ${rate(mj)} | ${(bytes / 1e3 / mj).toFixed(0)} |`);
console.log(`ratio native / JS: ${(mj / mn).toFixed(2)}×`);
