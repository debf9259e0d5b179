/**
 * Chess predicates that push down (the reference's pushdown table: equality on chess_move and
 * chess_fen columns; fen_occupied and fen_turn as masked comparisons on the packed position), as
 * HDQuery filters in the stored form (docs/schema.md, "chess_move", "chess_fen"):
 *
 * - `move = 'Nf3'` (`<>`, `IN`, list_contains on chess_move arrays): the move code, through
 *   `valueFor` (sql/pushdown.ts) and `chessMoveValue` here. SAN and codes map one to one, so the
 *   comparison on codes is the comparison on the presented text.
 * - `position = '<FEN>'`: `masked_eq` on the packed bytes, masking out exactly what the decoder
 *   ignores (flag bits 5-7, the unused piece nibbles), so a position a foreign writer packed with
 *   stray bits still matches when it reads as the same FEN.
 * - `fen_occupied(position, 'e4')` (bare, `NOT`, `= TRUE/FALSE`, `<> TRUE/FALSE`): one mask bit of
 *   the occupancy bitboard; `fen_turn(position) = 'w' | 'b'` (`<>` too): bit 0 of the flags byte.
 *
 * Only a literal the column would present exactly (round-tripped through the engine's codec) is
 * pushed; anything else stays local. Rows the nodes return are filtered again by DuckDB, so a
 * pushed filter only has to keep every row the local predicate keeps (null positions, all-zero
 * bytes, may pass a `NOT fen_occupied` filter; DuckDB drops them).
 */
import type { FieldInfo } from '../engine-rs/schema';
import type { Filter } from '../query/filter';
import type { BigJsonValue } from './bigJson';
import { FEN_BOARD_OFFSET, FEN_FLAGS_OFFSET, FEN_PACKED_LEN, fenToPacked, sanToCode } from './chessCodec';
import { isNode, type Literal, type Node } from './pushdown';

/** How pushdownOf resolves a tree node to one of the dataset's columns or to a literal. */
export interface ChessResolvers {
  readonly column: (n: BigJsonValue | undefined) => FieldInfo | undefined;
  readonly literal: (n: BigJsonValue | undefined) => Literal | undefined;
}

/** The code (decimal text) of a SAN literal compared for equality with a chess_move value, or undefined. */
export function chessMoveValue(lit: Literal, equality: boolean): string | undefined {
  if (!equality || lit.typeId !== 'VARCHAR' || typeof lit.value !== 'string') return undefined;
  const code = sanToCode(lit.value);
  return code === undefined ? undefined : String(code);
}

/** The square index (a1 = 0 … h8 = 63) of a square literal, or undefined. */
export function squareIndex(lit: Literal | undefined): number | undefined {
  if (!lit || lit.typeId !== 'VARCHAR' || typeof lit.value !== 'string' || !/^[a-h][1-8]$/.test(lit.value)) return undefined;
  return (lit.value.charCodeAt(1) - 49) * 8 + (lit.value.charCodeAt(0) - 97);
}

/** A masked_eq filter on a chess_fen field: `(x & mask) == (value & mask)` over the 30 bytes. */
function maskedEq(field: string, value: Buffer, mask: Buffer): Filter {
  return { field, op: 'masked_eq', value: value.toString('hex'), mask: mask.toString('hex') };
}

/** `position = '<FEN>'`: every byte the decoder reads, nothing it ignores. */
export function fenEqualityFilter(field: string, fen: string): Filter | undefined {
  const packed = fenToPacked(fen);
  if (!packed) return undefined;
  const mask = Buffer.alloc(FEN_PACKED_LEN, 0xff);
  mask[FEN_FLAGS_OFFSET] = 0x1f; // side to move and the four castling rights
  let pieces = 0;
  for (let i = 0; i < 8; i++) for (let b = packed[i] as number; b !== 0; b &= b - 1) pieces++;
  // The i-th piece's nibble (high first); nibbles past the last piece are never read.
  for (let j = 0; j < 16; j++) mask[FEN_BOARD_OFFSET + j] = (2 * j < pieces ? 0xf0 : 0) | (2 * j + 1 < pieces ? 0x0f : 0);
  return maskedEq(field, packed, mask);
}

