/**
 * The chess SQL functions (fen_piece, fen_occupied, fen_turn, fen_castling, fen_en_passant,
 * fen_halfmove, fen_fullmove, fen_piece_count, san_code, san_text) through hd_sql's engine, checked
 * against chess.js on real positions of random legal games; SAN ↔ code against the engine's codec
 * over every code; NULLs and bad arguments.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordCodec } from '../../engine-rs/codec';
import { decodeRecordsSync } from '../../engine-rs/decode';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { CHESS_FUNCTIONS } from '../../sql/chessFunctions';
import { SqlEngine } from '../../sql/sqlEngine';
import { SqlError } from '../../sql/sqlError';
import { playGames, SQUARES } from './chessGames';

const chessSchema = Schema.parse(readFileSync(path.resolve(__dirname, '../../up/demo/chess.schema.json'), 'utf8'));
const noFetch: DatasetFetcher = { fetch: () => Promise.reject(new Error('not in this test')) };
const local = new LocalSql({ threads: 1 });
const engine = new SqlEngine(new Catalog([chessSchema]), local, noFetch, { lookbackSec: 3600, timeoutMs: 60_000, maxRows: 0, qos: 1 });
const plies = playGames(12, 80);
const codec = new RecordCodec(chessSchema);

/** The FEN a chess_fen column presents for `fen` (encoded and decoded by the engine's codec). */
function presented(fen: string): string {
  const { record, errors } = codec.encodeRecord({ position: fen });
  assert.equal(errors, [], fen);
  return String(decodeRecordsSync(chessSchema, record).getChild('position')?.get(0));
}

const rows = async (sql: string): Promise<Record<string, unknown>[]> => (await engine.execute(sql)).table.toArray().map((r) => r.toJSON() as Record<string, unknown>);
const values = (): string => plies.map((p, i) => `(${i}, '${presented(p.fen)}', '${p.san}')`).join(', ');

const fn = suite('chess SQL functions against chess.js');
fn.after(() => local.close());

fn('fen_piece and fen_occupied: every square of every position', async () => {
  assert.ok(plies.length > 300, `${plies.length} positions`);
  const got = await rows(`SELECT i, sq, fen_piece(p, sq) AS piece, fen_occupied(p, sq) AS occ FROM (VALUES ${values()}) v(i, p, m), (SELECT unnest(['${SQUARES.join("','")}']) AS sq) s ORDER BY i, sq`);
  assert.is(got.length, plies.length * 64);
  let pieces = 0;
  for (const r of got) {
    const want = plies[Number(r.i)]!.pieces.get(String(r.sq)) ?? null;
    if (r.piece !== want || r.occ !== (want !== null)) assert.unreachable(`position ${String(r.i)} (${plies[Number(r.i)]!.fen}) square ${String(r.sq)}: got ${String(r.piece)}/${String(r.occ)}, chess.js says ${String(want)}`);
    if (want) pieces++;
  }
  assert.ok(pieces > 1000);
});

fn('fen_turn, fen_castling, fen_en_passant, fen_halfmove, fen_fullmove, fen_piece_count', async () => {
  const got = await rows(`SELECT i, fen_turn(p) AS turn, fen_castling(p) AS castling, fen_en_passant(p) AS ep, fen_halfmove(p) AS half, fen_fullmove(p) AS full,
    fen_piece_count(p) AS n, fen_piece_count(p, 'P') AS wp, fen_piece_count(p, 'q') AS bq, fen_piece_count(p, 'K') AS wk FROM (VALUES ${values()}) v(i, p, m) ORDER BY i`);
  const count = (m: ReadonlyMap<string, string>, letter?: string): number => [...m.values()].filter((x) => letter === undefined || x === letter).length;
  let eps = 0;
  let castlingsLost = 0;
  for (const r of got) {
    const p = plies[Number(r.i)]!;
    assert.equal(r, { i: r.i, turn: p.turn, castling: p.castling, ep: p.enPassant, half: p.halfmove, full: p.fullmove, n: count(p.pieces), wp: count(p.pieces, 'P'), bq: count(p.pieces, 'q'), wk: 1 }, p.fen);
    if (p.enPassant) eps++;
    if (p.castling !== 'KQkq') castlingsLost++;
  }
  assert.ok(eps > 0 && castlingsLost > 0, `the games reach en passant targets (${eps}) and lose castling rights (${castlingsLost})`);
});

