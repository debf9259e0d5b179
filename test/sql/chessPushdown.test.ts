/**
 * Chess pushdown: SAN equality as the move code, FEN equality and fen_occupied / fen_turn as
 * masked comparisons on the packed position (stored forms computed independently here from
 * docs/schema.md's layout); what stays local; and over records of real games (chess.js) filtered
 * by the real scan kernel, that the pushed filters return exactly the rows the local predicate
 * keeps — including a position packed with bits the decoder ignores.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordCodec } from '../../engine-rs/codec';
import { decodeRecords, decodeRecordsSync } from '../../engine-rs/decode';
import { evaluateFilter, ScanFilter } from '../../engine-rs/scan';
import { Schema } from '../../engine-rs/schema';
import { filterJson } from '../../query/filter';
import { LocalSql } from '../../local/localSql';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import type { Plan } from '../../sql/planner';
import { SqlEngine } from '../../sql/sqlEngine';
import { playGames, type Ply } from './chessGames';

const chess = Schema.parse(readFileSync(path.resolve(__dirname, '../../up/demo/chess.schema.json'), 'utf8'));
const lines = Schema.parse({
  id: 'lines', name: 'Lines', record_size: 17, time_field: 'ts',
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'moves', offset: 8, size: 8, type: 'bytes', array: { element: 'chess_move', count: 4 } },
    { name: 'ok', offset: 16, size: 1, type: 'boolean' },
  ],
});
const T0 = 1_700_000_000;
const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const AFTER_E4 = 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1';

/** docs/schema.md's packing, written out here so the test does not trust the code under test. */
function pack(fen: string): Buffer {
  const [placement, side, castling, ep, half = '0', full = '1'] = fen.split(' ') as [string, string, string, string, string?, string?];
  const out = Buffer.alloc(30);
  const codes: number[] = [];
  placement.split('/').forEach((row, i) => {
    let file = 0;
    for (const ch of row) {
      if (/\d/.test(ch)) {
        file += Number(ch);
        continue;
      }
      const sq = (7 - i) * 8 + file++;
      out[sq >> 3] = (out[sq >> 3] as number) | (1 << (sq & 7));
      codes[sq] = 'PNBRQK'.indexOf(ch.toUpperCase()) + 1 + (ch === ch.toLowerCase() ? 8 : 0);
    }
  });
  const pieces = codes.flatMap((c) => (c === undefined ? [] : [c]));
  pieces.forEach((c, n) => (out[14 + (n >> 1)] = (out[14 + (n >> 1)] as number) | (n % 2 === 0 ? c << 4 : c)));
  out[8] = (side === 'b' ? 1 : 0) | [...castling].reduce((a, ch) => a | ({ K: 2, Q: 4, k: 8, q: 16 }[ch] ?? 0), 0);
  out[9] = ep === '-' ? 0 : 0x80 | ((Number(ep[1]) - 1) * 8 + ep.charCodeAt(0) - 97);
  out.writeUInt16BE(Number(half), 10);
  out.writeUInt16BE(Number(full), 12);
  return out;
}
const hex = (bytes: Record<number, number>): string => Buffer.from(Array.from({ length: 30 }, (_, i) => bytes[i] ?? 0)).toString('hex');

const noFetch: DatasetFetcher = { fetch: () => Promise.reject(new Error('not in this test')) };
const planLocal = new LocalSql({ threads: 1 });
const planner = new SqlEngine(new Catalog([chess, lines]), planLocal, noFetch, { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 0, qos: 1 }, () => T0 + 3600);
const filtersOf = (p: Plan): unknown => p.reads[0]?.subQueries.map((s) => s.filters);
const W = `ts >= ${T0}`;

const pd = suite('chess pushdown: the forms');
pd.after(() => planLocal.close());

