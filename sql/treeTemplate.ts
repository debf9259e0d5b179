/**
 * DuckDB's parse tree of one statement text, as a template for every text of the same shape
 * (sql/statementShape.ts): the tree's text with holes where a literal's value and where each
 * `query_location` (a byte offset into the text, which moves when a literal's length changes) go.
 * Filling it with another text's literals gives the tree `json_serialize_sql` would give for that
 * text, without the round trip.
 *
 * A template is learned from a text and its tree, and only trusts what it can check there: each
 * literal must be a VALUE_CONSTANT node at the literal's offset, of the type its class says, holding
 * the value read from the text, and found nowhere else in the tree (a value the parser copied
 * elsewhere, as an alias or a type's width, would not be substituted). A literal that fails is
 * pinned: the template then serves only texts with that literal as written.
 */
import { randomBytes } from 'node:crypto';
import { parseBigJson, stringifyBigJson, type BigJsonValue } from './bigJson';
import { isNode } from './pushdown';
import type { ShapeLiteral, StatementShape } from './statementShape';

/** Marks holes while the template's text is built; random, so no statement can contain it. */
const MARK = `~hd${randomBytes(8).toString('hex')}~`;
const HOLE = new RegExp(`"${MARK}([LV])(\\d+)"`, 'g');

/** A hole of the template: a `query_location` (its offset in the learned text) or literal `i`'s value. */
type Hole = { readonly location: number } | { readonly literal: number };

/** Byte offsets and lengths of `literals` in `text` (DuckDB's locations count UTF-8 bytes). */
function byteSpans(text: string, literals: readonly ShapeLiteral[]): { starts: number[]; lengths: number[] } {
  const ascii = !/[^\x00-\x7f]/.test(text);
  const bytes = (s: string): number => (ascii ? s.length : Buffer.byteLength(s));
  const starts: number[] = [];
  const lengths: number[] = [];
  let at = 0;
  let offset = 0;
  for (const l of literals) {
    offset += bytes(text.slice(at, l.start));
    starts.push(offset);
    const len = bytes(text.slice(l.start, l.end));
    lengths.push(len);
    offset += len;
    at = l.end;
  }
  return { starts, lengths };
}

/** The type DuckDB's tree gives a literal of class `cls`. */
function typeMatches(cls: string, type: BigJsonValue | undefined): boolean {
  if (!isNode(type)) return false;
  if (cls === 'i') return type.id === 'INTEGER';
  if (cls === 'l') return type.id === 'BIGINT';
  if (cls.startsWith('d')) {
    const [w, s] = cls.slice(1).split('.').map(Number);
    return type.id === 'DECIMAL' && isNode(type.type_info) && type.type_info.width === w && type.type_info.scale === s;
  }
  return type.id === 'VARCHAR';
}

/** Every scalar of `v` as JSON text, except `query_location`s and the value nodes (type and value) in `skip`. */
function scalarsOf(v: BigJsonValue, skip: ReadonlySet<BigJsonValue>, out: Set<string>): void {
  if (Array.isArray(v)) for (const x of v) scalarsOf(x, skip, out);
  else if (isNode(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (k === 'query_location' || skip.has(x)) continue;
      scalarsOf(x, skip, out);
    }
  } else if (typeof v !== 'boolean' && v !== null) out.add(stringifyBigJson(v));
}

/** A parse tree with holes for the literals and locations of texts of one shape. */
export class TreeTemplate {
  private constructor(
    /** The tree's text between holes: one more piece than holes. */
    private readonly pieces: readonly string[],
    private readonly holes: readonly Hole[],
    /** Literals the template holds as written (index → text). */
    private readonly pinned: ReadonlyMap<number, string>,
    /** Byte offset and length of each literal in the learned text. */
    private readonly starts: readonly number[],
    private readonly lengths: readonly number[],
    /** Per literal: an integer only in WHERE clauses (not under any select list), which cannot change the result's names or types. */
    private readonly neutral: readonly boolean[],
  ) {}