fn('san_code is the stored move code (the codec\'s), san_text reads it back, over every code', async () => {
  const got = await rows(`SELECT i, m, san_code(m) AS code, san_text(san_code(m)) AS back FROM (VALUES ${values()}) v(i, p, m) ORDER BY i`);
  for (const r of got) {
    const { record } = codec.encodeRecord({ move: String(r.m) });
    assert.is(r.code, record.readUInt16BE(18), String(r.m));
    assert.is(r.back, r.m);
  }
  // Every code: san_text is what a chess_move column presents for it; san_code inverts it.
  const probe = Buffer.alloc(65536 * chessSchema.recordSize);
  for (let c = 0; c < 65536; c++) probe.writeUInt16BE(c, c * chessSchema.recordSize + 18);
  const col = decodeRecordsSync(chessSchema, probe).getChild('move');
  const known = [...Array(65536).keys()].filter((c) => c > 0 && col?.get(c) !== '?').length;
  const [all] = await rows(`WITH t AS MATERIALIZED (SELECT c, san_text(c) AS s FROM range(1, 65536) r(c)), u AS (SELECT c, s, san_code(s) AS back FROM t)
    SELECT count(*) FILTER (WHERE s <> '?') AS known, count(*) FILTER (WHERE s <> '?' AND back IS DISTINCT FROM c) AS bad, count(*) FILTER (WHERE s = '?') AS unknown FROM u`);
  assert.equal(all, { known: BigInt(known), bad: 0n, unknown: BigInt(65535 - known) });
  const sample = await rows('SELECT san_text(c) AS s, c FROM range(1, 65536, 97) r(c) ORDER BY c');
  for (const r of sample) assert.is(r.s, col?.get(Number(r.c)), `code ${String(r.c)}`);
  const [x] = await rows("SELECT san_code('0-0') AS a, san_code('O-O') AS b, san_code('0-0-0+') AS c, san_code('O-O-O+') AS d, san_code('Nf3!') AS e, san_text(0) AS f");
  assert.equal(x, { a: x!.b, b: x!.b, c: x!.d, d: x!.d, e: null, f: null }, '0-0 is accepted for O-O; annotations are not SAN; code 0 is no move');
});

fn('NULL positions and moves give NULL; four-field FENs read their clocks as 0 1', async () => {
  const [r] = await rows(`SELECT fen_piece(NULL, 'e4') a, fen_occupied(NULL, 'e4') b, fen_turn(NULL) c, fen_castling(NULL) d, fen_en_passant(NULL) e, fen_halfmove(NULL) f,
    fen_fullmove(NULL) g, fen_piece_count(NULL) h, fen_piece_count(NULL, 'P') i, san_code(NULL) j, san_text(NULL) k, fen_piece('8/8/8/8/8/8/8/4K2k b - -', NULL) l,
    fen_halfmove('8/8/8/8/8/8/8/4K2k b - -') m, fen_fullmove('8/8/8/8/8/8/8/4K2k b - -') n, fen_piece('8/8/8/8/8/8/8/4K2k b - -', 'h1') o`);
  assert.equal(r, { a: null, b: null, c: null, d: null, e: null, f: null, g: null, h: null, i: null, j: null, k: null, l: null, m: 0, n: 1, o: 'k' });
});

fn('bad arguments fail the statement with a message naming the argument', async () => {
  const F = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
  const cases: [string, RegExp][] = [
    [`SELECT fen_piece('${F}', 'e9')`, /not a square: e9/],
    [`SELECT fen_occupied('${F}', 'E4')`, /not a square: E4/],
    [`SELECT fen_piece_count('${F}', 'x')`, /not a piece letter: x/],
    [`SELECT fen_turn('rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1')`, /not a FEN position/],
    [`SELECT fen_piece('rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1', 'a1')`, /not a FEN position/],
    [`SELECT fen_castling('${F.replace('KQkq', 'kK')}')`, /not a FEN position/],
    ["SELECT fen_turn('')", /not a FEN position/],
    ['SELECT san_text(70000)', /not a move code: 70000/],
  ];
  for (const [sql, msg] of cases) {
    await engine.execute(sql).then(
      () => assert.unreachable(sql),
      (err: SqlError) => {
        assert.instance(err, SqlError);
        assert.is(err.kind, 'query_failed', sql);
        assert.match(err.message, msg);
      },
    );
  }
});

fn('every function the reference names exists, for Describe too (the SQL wire\'s prepared statements)', async () => {
  const s = await engine.describe('SELECT fen_turn($1) AS t, fen_halfmove($1) AS h, fen_occupied($1, $2) AS o, san_code($3) AS c', 3);
  assert.equal(s.fields.map((f) => `${f.name}:${String(f.type)}`), ['t:Utf8', 'h:Int32', 'o:Bool', 'c:Int32']);
  const names = await rows(`SELECT DISTINCT function_name AS f FROM duckdb_functions() WHERE function_type = 'macro' AND function_name IN ('${CHESS_FUNCTIONS.join("','")}') ORDER BY f`);
  assert.equal(names.map((r) => r.f), [...CHESS_FUNCTIONS].sort(), 'every function the reference names is a macro');
});

fn.run();
