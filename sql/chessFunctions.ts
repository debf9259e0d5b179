/**
 * The chess SQL functions of hd_sql (the reference's presentation rules: fen_piece, fen_castling,
 * fen_en_passant, fen_halfmove, fen_fullmove, fen_piece_count, fen_occupied, fen_turn, san_code,
 * san_text), as DuckDB macros over the text chess columns present (SAN, six-field FEN), so no
 * JavaScript runs per row. They are created once per DuckDB instance, in its main schema, where
 * every session (connection) sees them; docs/sql.md ("Chess") says what each returns.
 *
 * san_code / san_text look moves up in a table of every move code the engine's codec decodes
 * (`allSanCodes`), so the SQL functions and the columns can never disagree.
 */
import * as arrow from 'apache-arrow';
import type { LocalSqlSession } from '../local/localSqlSession';
import { allSanCodes, sanEncodes } from './chessCodec';

/**
 * The table san_code / san_text read: in a schema of its own, out of the `main` schema drivers list
 * tables of; columns prefixed so they never shadow a user's column inside the macros' subqueries.
 */
export const CHESS_MOVES_TABLE = 'hd_chess.moves';

/** The functions the macros define, for docs and tests. */
export const CHESS_FUNCTIONS = ['fen_piece', 'fen_occupied', 'fen_turn', 'fen_castling', 'fen_en_passant', 'fen_halfmove', 'fen_fullmove', 'fen_piece_count', 'san_code', 'san_text'] as const;

const memo = new Map<number, string>();
/**
 * A regular expression for piece-placement text covering exactly `n` squares of one rank (piece
 * letters count one, digits their value): so a whole FEN is checked by one regular-expression
 * match on its text (`hd_fen_ok`).
 */
function squares(n: number): string {
  if (n === 0) return '';
  let re = memo.get(n);
  if (re === undefined) {
    const alternatives: string[] = [];
    for (let k = 1; k <= n; k++) alternatives.push((k === 1 ? '[pnbrqkPNBRQK1]' : String(k)) + squares(n - k));
    re = `(?:${alternatives.join('|')})`;
    memo.set(n, re);
  }
  return re;
}
// A FEN as the columns present it, or as a user writes one (4 to 6 fields, like the codec takes).
const FEN_RE = `(?:${squares(8)}/){7}${squares(8)} [wb] (?:-|KQ?k?q?|Qk?q?|kq?|q) (?:-|[a-h][1-8])(?: [0-9]{1,5}(?: [0-9]{1,5})?)?`;

