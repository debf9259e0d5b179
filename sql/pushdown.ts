/**
 * Which WHERE conjuncts push down to the Storage Nodes (docs/sql.md, "Pushdown"), as HDQuery
 * filters in the column's own form: enum labels become codes, address literals integers, SAN moves
 * codes and FEN positions packed bytes (sql/chessPushdown.ts). A conjunct that does not translate
 * exactly stays local; since the whole statement runs again in DuckDB over the fetched rows,
 * pushing a conjunct only narrows the read, never the meaning. Address comparisons compare the
 * integers in DuckDB too (sql/addressRewrite.ts), so range comparisons on them push down.
 */
import type { BigJsonValue } from './bigJson';
import { ipv4Value, ipv6Value } from './inetAddress';
import type { FieldInfo, Schema } from '../engine-rs/schema';
import { filterJson, type Filter } from '../query/filter';
import { ScanFilter } from '../engine-rs/scan';
import { chessFilterOf, chessMoveValue } from './chessPushdown';

/** A node of DuckDB's parsed statement tree. */
export type Node = { [key: string]: BigJsonValue };

/** A literal found in the tree: its DuckDB type id and value. */
export interface Literal {
  readonly typeId: string;
  readonly value: BigJsonValue;
}

/** What the conjuncts of one WHERE clause give for one dataset. */
export interface Pushdown {
  readonly filters: Filter[];
  /** Inclusive bounds on the time field, from the comparisons on it. */
  readonly timeFrom?: number;
  readonly timeTo?: number;
}

const COMPARE_OPS: Readonly<Record<string, Filter['op']>> = {
  COMPARE_EQUAL: 'eq',
  COMPARE_NOTEQUAL: 'ne',
  COMPARE_LESSTHAN: 'lt',
  COMPARE_GREATERTHAN: 'gt',
  COMPARE_LESSTHANOREQUALTO: 'le',
  COMPARE_GREATERTHANOREQUALTO: 'ge',
};
const FLIPPED: Readonly<Record<string, Filter['op']>> = { eq: 'eq', ne: 'ne', lt: 'gt', gt: 'lt', le: 'ge', ge: 'le' };
const INTEGER_IDS = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT']);
const INTEGER_FIELDS = new Set(['uint8', 'uint16', 'uint32', 'uint64', 'uint128', 'uint256', 'int8', 'int16', 'int32', 'int64', 'int128', 'int256', 'timestamp', 'numeric', 'float', 'double']);
/** Fields a quoted decimal literal may stand for exactly (DuckDB casts `'…'` to the column's type; 256-bit ones need it beyond 2^127). */
const WIDE_FIELDS = new Set(['uint64', 'uint128', 'uint256', 'int128', 'int256']);
const DECIMAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;

/** The top-level AND conjuncts of a WHERE tree. */
export function conjuncts(where: BigJsonValue | undefined): Node[] {
  if (!isNode(where)) return [];
  if (where.type === 'CONJUNCTION_AND' && Array.isArray(where.children)) return where.children.flatMap((c) => conjuncts(c));
  return [where];
}

/** True for an object node of the tree. */
export function isNode(v: BigJsonValue | undefined): v is Node {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof v !== 'bigint';
}

/**
 * The filters and time bounds of `where`'s conjuncts on `schema`'s columns. `qualifiers` are the
 * names a column may be prefixed with (the table's alias or name); `params` the bound values of
 * `$n` placeholders, when known.
 */
