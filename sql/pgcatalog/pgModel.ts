/**
 * hd_sql's PostgreSQL catalog as one object built from a Catalog (the datasets' schemas): every
 * relation (the datasets in `public`, the served catalog relations in `pg_catalog` and
 * `information_schema`) with its OID and typed columns, and the descriptions. The catalog tables'
 * rows (sql/pgcatalog/catalogRows.ts), the `::regclass` casts and the Flight SQL answers are all
 * read from it, so every door describes the same tables with the same types. Built once per
 * Catalog (a refreshed catalog is a new Catalog, hence a new model).
 */
import type { Schema } from '../../engine-rs/schema';
import { sqlTypeOf, type Catalog } from '../catalog';
import { CATALOG_RELATIONS, COLUMN_TYPE_OID, type CatalogRelation } from './relations';
import { datasetOids, NAMESPACES, type NamespaceName } from './oids';
import { pgColumnType } from './pgTypes';

/** One column of a relation, as `pg_attribute` lists it. */
export interface PgColumn {
  readonly name: string;
  /** attnum (1 up). */
  readonly num: number;
  readonly typeOid: number;
  readonly typmod: number;
  /** The SQL type text of the type mapping (`bigint`, `numeric(20,4)`, `text[]`); catalog columns: the type's name. */
  readonly sqlType: string;
  /** The HD type (`uint64`, `ipv4`, `uint8[4]`); undefined for catalog columns. */
  readonly hdType?: string;
  readonly description?: string;
}

/** One relation, as `pg_class` lists it. */
export interface PgRelation {
  readonly oid: number;
  readonly name: string;
  readonly namespace: NamespaceName;
  /** `r` table, `v` view. */
  readonly kind: 'r' | 'v';
  readonly columns: readonly PgColumn[];
  readonly description?: string;
  /** The dataset it is (public tables only). */
  readonly dataset?: Schema;
  /** The served catalog relation it is (pg_catalog / information_schema only). */
  readonly catalog?: CatalogRelation;
}

const models = new WeakMap<Catalog, PgModel>();

/** The PostgreSQL view of one Catalog. */
export class PgModel {
  /** Datasets first (in the catalog's order), then the catalog relations. */
  readonly relations: readonly PgRelation[];
  private readonly byOid = new Map<number, PgRelation>();
  private readonly byName = new Map<string, PgRelation>();

  /** The model of `catalog`, built on first use. */
  static of(catalog: Catalog): PgModel {
    let m = models.get(catalog);
    if (!m) models.set(catalog, (m = new PgModel(catalog)));
    return m;
  }

  private constructor(readonly catalog: Catalog) {
    const oids = datasetOids(catalog.schemas.map((s) => s.id));
    const datasets = catalog.schemas.map((s) => datasetRelation(s, oids.get(s.id) as number));
    const system = CATALOG_RELATIONS.map((r): PgRelation => ({
      oid: r.oid,
      name: r.name,
      namespace: r.namespace,
      kind: r.kind,
      catalog: r,
      columns: r.columns.map((c, i) => ({ name: c.name, num: i + 1, typeOid: COLUMN_TYPE_OID[c.type], typmod: -1, sqlType: c.type })),
    }));
    this.relations = [...datasets, ...system];
    for (const r of this.relations) {
      this.byOid.set(r.oid, r);
      this.byName.set(`${r.namespace}.${r.name}`, r);
    }
  }

  /** The datasets' relations (schema public), in the catalog's order. */
  get datasets(): PgRelation[] {
    return this.relations.filter((r) => r.dataset !== undefined);
  }

  /** The relation of an OID. */
  relationByOid(oid: number): PgRelation | undefined {
    return this.byOid.get(oid);
  }

  /**
   * The relation a `'...'::regclass` text names, as PostgreSQL reads it: `flows`, `public.flows`,
   * `pg_catalog.pg_class`, `"Flows"` (quoted: exact case; unquoted: lower-cased); an unqualified
   * name is looked up along the search path (pg_catalog, then public). A dataset's human-readable
   * name works as in statements.
   */
  relationByName(text: string): PgRelation | undefined {
    const parts = splitQualified(text);
    if (!parts) return undefined;
    const [schema, name] = parts.length === 2 ? parts : [undefined, parts[0] as string];
    for (const ns of schema ? [schema] : ['pg_catalog', 'public']) {
      const hit = this.byName.get(`${ns}.${name}`);
      if (hit) return hit;
      if (ns === 'public') {
        const s = this.catalog.resolve(name);
        if (s) return this.relations.find((r) => r.dataset === s);
      }
    }
    return undefined;
  }
}

/** `a.b` / `"A"."b"` into its parts, unquoted (quoted parts keep their case); undefined when malformed. */
function splitQualified(text: string): string[] | undefined {
  const parts: string[] = [];
  const re = /\s*(?:"((?:[^"]|"")*)"|([^".\s]+))\s*(\.|$)/gy;
  let m: RegExpExecArray | null;
  let complete = false;
  while (re.lastIndex < text.length && (m = re.exec(text)) !== null) {
    parts.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : (m[2] as string).toLowerCase());
    if (m[3] === '') {
      complete = true;
      break;
    }
  }
  return !complete || parts.length === 0 || parts.length > 2 ? undefined : parts;
}

function datasetRelation(s: Schema, oid: number): PgRelation {
  // The schema's description; without one, the human-readable name when it says more than the id.
  const description = s.description ?? (s.name !== s.id ? s.name : undefined);
  return {
    oid,
    name: s.id,
    namespace: 'public',
    kind: 'r',
    dataset: s,
    ...(description !== undefined ? { description } : {}),
    columns: s.fields.map((f, i) => {
      const sqlType = sqlTypeOf(f);
      const t = pgColumnType(sqlType);
      return { name: f.name, num: i + 1, typeOid: t.oid, typmod: t.typmod, sqlType, hdType: f.array ? `${f.array.element}[${f.array.count}]` : f.type, ...(f.description !== undefined ? { description: f.description } : {}) };
    }),
  };
}

/** The OID of each namespace name (re-exported for the rows). */
export { NAMESPACES };