/** `fen_occupied(position, square)` is `occupied` (true: a piece stands there). */
export function occupiedFilter(field: string, square: number, occupied: boolean): Filter {
  const mask = Buffer.alloc(FEN_PACKED_LEN);
  mask[square >> 3] = 1 << (square & 7);
  return maskedEq(field, occupied ? mask : Buffer.alloc(FEN_PACKED_LEN), mask);
}

/** `fen_turn(position) = side`. */
export function turnFilter(field: string, side: 'w' | 'b'): Filter {
  const mask = Buffer.alloc(FEN_PACKED_LEN);
  mask[FEN_FLAGS_OFFSET] = 0x01;
  const value = Buffer.alloc(FEN_PACKED_LEN);
  value[FEN_FLAGS_OFFSET] = side === 'b' ? 0x01 : 0x00;
  return maskedEq(field, value, mask);
}

/** `name(chess_fen column, ...)` with the given arity: the column, else undefined. */
function fenCall(n: BigJsonValue | undefined, name: string, arity: number, r: ChessResolvers): { f: FieldInfo; args: BigJsonValue[] } | undefined {
  if (!isNode(n) || n.type !== 'FUNCTION' || String(n.function_name).toLowerCase() !== name) return undefined;
  if (!['', 'main'].includes(String(n.schema ?? '').toLowerCase()) || String(n.catalog ?? '') !== '' || n.distinct === true || n.filter != null) return undefined;
  if (!Array.isArray(n.children) || n.children.length !== arity) return undefined;
  const f = r.column(n.children[0]);
  return f && f.type === 'chess_fen' && !f.array ? { f, args: n.children } : undefined;
}

/** `fen_occupied(col, 'sq')` as a filter, `want` saying whether it must hold. */
function occupied(n: BigJsonValue | undefined, want: boolean, r: ChessResolvers): Filter | undefined {
  const call = fenCall(n, 'fen_occupied', 2, r);
  const sq = call ? squareIndex(r.literal(call.args[1])) : undefined;
  return call && sq !== undefined ? occupiedFilter(call.f.name, sq, want) : undefined;
}

/** The side of a `fen_turn(col) = side` comparison (`<>` flips it). */
function turn(fn: BigJsonValue | undefined, lit: Literal | undefined, equal: boolean, r: ChessResolvers): Filter | undefined {
  const call = fenCall(fn, 'fen_turn', 1, r);
  if (!call || !lit || lit.typeId !== 'VARCHAR' || (lit.value !== 'w' && lit.value !== 'b')) return undefined;
  return turnFilter(call.f.name, (lit.value === 'b') === equal ? 'b' : 'w');
}

/**
 * The filter one WHERE conjunct gives when it is one of the chess forms above, else undefined
 * (then pushdownOf's general rules apply to it).
 */
export function chessFilterOf(c: Node, r: ChessResolvers): Filter | undefined {
  const type = String(c.type);
  if (type === 'FUNCTION') return occupied(c, true, r);
  if (type === 'OPERATOR_NOT' && Array.isArray(c.children) && c.children.length === 1) return occupied(c.children[0], false, r);
  if (type !== 'COMPARE_EQUAL' && type !== 'COMPARE_NOTEQUAL') return undefined;
  const equal = type === 'COMPARE_EQUAL';
  for (const [a, b] of [[c.left, c.right], [c.right, c.left]] as const) {
    const f = r.column(a);
    const lit = r.literal(b);
    if (f?.type === 'chess_fen' && !f.array && lit) {
      return equal && lit.typeId === 'VARCHAR' && typeof lit.value === 'string' ? fenEqualityFilter(f.name, lit.value) : undefined;
    }
    if (lit?.typeId === 'BOOLEAN' && typeof lit.value === 'boolean') {
      const hit = occupied(a, lit.value === equal, r);
      if (hit) return hit;
    }
    const side = turn(a, lit, equal, r);
    if (side) return side;
  }
  return undefined;
}
