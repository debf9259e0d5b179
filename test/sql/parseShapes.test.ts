/**
 * Parse trees by shape (sql/statementShape.ts, sql/treeTemplate.ts, sql/parseTrees.ts): the tree a
 * template gives a new text must be the tree DuckDB's `json_serialize_sql` gives it, compared as
 * JSON, for many randomly generated statements of many shapes (literals of every class, comments,
 * quoted identifiers, casts, subqueries, multi-byte text); literals the template cannot vouch for are
 * pinned; the tokenizer refuses malformed text without throwing.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LocalSql } from '../../local/localSql';
import type { LocalSqlSession } from '../../local/localSqlSession';
import { parseBigJson, stringifyBigJson } from '../../sql/bigJson';
import { ParseTrees } from '../../sql/parseTrees';
import { statementShape } from '../../sql/statementShape';

const local = new LocalSql({ threads: 1 });
let session: LocalSqlSession;

/** DuckDB's tree of `text`. */
async function duck(text: string): Promise<string> {
  const t = await session.query(`SELECT json_serialize_sql('${text.replace(/'/g, "''")}')::VARCHAR AS tree`);
  return String(t.getChildAt(0)?.get(0));
}

/** `tree` as canonical JSON text (the same tree compares equal whatever its number spellings). */
const canonical = (tree: string): string => stringifyBigJson(parseBigJson(tree));

/** A small deterministic generator (xorshift), so a failure reproduces. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

type Gen = (r: () => number) => string;
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
const digits = (r: () => number, n: number): string => Array.from({ length: n }, () => String(Math.floor(r() * 10))).join('');

/** Literal generators by class: each call gives another literal of the same class. */
const LITERALS: Readonly<Record<string, Gen>> = {
  int: (r) => String(Math.floor(r() * 2 ** 31)),
  smallInt: (r) => String(Math.floor(r() * 100)),
  bigint: (r) => String(2n ** 31n + BigInt(Math.floor(r() * 2 ** 52))),
  zeros: (r) => `00${Math.floor(r() * 1000)}`,
  decimal: (r) => `${digits(r, 3)}.${digits(r, 2)}`,
  leadingDot: (r) => `.${digits(r, 3)}`,
  trailingDot: (r) => `${digits(r, 4)}.`,
  exponent: (r) => `${digits(r, 2)}e${Math.floor(r() * 10)}`,
  wide: (r) => `1${digits(r, 30)}`,
  string: (r) => `'${pick(r, ['udp', 'tcp', "it''s", 'a\\b', 'é', '😀x', '', '--x', '/*y*/', '5', "''", '$$'])}${digits(r, Math.floor(r() * 3))}'`,
  eString: (r) => `E'${pick(r, ['x', "it''s", 'ü'])}${digits(r, 2)}'`,
  eEscape: (r) => `E'a\\n${digits(r, 1)}'`,
  dollar: (r) => `$$${pick(r, ["a'b", 'x', 'ß'])}${digits(r, 2)}$$`,
  tagged: (r) => `$t$${pick(r, ['$', 'q'])}${digits(r, 2)}$t$`,
  negative: (r) => `-${Math.floor(r() * 1000)}`,
};

/** Pieces of statements: `#class` marks a literal slot. */
const ITEMS = [
  'ts',
  'x + #int',
  '#smallInt',
  '#string',
  '#decimal AS "d#"',
  'round(#decimal, #smallInt)',
  "CASE WHEN x > #int THEN #string ELSE #eString END",
  '#string::VARCHAR',
  "DATE '2024-01-0#smallInt'",
  'x::DECIMAL(#smallInt, 2)',
  '#negative',
  "'a' || #dollar",
  '(SELECT max(y) FROM t2 WHERE z = #int) AS m',
  'count(*) FILTER (WHERE x > #bigint)',
  'list_value(#int, #int)[#smallInt]',
  'INTERVAL #smallInt DAY',
  'x IN (#int, #zeros, #leadingDot)',
  'x BETWEEN #trailingDot AND #exponent',
  "y LIKE #string ESCAPE '!'",
  '#wide + #tagged::INT',
  '"we""ird #int" /* #int /* nested */ */',
  '#eEscape',
  'strftime(ts, #string) AS "é#"',
];
const WHERES = ['ts >= #int AND ts < #int', "proto = #string", 'dport = #smallInt', 'x > #decimal', '/* 5 */ y <> #dollar', 'z < #bigint -- #int\n', "x = ANY([#int, #int])"];
const TAILS = ['', ' GROUP BY 1', ' ORDER BY #smallInt', ' LIMIT #smallInt OFFSET #int', ' ORDER BY x DESC LIMIT #smallInt'];

