/**
 * The object identifiers of hd_sql's PostgreSQL catalog. System objects have PostgreSQL's own OIDs
 * (pg_catalog 11, public 2200, the bootstrap role 10, pg_class 1259...), so a client's `'pg_class'::regclass`
 * or hard-coded OID finds what it expects. A dataset's OID comes from a hash of its id, so it stays
 * the same across restarts and catalog refreshes (a client may look a table up by OID after it
 * listed it) and does not depend on which other datasets exist, unless two ids collide.
 */

/** The namespaces (`pg_namespace`): OID by name. */
export const NAMESPACES = { pg_catalog: 11, public: 2200, information_schema: 13000 } as const;
/** A namespace's name. */
export type NamespaceName = keyof typeof NAMESPACES;

/** The one role (`pg_roles`): owner of everything, named after the service. */
export const OWNER = { oid: 10, name: 'hd' } as const;

/** The one database (`pg_database`); the Flight SQL catalog and `table_catalog` have its name. */
export const DATABASE = { oid: 16384, name: 'hd' } as const;

/** The first OID of user objects in PostgreSQL: datasets get OIDs from here up. */
export const FIRST_USER_OID = 16385;
/** Dataset OIDs stay below this (a positive int4, as clients read OIDs). */
const SPAN = 1 << 30;

/** FNV-1a, 32 bits, of a string's UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The OID of each dataset id: FIRST_USER_OID plus a hash of the id; on a collision the id later
 * in sorted order takes the next free OID (deterministic for a given set of ids).
 */
export function datasetOids(ids: readonly string[]): Map<string, number> {
  const taken = new Set<number>();
  const out = new Map<string, number>();
  for (const id of [...ids].sort()) {
    let oid = FIRST_USER_OID + (fnv1a(id) % SPAN);
    while (taken.has(oid)) oid = oid + 1 >= FIRST_USER_OID + SPAN ? FIRST_USER_OID : oid + 1;
    taken.add(oid);
    out.set(id, oid);
  }
  return out;
}
