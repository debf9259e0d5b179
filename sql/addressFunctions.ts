/**
 * The sort keys of address columns: DuckDB macros that read the text an ipv4 / ipv6 column presents
 * back into the integer it stores, so comparisons, ORDER BY and min / max can work on the integer
 * (the reference: "comparison is on the underlying integer") while every value stays the text
 * clients see. sql/addressRewrite.ts puts them into statements; no JavaScript runs per row. They
 * are created once per DuckDB instance, in its main schema, like the chess functions.
 *
 * They read the decoder's own text only (dotted quad; RFC 5952 with `::ffff:a.b.c.d` for IPv4-mapped
 * addresses): literals and bound parameters are checked and converted in JavaScript
 * (sql/inetAddress.ts) before a statement runs.
 */
import type { LocalSqlSession } from '../local/localSqlSession';
import type { AddressKind } from './inetAddress';

/** The macro that gives the integer of each address kind (UINTEGER for ipv4, UHUGEINT for ipv6). */
export const ADDRESS_KEY_FUNCTIONS: Readonly<Record<AddressKind, string>> = { ipv4: 'hd_inet4_key', ipv6: 'hd_inet6_key' };

/** The DuckDB type each key has. */
export const ADDRESS_KEY_TYPES: Readonly<Record<AddressKind, 'UINTEGER' | 'UHUGEINT'>> = { ipv4: 'UINTEGER', ipv6: 'UHUGEINT' };

/** The macros, helpers first. `a` is an address's text, `s` a run of hex groups separated by `:`. */
export const ADDRESS_MACROS: readonly string[] = [
  // Four octets as one inner product (exact in double: below 2^32); measured faster than shifts of split_part.
  `CREATE OR REPLACE MACRO hd_inet4_key(a) AS CAST(array_inner_product(CAST(string_split(a, '.') AS DOUBLE[4]), [16777216, 65536, 256, 1]::DOUBLE[4]) AS UINTEGER)`,
  `CREATE OR REPLACE MACRO hd_inet6_groups(s) AS list_reduce(list_transform(string_split(s, ':'), lambda g: CAST(CAST('0x' || g AS UINTEGER) AS UHUGEINT)), lambda a, g: (a << 16) | g, CAST(0 AS UHUGEINT))`,
  // How far the groups before `::` move up: 16 bits per group the `::` stands for or that follows it.
  `CREATE OR REPLACE MACRO hd_inet6_shift(s) AS CAST(16 * (8 - len(string_split(s, ':'))) AS UHUGEINT)`,
  `CREATE OR REPLACE MACRO hd_inet6_key(a) AS CASE
    WHEN starts_with(a, '::ffff:') AND contains(a, '.') THEN (CAST(65535 AS UHUGEINT) << 32) | hd_inet4_key(a[8:])
    WHEN NOT contains(a, '::') THEN hd_inet6_groups(a)
    WHEN a = '::' THEN CAST(0 AS UHUGEINT)
    WHEN starts_with(a, '::') THEN hd_inet6_groups(a[3:])
    WHEN ends_with(a, '::') THEN hd_inet6_groups(a[:-3]) << hd_inet6_shift(a[:-3])
    ELSE (hd_inet6_groups(split_part(a, '::', 1)) << hd_inet6_shift(split_part(a, '::', 1))) | hd_inet6_groups(split_part(a, '::', 2))
  END`,
];

const installed = new WeakMap<object, Promise<void>>();

/**
 * Makes sure the address macros exist in the DuckDB instance `owner` (the LocalSql) stands for,
 * creating them through `session` the first time. A failed install is tried again next time.
 */
export async function ensureAddressFunctions(owner: object, session: LocalSqlSession): Promise<void> {
  let p = installed.get(owner);
  if (!p) {
    p = (async () => {
      for (const m of ADDRESS_MACROS) await session.query(m);
    })();
    installed.set(owner, p);
    p.catch(() => installed.delete(owner));
  }
  await p;
}
