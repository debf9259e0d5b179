/**
 * DuckDB's parse trees of statement texts (`json_serialize_sql`, a DuckDB round trip), kept per
 * text and per shape: a text seen before gives its tree back; a new text of a known shape (the
 * same statement with new literals, sql/statementShape.ts) gets its tree from the shape's template
 * (sql/treeTemplate.ts); only a new shape is parsed by DuckDB.
 */
import { BoundedMap } from '../lib/boundedMap';
import { pgSyntax } from './pgcatalog/pgSyntax';
import { statementShape } from './statementShape';
import { TreeTemplate } from './treeTemplate';

/** A statement's tree and what was parsed. */
export interface ParsedText {
  /** `json_serialize_sql`'s answer (an error tree for a text DuckDB cannot parse). */
  readonly tree: string;
  /** The text DuckDB parsed: the statement with PostgreSQL spellings rewritten (sql/pgcatalog/pgSyntax.ts). */
  readonly text: string;
  /** True when `text` differs from the statement. */
  readonly changed: boolean;
  /**
   * Texts with the same key have the same result names and types over the same tables (they
   * differ only in integers of WHERE clauses: sql/treeTemplate.ts). Absent: no template.
   */
  readonly schemaKey?: string;
}

/** Where a tree came from (for tests and benchmarks). */
export interface ParseCounts {
  /** Trees of texts seen before. */
  text: number;
  /** Trees filled from a shape's template. */
  shape: number;
  /** Trees DuckDB parsed. */
  duckdb: number;
}

/** Templates kept per shape: one per combination of pinned literals seen (sql/treeTemplate.ts). */
const TEMPLATES_PER_SHAPE = 4;

/** Parse trees by text and by shape (LRU, `size` of each). */
export class ParseTrees {
  private readonly byText: BoundedMap<string, ParsedText>;
  private readonly byShape: BoundedMap<string, TreeTemplate[]>;
  readonly counts: ParseCounts = { text: 0, shape: 0, duckdb: 0 };

  /** @param shapes false: every new text is parsed by DuckDB (the templates off). */
  constructor(size: number, private readonly shapes = true) {
    this.byText = new BoundedMap(size);
    this.byShape = new BoundedMap(size);
  }

  /** What is known of `sql` already (its tree, its schema key), without parsing. */
  known(sql: string): ParsedText | undefined {
    return this.byText.touch(sql);
  }

  /** The tree of `sql`; `parse` asks DuckDB for the tree of a text (and throws what it throws). */
  async parse(sql: string, parse: (text: string) => Promise<string>): Promise<ParsedText> {
    const known = this.byText.touch(sql);
    if (known) {
      this.counts.text++;
      return known;
    }
    const { text, changed } = pgSyntax(sql);
    const shape = this.shapes ? statementShape(text) : undefined;
    const key = shape && `${changed ? 'r' : 'p'}${shape.key}`;
    let parsed: ParsedText | undefined;
    if (shape && key !== undefined) {
      const t = this.byShape.touch(key)?.find((x) => x.matches(text, shape));
      if (t) {
        this.counts.shape++;
        parsed = { tree: t.fill(text, shape), text, changed, schemaKey: t.schemaKey(text, shape) };
      }
    }
    if (!parsed) {
      const tree = await parse(text);
      this.counts.duckdb++;
      const t = shape && TreeTemplate.learn(tree, text, shape);
      if (t && shape && key !== undefined) {
        const list = this.byShape.touch(key) ?? [];
        this.byShape.set(key, [t, ...list].slice(0, TEMPLATES_PER_SHAPE));
      }
      parsed = { tree, text, changed, ...(t && shape ? { schemaKey: t.schemaKey(text, shape) } : {}) };
    }
    this.byText.set(sql, parsed);
    return parsed;
  }
}