pd('SAN equality, <>, IN and list_contains push down as move codes; $n parameters too', async () => {
  const nf3 = String(new RecordCodec(chess).encodeRecord({ move: 'Nf3' }).record.readUInt16BE(18));
  const p = await planner.plan(`SELECT * FROM chess WHERE ${W} AND move = 'Nf3' AND 'O-O' <> move AND move IN ('e4', 'exd8=Q+')`);
  const code = (san: string): string => String(new RecordCodec(chess).encodeRecord({ move: san }).record.readUInt16BE(18));
  assert.equal(filtersOf(p), [[{ field: 'ts', op: 'ge', value: String(T0) }, { field: 'move', op: 'eq', value: nf3 }, { field: 'move', op: 'ne', value: code('O-O') }, { field: 'move', op: 'in', values: [code('e4'), code('exd8=Q+')] }]]);
  // e4: destination e4 = 28, form 1 (the pawn push): (1 << 8) | 28, as docs/schema.md lays it out.
  assert.is(code('e4'), String((1 << 8) | 28));
  const q = await planner.plan(`SELECT * FROM chess WHERE ${W} AND move = $1`, ['Nf3']);
  assert.equal(filtersOf(q), [[{ field: 'ts', op: 'ge', value: String(T0) }, { field: 'move', op: 'eq', value: nf3 }]]);
  const l = await planner.plan(`SELECT * FROM lines WHERE ${W} AND list_contains(moves, 'Nf3') AND NOT list_contains(moves, 'e4') AND ok = false`);
  assert.equal(filtersOf(l), [[{ field: 'ts', op: 'ge', value: String(T0) }, { field: 'moves', op: 'list_contains', value: nf3 }, { field: 'moves', op: 'not_list_contains', value: code('e4') }, { field: 'ok', op: 'eq', value: 'false' }]], 'TRUE/FALSE (parsed as casts of t/f) push down on boolean columns too');
});

pd('FEN equality pushes down as the packed position, masking only the bits the decoder ignores', async () => {
  const p = await planner.plan(`SELECT * FROM chess WHERE ${W} AND position = '${START}' AND '${AFTER_E4}' = position`);
  const [, start, e4] = (filtersOf(p) as { field: string; op: string; value: string; mask: string }[][])[0]!;
  assert.equal(start, { field: 'position', op: 'masked_eq', value: pack(START).toString('hex'), mask: `${'ff'.repeat(8)}1f${'ff'.repeat(21)}` });
  assert.is(e4!.value, pack(AFTER_E4).toString('hex'));
  // Two kings: two piece nibbles are read, the rest of the board bytes never.
  const kings = await planner.plan(`SELECT * FROM chess WHERE ${W} AND position = '8/8/8/8/8/8/8/4K2k b - - 99 65'`);
  const k = (filtersOf(kings) as { value: string; mask: string }[][])[0]![1]!;
  assert.is(k.value, pack('8/8/8/8/8/8/8/4K2k b - - 99 65').toString('hex'));
  assert.is(k.mask, `${'ff'.repeat(8)}1f${'ff'.repeat(5)}ff${'00'.repeat(15)}`);
});

pd('fen_occupied (bare, NOT, = FALSE, <> TRUE) and fen_turn (= and <>, either side) push down as one-bit masked comparisons', async () => {
  const p = await planner.plan(`SELECT * FROM chess c WHERE ${W} AND fen_occupied(position, 'e4') AND NOT fen_occupied(c.position, 'a1') AND fen_occupied(position, 'h8') = false
    AND true <> fen_occupied(position, 'd5') AND fen_turn(position) = 'b' AND 'w' <> fen_turn(position) AND FEN_TURN(position) = 'w'`);
  const e4 = { 3: 1 << 4 };
  assert.equal(filtersOf(p), [[
    { field: 'ts', op: 'ge', value: String(T0) },
    { field: 'position', op: 'masked_eq', value: hex(e4), mask: hex(e4) },
    { field: 'position', op: 'masked_eq', value: hex({}), mask: hex({ 0: 1 }) },
    { field: 'position', op: 'masked_eq', value: hex({}), mask: hex({ 7: 0x80 }) },
    { field: 'position', op: 'masked_eq', value: hex({}), mask: hex({ 4: 1 << 3 }) },
    { field: 'position', op: 'masked_eq', value: hex({ 8: 1 }), mask: hex({ 8: 1 }) },
    { field: 'position', op: 'masked_eq', value: hex({ 8: 1 }), mask: hex({ 8: 1 }) },
    { field: 'position', op: 'masked_eq', value: hex({}), mask: hex({ 8: 1 }) },
  ]]);
});

pd('what stays local: SAN order, aliases and non-SAN, non-canonical FENs, FEN <> and IN, the other functions, bad squares and sides, non-chess columns', async () => {
  const p = await planner.plan(`SELECT * FROM chess WHERE ${W} AND move < 'e4' AND move = '0-0' AND move = 'Nf3!' AND move = '' AND move = 'e9'
    AND position = '8/8/8/8/8/8/8/4K2k b - -' AND position = '${START.replace('KQkq', 'kqKQ')}' AND position <> '${START}' AND position IN ('${START}') AND position = ''
    AND fen_piece(position, 'e4') = 'P' AND fen_castling(position) = 'KQkq' AND fen_halfmove(position) = 0 AND fen_piece_count(position) = 32 AND san_code(move) = 1045
    AND fen_occupied(position, 'z9') AND fen_occupied(position, 'E4') AND fen_turn(position) = 'white' AND fen_occupied(white, 'e4') AND fen_occupied(position, eco)
    AND fen_occupied(position, 'e4') = NULL AND (fen_occupied(position, 'e4') OR fen_turn(position) = 'b') AND fen_turn(position) < 'w'`);
  assert.equal(filtersOf(p), [[{ field: 'ts', op: 'ge', value: String(T0) }]]);
});

