/**
 * Records and queries of the fault trials: flows records (pipelines/examples/data/flows.schema.json)
 * whose `packets` field carries a serial number unique over a run, the few filters the trials push
 * down with their evaluation on the client side, and a seeded random source.
 */
import { mulberry32 } from '../../lib/mulberry32';
import type { Filter, SubQuery } from '../../query/hdQuery';
import { RECORD_SIZE } from './chaosCluster';

/** Integers and picks drawn from one seeded source. */
export class Draw {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const PORTS = [443, 80, 53, 22, 8080];
const PROTOS = [1, 6, 17];
const T0 = 1_700_000_000;

/**
 * `count` flows records; record `i` has `packets` = `serial + i` (unique over a run, so a stray
 * record names where it came from) and the other fields drawn from `draw`.
 */
export function flowRecords(count: number, serial: number, draw: Draw): Buffer {
  const b = Buffer.alloc(count * RECORD_SIZE);
  for (let i = 0; i < count; i++) {
    const o = i * RECORD_SIZE;
    b.writeBigInt64LE(BigInt(T0 + draw.int(0, 59)), o);
    b.writeUInt32LE(0x0a000000 + draw.int(0, 0xffff), o + 8);
    b.writeUInt32LE(0xc0a80000 + draw.int(0, 0xffff), o + 12);
    b.writeUInt16LE(draw.int(1024, 65535), o + 16);
    b.writeUInt16LE(draw.pick(PORTS), o + 18);
    b.writeUInt8(draw.pick(PROTOS), o + 20);
    b.writeBigUInt64LE(BigInt(serial + i), o + 24);
    b.writeBigUInt64LE(BigInt(draw.int(0, 1_000_000)), o + 32);
    b.writeUInt32LE(draw.int(0, 10_000), o + 40);
  }
  return b;
}

/** A pushed-down query shape and its evaluation over one record. */
export interface QueryShape {
  readonly name: string;
  readonly subQueries: SubQuery[];
  matches(rec: Buffer, o: number): boolean;
}

/** The query shapes the trials and the soak mix: a whole-batch read and three filters. */
export function queryShape(draw: Draw): QueryShape {
  switch (draw.int(0, 3)) {
    case 0:
      return { name: 'all', subQueries: [], matches: () => true };
    case 1: {
      const port = draw.pick(PORTS);
      return { name: 'dst_port eq', subQueries: [{ filters: [f('dst_port', 'eq', String(port))] }], matches: (r, o) => r.readUInt16LE(o + 18) === port };
    }
    case 2: {
      const protos = [draw.pick(PROTOS), draw.pick(PROTOS)];
      return {
        name: 'proto in / OR',
        subQueries: [{ filters: [{ field: 'proto', op: 'in', values: protos.map(String) }] }, { filters: [f('dst_port', 'eq', '22')] }],
        matches: (r, o) => protos.includes(r.readUInt8(o + 20)) || r.readUInt16LE(o + 18) === 22,
      };
    }
    default: {
      const lo = draw.int(0, 500_000);
      const hi = lo + draw.int(0, 500_000);
      return {
        name: 'bytes between',
        subQueries: [{ filters: [{ field: 'bytes', op: 'between', values: [String(lo), String(hi)] }] }],
        matches: (r, o) => {
          const v = Number(r.readBigUInt64LE(o + 32));
          return v >= lo && v <= hi;
        },
      };
    }
  }
}

const f = (field: string, op: Filter['op'], value: string): Filter => ({ field, op, value });

/** The records of `batch` that `shape` matches, in order. */
export function expected(batch: Buffer, shape: QueryShape): Buffer {
  const parts: Buffer[] = [];
  for (let o = 0; o < batch.length; o += RECORD_SIZE) if (shape.matches(batch, o)) parts.push(batch.subarray(o, o + RECORD_SIZE));
  return Buffer.concat(parts);
}
