/**
 * The datasets the SQL server serves: each one a table named by its id, its human-readable name
 * working too (case-insensitively, as unquoted SQL identifiers do), and the SQL types of its
 * columns per the reference's type mapping.
 */
import type { FieldInfo, Schema } from '../engine-rs/schema';

/** One column of the catalog (the rows of `information_schema.columns`). */
export interface CatalogColumn {
  readonly table: string;
  readonly name: string;
  readonly position: number;
  readonly sqlType: string;
  readonly hdType: string;
}

/** The SQL type of an HD scalar type (the reference's type mapping; addresses as inet text). */
function scalarSqlType(t: string, f?: FieldInfo): string {
  switch (t) {
    case 'uint8':
    case 'int8':
    case 'int16':
      return 'smallint';
    case 'uint16':
    case 'int32':
      return 'integer';
    case 'uint32':
    case 'int64':
    case 'timestamp':
      return 'bigint';
    case 'uint64':
    case 'uint128':
    case 'int128':
    case 'uint256':
    case 'int256':
      return 'numeric';
    case 'ipv4':
    case 'ipv6':
      return 'inet';
    case 'numeric':
      return `numeric(${f?.precision ?? 38},${f?.scale ?? 0})`;
    case 'float':
      return 'real';
    case 'double':
      return 'double precision';
    case 'boolean':
      return 'boolean';
    case 'bytes':
      return 'bytea';
    default:
      return 'text'; // string, blob (the object key), chess_move (SAN), chess_fen (FEN)
  }
}

/** The SQL type of a field: enum columns are text labels, delta time bigint, arrays `element[]`. */
export function sqlTypeOf(f: FieldInfo): string {
  if (f.array) return `${f.array.enum ? 'text' : scalarSqlType(f.array.element)}[]`;
  if (f.enum) return 'text';
  if (f.timeReference) return 'bigint';
  return scalarSqlType(f.type, f);
}

/** The datasets by id and by human-readable name. */
export class Catalog {
  private readonly byName = new Map<string, Schema>();

  /** @throws Error when two datasets claim the same name. */
  constructor(readonly schemas: readonly Schema[]) {
    for (const s of schemas) {
      for (const n of new Set([s.id.toLowerCase(), s.name.toLowerCase()])) {
        const other = this.byName.get(n);
        if (other && other !== s) throw new Error(`datasets ${other.id} and ${s.id} are both named ${JSON.stringify(n)}`);
        this.byName.set(n, s);
      }
    }
  }

  /** The dataset a table name means (its id or human-readable name, any case), if any. */
  resolve(name: string): Schema | undefined {
    return this.byName.get(name.toLowerCase());
  }

  /** Every column of every dataset, in schema order (tables by id). */
  columns(): CatalogColumn[] {
    return this.schemas.flatMap((s) => s.fields.map((f, i) => ({ table: s.id, name: f.name, position: i + 1, sqlType: sqlTypeOf(f), hdType: f.array ? `${f.array.element}[${f.array.count}]` : f.type })));
  }
}