  /** The template of `tree`, the tree DuckDB gave for `text` (of shape `shape`); undefined for an error tree. */
  static learn(tree: string, text: string, shape: StatementShape): TreeTemplate | undefined {
    if (tree.includes(MARK)) return undefined;
    const doc = parseBigJson(tree);
    if (!isNode(doc) || doc.error !== false) return undefined;
    const lits = shape.literals;
    const { starts, lengths } = byteSpans(text, lits);
    const textBytes = (starts.at(-1) ?? 0) + (lengths.at(-1) ?? 0) + Buffer.byteLength(text.slice(lits.at(-1)?.end ?? 0));
    const at = new Map(starts.map((s, i) => [s, i]));
    // First pass: the constants that are literals of the text, and where they sit.
    const found = new Map<number, { nodes: BigJsonValue[]; neutral: boolean }>();
    const bad = new Set<number>();
    const visit = (v: BigJsonValue, where: boolean, select: boolean): void => {
      if (Array.isArray(v)) return v.forEach((x) => visit(x, where, select));
      if (!isNode(v)) return;
      const value = v.value;
      if (v.type === 'VALUE_CONSTANT' && isNode(value) && typeof v.query_location === 'number') {
        const i = at.get(v.query_location);
        if (i !== undefined) {
          const l = lits[i] as ShapeLiteral;
          if (value.is_null === false && typeMatches(l.cls, value.type) && value.value !== undefined && stringifyBigJson(value.value) === l.value) {
            const f = found.get(i) ?? { nodes: [], neutral: true };
            f.nodes.push(value);
            f.neutral &&= where && !select && (l.cls === 'i' || l.cls === 'l');
            found.set(i, f);
          } else bad.add(i);
        }
      }
      for (const [k, x] of Object.entries(v)) visit(x, where || k === 'where_clause', select || k === 'select_list');
    };
    visit(doc, false, false);
    // A literal's value seen anywhere but in its constants: the parser used it otherwise too.
    const skip = new Set<BigJsonValue>([...found.values()].flatMap((f) => f.nodes));
    const scalars = new Set<string>();
    scalarsOf(doc, skip, scalars);
    for (const i of [...found.keys()]) if (bad.has(i) || scalars.has((lits[i] as ShapeLiteral).value)) found.delete(i);
    // Second pass: marks in place of the holes, then the text cut at them.
    for (const [i, f] of found) for (const n of f.nodes) if (isNode(n)) n.value = `${MARK}V${i}`;
    const mark = (v: BigJsonValue): void => {
      if (Array.isArray(v)) return v.forEach(mark);
      if (!isNode(v)) return;
      if (typeof v.query_location === 'number' && v.query_location <= textBytes) v.query_location = `${MARK}L${v.query_location}`;
      for (const x of Object.values(v)) mark(x);
    };
    mark(doc);
    const marked = stringifyBigJson(doc);
    const pieces: string[] = [];
    const holes: Hole[] = [];
    let last = 0;
    for (const m of marked.matchAll(HOLE)) {
      pieces.push(marked.slice(last, m.index));
      holes.push(m[1] === 'L' ? { location: Number(m[2]) } : { literal: Number(m[2]) });
      last = m.index + m[0].length;
    }
    pieces.push(marked.slice(last));
    const pinned = new Map<number, string>();
    lits.forEach((l, i) => {
      if (!found.has(i)) pinned.set(i, text.slice(l.start, l.end));
    });
    return new TreeTemplate(pieces, holes, pinned, starts, lengths, lits.map((_, i) => found.get(i)?.neutral === true));
  }

  /** True when `text` (of this template's shape) has the pinned literals as written. */
  matches(text: string, shape: StatementShape): boolean {
    for (const [i, written] of this.pinned) {
      const l = shape.literals[i];
      if (!l || text.slice(l.start, l.end) !== written) return false;
    }
    return true;
  }

  /** DuckDB's tree of `text` (of this template's shape, {@link matches}). */
  fill(text: string, shape: StatementShape): string {
    const { lengths } = byteSpans(text, shape.literals);
    // A location past literal i's start moves by how much the literals up to i grew.
    const moved = (p: number): number => {
      let delta = 0;
      for (let i = 0; i < this.starts.length && (this.starts[i] as number) < p; i++) delta += (lengths[i] as number) - (this.lengths[i] as number);
      return p + delta;
    };
    let out = this.pieces[0] as string;
    this.holes.forEach((h, k) => {
      out += 'location' in h ? String(moved(h.location)) : (shape.literals[h.literal] as ShapeLiteral).value;
      out += this.pieces[k + 1] as string;
    });
    return out;
  }

  /**
   * What the result's names and types of `text` depend on: its shape with every literal written out
   * but the neutral ones (integers only in WHERE clauses). Texts with the same key have the same
   * result schema over the same tables.
   */
  schemaKey(text: string, shape: StatementShape): string {
    let key = '';
    let at = 0;
    shape.literals.forEach((l, i) => {
      key += `${text.slice(at, l.start)}\0${this.neutral[i] ? l.cls : text.slice(l.start, l.end)}\0`;
      at = l.end;
    });
    return key + text.slice(at);
  }
}