// ---- Over records: the kernel with the pushed filters returns exactly what DuckDB keeps. ----

const plies = playGames(10, 70, 7);
const codec = new RecordCodec(chess);
const valuesOf = (p: Ply, i: number): Record<string, string> => ({ ts: String(T0 + i), game_id: String(p.game), ply: String(p.ply), move: p.san, position: p.fen, white_elo: '1500', black_elo: '1500', white: 'w', black: 'b', eco: 'C20' });
const base = plies.map((p, i) => codec.encodeRecord(valuesOf(p, i)).record);
// One more record: the start position packed with stray bits a foreign writer might leave (flag
// bits 5-7, nibbles past the last piece); it still reads as START.
const stray = Buffer.from(codec.encodeRecord({ ...valuesOf(plies[0]!, plies.length), move: 'e4', position: START }).record);
stray[20 + 8] = (stray[20 + 8] as number) | 0xe0;
const allRecords = Buffer.concat([...base, stray]);
const stats = { returned: 0 };
const fetcher: DatasetFetcher = {
  async fetch(read, onBatch) {
    const window = ScanFilter.compile(chess, JSON.stringify([{ filters: [{ field: 'ts', op: 'between', values: [String(read.startTime), String(read.endTime)] }] }]));
    let hits = evaluateFilter(window, allRecords);
    if (read.subQueries.length > 0) hits = evaluateFilter(ScanFilter.compile(chess, JSON.stringify(read.subQueries.map((s) => ({ filters: s.filters.map(filterJson) })))), hits);
    stats.returned += hits.length / chess.recordSize;
    if (hits.length > 0) await onBatch(await decodeRecords(chess, hits));
    return { batchErrors: [], missingBatches: 0 };
  },
};
const local = new LocalSql({ threads: 1 });
const engine = new SqlEngine(new Catalog([chess]), local, fetcher, { lookbackSec: 3600, timeoutMs: 30_000, maxRows: 0, qos: 1 }, () => T0 + 3600);

const kr = suite('chess pushdown: over records filtered by the scan kernel');
kr.after(() => local.close());

kr('the stray-bit record reads as the start position', () => {
  assert.is(decodeRecordsSync(chess, stray).getChild('position')?.get(0), START);
});

kr('each pushed rule returns from the "nodes" exactly the rows the local predicate keeps (chess.js counts)', async () => {
  const all = [...plies, { ...plies[0]!, san: 'e4', fen: START, pieces: new Map(), turn: 'w' as const }];
  const sample = plies[25]!;
  const cases: [string, (p: Ply, i: number) => boolean, boolean][] = [
    ["move = 'Nf3'", (p) => p.san === 'Nf3', true],
    [`move IN ('e4', '${sample.san}')`, (p) => p.san === 'e4' || p.san === sample.san, true],
    [`position = '${START}'`, (p) => p.fen === START, true],
    [`position = '${sample.fen}'`, (p) => p.fen === sample.fen, true],
    ["fen_occupied(position, 'e4')", (p, i) => i < plies.length && p.pieces.has('e4'), true],
    ["NOT fen_occupied(position, 'e4')", (p, i) => i === plies.length || !p.pieces.has('e4'), true],
    ["fen_occupied(position, 'g1') = false AND fen_turn(position) = 'b'", (p, i) => i < plies.length && !p.pieces.has('g1') && p.turn === 'b', true],
    ["fen_turn(position) = 'w'", (p) => p.turn === 'w', true],
    ["fen_piece(position, 'e4') = 'P'", (p, i) => i < plies.length && p.pieces.get('e4') === 'P', false],
  ];
  for (const [where, want, pushed] of cases) {
    const n = all.filter(want).length;
    assert.ok(n > 0 && n < all.length, `${where}: a predicate that selects (${n} of ${all.length})`);
    stats.returned = 0;
    const r = await engine.execute(`SELECT ts FROM chess WHERE ${W} AND ${where} ORDER BY ts`);
    assert.equal(r.table.toArray().map((x) => Number(x.ts)), all.flatMap((p, i) => (want(p, i) ? [T0 + i] : [])), where);
    assert.is(stats.returned, pushed ? n : all.length, `${where}: rows the kernel returned`);
  }
});

pd.run();
kr.run();