export function pushdownOf(where: BigJsonValue | undefined, schema: Schema, qualifiers: ReadonlySet<string>, params: readonly unknown[] = []): Pushdown {
  const filters: Filter[] = [];
  let timeFrom: number | undefined;
  let timeTo: number | undefined;
  const column = (n: BigJsonValue | undefined): FieldInfo | undefined => {
    if (!isNode(n) || n.type !== 'COLUMN_REF' || !Array.isArray(n.column_names)) return undefined;
    const names = n.column_names as string[];
    if (names.length > 2 || (names.length === 2 && !qualifiers.has(String(names[0]).toLowerCase()))) return undefined;
    return schema.field(String(names[names.length - 1]));
  };
  const literal = (n: BigJsonValue | undefined): Literal | undefined => {
    if (!isNode(n)) return undefined;
    if (n.type === 'VALUE_CONSTANT' && isNode(n.value) && n.value.is_null === false && isNode(n.value.type)) return { typeId: String(n.value.type.id), value: n.value.value ?? null };
    // DuckDB's parser writes TRUE / FALSE as the casts 't'::BOOLEAN / 'f'::BOOLEAN.
    if (n.type === 'OPERATOR_CAST' && n.try_cast !== true && isNode(n.cast_type) && n.cast_type.id === 'BOOLEAN') {
      const inner = literal(n.child);
      const text = inner?.typeId === 'VARCHAR' && typeof inner.value === 'string' ? inner.value.toLowerCase() : undefined;
      if (text === 't' || text === 'true' || text === 'f' || text === 'false') return { typeId: 'BOOLEAN', value: text.startsWith('t') };
    }
    if (n.type === 'VALUE_PARAMETER') {
      const p = params[Number(n.identifier) - 1];
      if (typeof p === 'string') return { typeId: 'VARCHAR', value: p };
      if (typeof p === 'bigint' || (typeof p === 'number' && Number.isInteger(p))) return { typeId: 'BIGINT', value: p };
    }
    return undefined;
  };
  for (const c of conjuncts(where)) {
    const chess = chessFilterOf(c, { column, literal });
    if (chess) {
      filters.push(chess);
      continue;
    }
    const type = String(c.type);
    const op = COMPARE_OPS[type];
    if (op) {
      let f = column(c.left);
      let lit = literal(c.right);
      let o = op;
      if (!f || !lit) {
        f = column(c.right);
        lit = literal(c.left);
        o = FLIPPED[op] as Filter['op'];
      }
      if (!f || !lit) continue;
      const v = valueFor(f, lit, schema, o === 'eq' || o === 'ne');
      if (v === undefined) continue;
      filters.push({ field: f.name, op: o, value: v });
      if (f.name === schema.timeField) {
        const n = Number(v);
        if (o === 'eq' || o === 'ge' || o === 'gt') timeFrom = Math.max(timeFrom ?? -Infinity, o === 'gt' ? n + 1 : n);
        if (o === 'eq' || o === 'le' || o === 'lt') timeTo = Math.min(timeTo ?? Infinity, o === 'lt' ? n - 1 : n);
      }
    } else if (type === 'COMPARE_BETWEEN') {
      const f = column(c.input);
      const lo = literal(c.lower);
      const hi = literal(c.upper);
      const vlo = f && lo ? valueFor(f, lo, schema, false) : undefined;
      const vhi = f && hi ? valueFor(f, hi, schema, false) : undefined;
      if (!f || vlo === undefined || vhi === undefined) continue;
      filters.push({ field: f.name, op: 'between', values: [vlo, vhi] });
      if (f.name === schema.timeField) {
        timeFrom = Math.max(timeFrom ?? -Infinity, Number(vlo));
        timeTo = Math.min(timeTo ?? Infinity, Number(vhi));
      }
    } else if (type === 'COMPARE_IN' && Array.isArray(c.children)) {
      const [first, ...rest] = c.children;
      const f = column(first);
      if (!f || rest.length === 0 || rest.length > 1024) continue;
      const values = rest.map((r) => {
        const lit = literal(r);
        return lit ? valueFor(f, lit, schema, true) : undefined;
      });
      if (values.some((v) => v === undefined)) continue;
      filters.push({ field: f.name, op: 'in', values: values as string[] });
    } else {
      const negated = type === 'OPERATOR_NOT' && Array.isArray(c.children) && c.children.length === 1;
      const fn = negated ? (c.children as BigJsonValue[])[0] : c;
      if (!isNode(fn) || fn.type !== 'FUNCTION' || !Array.isArray(fn.children) || fn.children.length !== 2) continue;
      if (!['list_contains', 'array_contains', 'list_has', 'array_has'].includes(String(fn.function_name))) continue;
      const f = column(fn.children[0]);
      const lit = literal(fn.children[1]);
      if (!f?.array || !lit) continue;
      const element: FieldInfo = { name: f.name, offset: 0, size: 0, type: f.array.element, ...(f.array.enum ? { enum: f.array.enum } : {}) };
      const v = valueFor(element, lit, schema, true);
      if (v !== undefined) filters.push({ field: f.name, op: negated ? 'not_list_contains' : 'list_contains', value: v });
    }
  }
  const encodable = filters.filter((f) => compiles(schema, f)).slice(0, 64);
  return { filters: encodable, ...(timeFrom !== undefined && Number.isFinite(timeFrom) ? { timeFrom } : {}), ...(timeTo !== undefined && Number.isFinite(timeTo) ? { timeTo } : {}) };
}