/** The macros, in creation order (helpers first). Arguments: `p` a FEN, `sq` a square, `piece` a piece letter, `m` a SAN, `c` a move code. */
export const CHESS_MACROS: readonly string[] = [
  // TRUE when p is a FEN; NULL for NULL; otherwise an error that names it. (Checked apart from the
  // reading so DuckDB reads fields straight from p: a CASE yielding p itself costs a copy a row.)
  `CREATE OR REPLACE MACRO hd_fen_ok(p) AS CASE WHEN p IS NULL THEN NULL WHEN regexp_full_match(p, '${FEN_RE}') THEN true ELSE error('not a FEN position: ' || p || ' (expected a Forsyth-Edwards string such as rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1)') END`,
  // Field i of a FEN (1 placement, 2 side, 3 castling, 4 en passant, 5 and 6 clocks), '' when absent.
  `CREATE OR REPLACE MACRO hd_fen_field(p, i) AS CASE WHEN hd_fen_ok(p) THEN split_part(p, ' ', i) END`,
  // The file index (a = 0) of a square; NULL for NULL; otherwise an error that names it.
  `CREATE OR REPLACE MACRO hd_fen_file(sq) AS CASE WHEN sq IS NULL THEN NULL WHEN regexp_full_match(sq, '[a-h][1-8]') THEN ascii(substr(sq, 1, 1)) - 97 ELSE error('not a square: ' || sq || ' (expected a1 to h8, lower case)') END`,
  // The placement text of the square's rank (ranks are listed 8 to 1).
  `CREATE OR REPLACE MACRO hd_fen_rank(p, sq) AS split_part(hd_fen_field(p, 1), '/', 57 - ascii(substr(sq, 2, 1)))`,
  // The rank's placement with each digit written as that many '.': the square's letter is then
  // one substr at its file (a rank of a checked FEN always spans 8 squares). A regular expression
  // per square cost about 1 µs a row; this is several times cheaper.
  `CREATE OR REPLACE MACRO hd_fen_squares(p, sq) AS ${[8, 7, 6, 5, 4, 3, 2, 1].reduce((e, d) => `replace(${e}, '${d}', '${'.'.repeat(d)}')`, 'hd_fen_rank(p, sq)')}`,
  `CREATE OR REPLACE MACRO fen_piece(p, sq) AS nullif(substr(hd_fen_squares(p, sq), hd_fen_file(sq) + 1, 1), '.')`,
  `CREATE OR REPLACE MACRO fen_occupied(p, sq) AS substr(hd_fen_squares(p, sq), hd_fen_file(sq) + 1, 1) <> '.'`,
  `CREATE OR REPLACE MACRO fen_turn(p) AS hd_fen_field(p, 2)`,
  `CREATE OR REPLACE MACRO fen_castling(p) AS hd_fen_field(p, 3)`,
  `CREATE OR REPLACE MACRO fen_en_passant(p) AS nullif(hd_fen_field(p, 4), '-')`,
  `CREATE OR REPLACE MACRO fen_halfmove(p) AS CASE WHEN hd_fen_ok(p) THEN CAST(coalesce(nullif(split_part(p, ' ', 5), ''), '0') AS INTEGER) END`,
  `CREATE OR REPLACE MACRO fen_fullmove(p) AS CASE WHEN hd_fen_ok(p) THEN CAST(coalesce(nullif(split_part(p, ' ', 6), ''), '1') AS INTEGER) END`,
  `CREATE OR REPLACE MACRO fen_piece_count(p) AS CAST(length(translate(hd_fen_field(p, 1), '12345678/', '')) AS INTEGER),
    (p, piece) AS CASE WHEN piece IS NULL THEN NULL
      WHEN piece IN ('P', 'N', 'B', 'R', 'Q', 'K', 'p', 'n', 'b', 'r', 'q', 'k') THEN CAST(length(hd_fen_field(p, 1)) - length(replace(hd_fen_field(p, 1), piece, '')) AS INTEGER)
      ELSE error('not a piece letter: ' || piece || ' (expected one of PNBRQK for white, pnbrqk for black)') END`,
  `CREATE OR REPLACE MACRO san_code(m) AS (SELECT hd_chess_code FROM ${CHESS_MOVES_TABLE} WHERE hd_chess_san = m)`,
  `CREATE OR REPLACE MACRO san_text(c) AS CASE WHEN c IS NULL OR c = 0 THEN NULL
      WHEN c BETWEEN 1 AND 65535 THEN coalesce((SELECT hd_chess_san FROM ${CHESS_MOVES_TABLE} WHERE hd_chess_code = c AND hd_chess_canonical), '?')
      ELSE error('not a move code: ' || c || ' (expected 0 to 65535)') END`,
];

/** `0-0` and `0-0-0` (with their check suffixes): SAN the codec takes that no column presents. */
function aliases(): { san: string; code: number }[] {
  const out: { san: string; code: number }[] = [];
  const byText = new Map(allSanCodes().map((x) => [x.san, x.code]));
  for (const [alias, san] of [['0-0', 'O-O'], ['0-0-0', 'O-O-O']] as const) {
    for (const check of ['', '+', '#']) {
      const code = byText.get(san + check);
      if (code !== undefined && sanEncodes(alias + check)) out.push({ san: alias + check, code });
    }
  }
  return out;
}

/** Creates the move table and the macros through `session` (its connection writes the instance's shared catalog). */
export async function installChessFunctions(session: LocalSqlSession): Promise<void> {
  const codes = allSanCodes();
  const extra = aliases();
  const load = 'hd_chess_moves_load';
  await session.register(
    load,
    new arrow.Table({
      hd_chess_code: arrow.vectorFromArray([...codes.map((x) => x.code), ...extra.map((x) => x.code)], new arrow.Int32()),
      hd_chess_san: arrow.vectorFromArray([...codes.map((x) => x.san), ...extra.map((x) => x.san)], new arrow.Utf8()),
      hd_chess_canonical: arrow.vectorFromArray([...codes.map(() => true), ...extra.map(() => false)], new arrow.Bool()),
    }),
  );
  await session.query('CREATE SCHEMA IF NOT EXISTS hd_chess');
  await session.query(`CREATE OR REPLACE TABLE ${CHESS_MOVES_TABLE} AS SELECT * FROM temp.main.${load}`);
  await session.park(load, { dropAbove: 0 }); // dropped, and forgotten by the session (which may be reused)
  for (const m of CHESS_MACROS) await session.query(m);
}

const installed = new WeakMap<object, Promise<void>>();

/**
 * Makes sure the chess functions exist in the DuckDB instance `owner` (the LocalSql) stands for,
 * installing them through `session` the first time. A failed install is tried again next time.
 */
export async function ensureChessFunctions(owner: object, session: LocalSqlSession): Promise<void> {
  let p = installed.get(owner);
  if (!p) {
    p = installChessFunctions(session);
    installed.set(owner, p);
    p.catch(() => installed.delete(owner));
  }
  await p;
}
