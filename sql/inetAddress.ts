/**
 * Address literals of SQL statements: IPv4 / IPv6 text → the integer an ipv4 / ipv6 column stores
 * (the reference: "ipv4 as uint32, ipv6 as uint128"), and the integer → the text hd_sql presents
 * (the decoder's: dotted quad; RFC 5952 lower-case with the longest zero run as `::` and IPv4-mapped
 * addresses as `::ffff:a.b.c.d`, engine-rs/core/src/decode/inet.rs). Pushdown (sql/pushdown.ts) and
 * the address comparisons (sql/addressRewrite.ts) read literals here, so both agree on what a
 * literal means.
 */
import { ipv4Value } from '../lib/ipv4';

/** Dotted-quad IPv4 text as its uint32 (lib/ipv4.ts), for the literals here and their callers. */
export { ipv4Value };

/** The two address kinds. */
export type AddressKind = 'ipv4' | 'ipv6';


/**
 * An IPv6 address (RFC 4291 text: hex groups of 1 to 4 digits, either case, at most one `::`, an
 * IPv4 dotted quad in the last 32 bits) as its uint128. Undefined for anything else (zone ids
 * `%eth0` and prefixes `/64` included).
 * @example ipv6Value('::ffff:10.0.0.1') // 0xffff0a000001n
 */
export function ipv6Value(text: string): bigint | undefined {
  let t = text;
  let tailV4: number | undefined;
  const v4 = /:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(t);
  if (v4) {
    tailV4 = ipv4Value(v4[1] as string);
    if (tailV4 === undefined) return undefined;
    t = t.slice(0, t.length - (v4[1] as string).length) + '0:0'; // two placeholder groups
  }
  const halves = t.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (s: string): string[] | undefined => {
    if (s === '') return [];
    const g = s.split(':');
    return g.every((x) => /^[0-9a-fA-F]{1,4}$/.test(x)) ? g : undefined;
  };
  const head = groupsOf(halves[0] as string);
  const tail = halves.length === 2 ? groupsOf(halves[1] as string) : [];
  if (!head || !tail) return undefined;
  const given = head.length + tail.length;
  if (halves.length === 2 ? given > 7 : given !== 8) return undefined;
  const groups = [...head, ...Array<string>(8 - given).fill('0'), ...tail];
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(`0x${g}`);
  if (tailV4 !== undefined) v = (v & ~0xffffffffn) | BigInt(tailV4);
  return v;
}

/** The dotted quad of a uint32. */
export function ipv4Text(v: number): string {
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

/** The RFC 5952 text of a uint128, exactly as the decoder presents an ipv6 column. */
export function ipv6Text(v: bigint): string {
  const g = Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(112 - 16 * i)) & 0xffffn));
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `::ffff:${ipv4Text(Number(v & 0xffffffffn))}`;
  let best = 8;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (bestLen < 2) return g.map((x) => x.toString(16)).join(':');
  const part = (xs: number[]): string => xs.map((x) => x.toString(16)).join(':');
  return `${part(g.slice(0, best))}::${part(g.slice(best + bestLen))}`;
}

/** `text` as an address of `kind`: its integer and the text a column of that kind presents for it. */
export function addressLiteral(kind: AddressKind, text: string): { value: bigint; text: string } | undefined {
  if (kind === 'ipv4') {
    const v = ipv4Value(text);
    return v === undefined ? undefined : { value: BigInt(v), text: ipv4Text(v) };
  }
  const v = ipv6Value(text);
  return v === undefined ? undefined : { value: v, text: ipv6Text(v) };
}