/**
 * The filter value text of `lit` compared with field `f`, or undefined when it does not translate
 * exactly (then the conjunct stays local). `equality` is true for eq / ne / in / list_contains.
 */
export function valueFor(f: FieldInfo, lit: Literal, schema: Schema, equality: boolean): string | undefined {
  if (f.timeReference || f.array) return undefined; // delta time: never pushed (the reference's rule); arrays: only list ops
  if (f.enum) {
    // A label: its code. The default label also stands for every unknown code, and labels order
    // as text, so only equality on a listed label that is not the default pushes down.
    const e = schema.enums[f.enum];
    if (!e || !equality || lit.typeId !== 'VARCHAR' || typeof lit.value !== 'string' || lit.value === e.defaultLabel) return undefined;
    const code = e.values[lit.value];
    return code === undefined ? undefined : String(code);
  }
  switch (f.type) {
    case 'ipv4':
      // The address's integer: DuckDB compares addresses on it too (sql/addressRewrite.ts).
      return lit.typeId === 'VARCHAR' && typeof lit.value === 'string' ? ipv4Value(lit.value)?.toString() : undefined;
    case 'ipv6':
      return lit.typeId === 'VARCHAR' && typeof lit.value === 'string' ? ipv6Value(lit.value)?.toString() : undefined;
    case 'string':
      return lit.typeId === 'VARCHAR' && typeof lit.value === 'string' && !lit.value.includes('\0') && Buffer.byteLength(lit.value) <= f.size ? lit.value : undefined;
    case 'chess_move':
      return chessMoveValue(lit, equality); // SAN → its code; codes order unlike SAN text, so equality only
    case 'boolean':
      return lit.typeId === 'BOOLEAN' && typeof lit.value === 'boolean' && equality ? String(lit.value) : undefined;
    default:
      if (!INTEGER_FIELDS.has(f.type)) return undefined; // bytes, blob, chess_fen (sql/chessPushdown.ts): not here
      if (lit.typeId === 'VARCHAR' && WIDE_FIELDS.has(f.type) && typeof lit.value === 'string' && DECIMAL_INTEGER.test(lit.value)) return lit.value;
      if (!INTEGER_IDS.has(lit.typeId)) return undefined; // decimals and doubles: rounding rules differ
      return integerText(lit.value);
  }
}

function integerText(v: BigJsonValue): string | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'bigint') return v.toString();
  if (isNode(v) && v.upper !== undefined && v.lower !== undefined) {
    const up = BigInt(v.upper as number | bigint);
    const lo = BigInt(v.lower as number | bigint);
    return ((up << 64n) + lo).toString();
  }
  return undefined;
}

/** A filter whose value the nodes would refuse (out of range, too long) is not pushed: it stays local. */
function compiles(schema: Schema, f: Filter): boolean {
  try {
    ScanFilter.compile(schema, JSON.stringify([{ filters: [filterJson(f)] }]));
    return true;
  } catch {
    return false;
  }
}