/** A statement skeleton: its text with slots. */
function skeleton(r: () => number): string {
  const items = Array.from({ length: 1 + Math.floor(r() * 4) }, () => pick(r, ITEMS));
  const wheres = Array.from({ length: Math.floor(r() * 4) }, () => pick(r, WHERES));
  const cte = r() < 0.2 ? 'WITH c AS (SELECT x FROM t WHERE x > #int) ' : '';
  return `${cte}SELECT ${items.join(', ')} FROM ${cte ? 'c, ' : ''}t${wheres.length > 0 ? ` WHERE ${wheres.join(' AND ')}` : ''}${pick(r, TAILS)}`;
}

/** The skeleton with each slot filled by a new literal of its class. */
const instance = (sk: string, r: () => number): string => sk.replace(/#([A-Za-z]+)?/g, (_, cls: string | undefined) => (cls ? (LITERALS[cls] as Gen)(r) : String(Math.floor(r() * 10))));

const shapes = suite('parse trees by shape');
shapes.before(async () => {
  session = await local.openSession();
});
shapes.after(() => local.close());

shapes('the tree filled from a template is the tree DuckDB gives, for many random statements', async () => {
  const r = rng(17);
  let filled = 0;
  let sameShape = 0;
  for (let k = 0; k < 250; k++) {
    const sk = skeleton(r);
    const trees = new ParseTrees(64);
    const seen = new Set<string>();
    for (let j = 0; j < 3; j++) {
      const sql = instance(sk, r);
      const key = statementShape(sql)?.key;
      if (key !== undefined && seen.has(key)) sameShape++;
      if (key !== undefined) seen.add(key);
      const before = trees.counts.shape;
      const got = await trees.parse(sql, duck);
      const want = await duck(sql);
      if (trees.counts.shape > before) filled++;
      assert.is(canonical(got.tree), canonical(want), `tree of ${sql}`);
    }
  }
  // Most texts of a shape seen before are filled from its template (the rest have pinned literals that changed).
  assert.ok(filled > sameShape / 2, `${filled} of ${sameShape} texts of a known shape filled from templates`);
});

shapes('dashboard statements: new time bounds and ports come from the template, the same tree as DuckDB gives', async () => {
  const trees = new ParseTrees(16);
  const q = (a: number, port: number): string => `SELECT ts, src, dst, sport, bytes FROM flows WHERE ts >= ${a} AND ts < ${a + 60} AND proto = 'udp' AND dport = ${port} AND packets < 1000`;
  await trees.parse(q(1_700_000_000, 22), duck);
  for (const [a, port] of [[1_700_000_007, 22], [1_700_000_120, 443], [9, 8080]] as const) {
    const got = await trees.parse(q(a, port), duck);
    assert.is(canonical(got.tree), canonical(await duck(q(a, port))));
  }
  assert.equal(trees.counts, { text: 0, shape: 3, duckdb: 1 });
  // A literal of another class (BIGINT) is another shape: DuckDB parses it.
  await trees.parse(q(5_000_000_000, 22), duck);
  assert.is(trees.counts.duckdb, 2);
  // The same text again: its tree as kept.
  await trees.parse(q(9, 8080), duck);
  assert.is(trees.counts.text, 1);
});

shapes('schema keys: texts differing only in integers of WHERE share one; any other literal changes it', async () => {
  const trees = new ParseTrees(16);
  const key = async (sql: string): Promise<string | undefined> => (await trees.parse(sql, duck)).schemaKey;
  const base = await key('SELECT count(*) AS n FROM flows WHERE ts >= 10 AND ts < 20 AND dport = 22');
  assert.ok(base !== undefined);
  assert.is(await key('SELECT count(*) AS n FROM flows WHERE ts >= 11 AND ts < 2000 AND dport = 443'), base);
  // A string in WHERE can fail a cast for one value and not another: kept in the key.
  const s1 = await key("SELECT count(*) FROM flows WHERE proto = 'udp' AND ts > 5");
  assert.is.not(await key("SELECT count(*) FROM flows WHERE proto = 'tcp' AND ts > 5"), s1);
  // A literal of the select list names the column (`(x + 1)`) and can type it (round's scale).
  const r1 = await key('SELECT round(x, 1), x + 1 FROM flows WHERE ts > 5');
  assert.is.not(await key('SELECT round(x, 2), x + 1 FROM flows WHERE ts > 5'), r1);
  assert.is.not(await key('SELECT round(x, 1), x + 2 FROM flows WHERE ts > 5'), r1);
  // A WHERE inside a select item is part of that item's name.
  const w1 = await key('SELECT (SELECT max(x) FROM flows WHERE ts > 5) FROM flows WHERE ts > 1');
  assert.is.not(await key('SELECT (SELECT max(x) FROM flows WHERE ts > 6) FROM flows WHERE ts > 1'), w1);
});

shapes('literals the tree does not hold as constants are pinned: the template serves only those values', async () => {
  const trees = new ParseTrees(16);
  // The DECIMAL's width and scale are in the cast's type, not constants; -5 is folded into one constant at the minus.
  for (const sql of ['SELECT x::DECIMAL(10, 2), -5 FROM t WHERE x > 1', 'SELECT x::DECIMAL(12, 2), -5 FROM t WHERE x > 2', 'SELECT x::DECIMAL(10, 2), -6 FROM t WHERE x > 3', 'SELECT x::DECIMAL(10, 2), -5 FROM t WHERE x > 4']) {
    const got = await trees.parse(sql, duck);
    assert.is(canonical(got.tree), canonical(await duck(sql)), sql);
  }
  assert.equal(trees.counts, { text: 0, shape: 1, duckdb: 3 });
  // Adjacent strings on two lines are one constant: neither literal is substituted.
  const two = new ParseTrees(4);
  await two.parse("SELECT 'a'\n'b' FROM t", duck);
  const got = await two.parse("SELECT 'c'\n'd' FROM t", duck);
  assert.is(canonical(got.tree), canonical(await duck("SELECT 'c'\n'd' FROM t")));
  assert.is(two.counts.shape, 0);
});

shapes('the tokenizer: literal classes, and malformed text refused without throwing', () => {
  const s = statementShape("SELECT 5, 5.0, '5', 5000000000, .5, 1e3, 0x10, $1, E'a', E'\\n', $$d$$, \"7\" -- 8\n/* 9 */ FROM t");
  assert.ok(s);
  assert.equal(s.literals.map((l) => [l.cls, l.value]), [['i', '5'], ['d2.1', '50'], ['s', '"5"'], ['l', '5000000000'], ['d1.1', '5'], ['e', '"a"'], ['$', '"d"']]);
  for (const bad of ["SELECT 'x", 'SELECT "x', 'SELECT /* x', 'SELECT /* /* */ x', 'SELECT $q$x', "SELECT E'x\\'", 'SELECT \0 1']) assert.is(statementShape(bad), undefined, bad);
  const r = rng(5);
  const alphabet = ["'", '"', '$', '$$', '--', '/*', '*/', '\n', 'E', 'e', '1', '.', '5e', 'x', ' ', '\\', 'é', '&', 'U', '0x'];
  for (let k = 0; k < 2000; k++) {
    const text = Array.from({ length: 1 + Math.floor(r() * 12) }, () => pick(r, alphabet)).join('');
    const shape = statementShape(text);
    if (shape) for (const l of shape.literals) assert.ok(l.start >= 0 && l.end <= text.length && l.start < l.end, text);
  }
});

shapes.run();
