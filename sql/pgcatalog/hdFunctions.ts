/**
 * The functions HD adds to SQL, as `pg_proc` lists them (schema `public`): the chess functions of
 * sql/chessFunctions.ts with their argument names and types, result type and description (docs/sql.md,
 * "Chess"), so `\df`, pgjdbc's getFunctions and information_schema.routines show them.
 */
import { CHESS_FUNCTIONS } from '../chessFunctions';

/** One function signature (an overload is a row of its own, as in PostgreSQL). */
export interface HdFunction {
  readonly oid: number;
  readonly name: string;
  /** Arguments as (name, PostgreSQL type OID). */
  readonly args: readonly (readonly [string, number])[];
  /** Result type OID. */
  readonly result: number;
  readonly description: string;
}

const TEXT = 25;
const INT4 = 23;
const BOOL = 16;
const position = ['position', TEXT] as const;
const square = ['square', TEXT] as const;

/** Every HD function, OIDs from 15000 up (below dataset OIDs). */
export const HD_FUNCTIONS: readonly HdFunction[] = (
  [
    ['fen_piece', [position, square], TEXT, 'the piece letter on the square (PNBRQK white, pnbrqk black), NULL when empty'],
    ['fen_occupied', [position, square], BOOL, 'a piece stands on the square'],
    ['fen_turn', [position], TEXT, 'the side to move: w or b'],
    ['fen_castling', [position], TEXT, 'the castling field as written (- for none)'],
    ['fen_en_passant', [position], TEXT, 'the en passant target square, NULL when none'],
    ['fen_halfmove', [position], INT4, 'the halfmove clock'],
    ['fen_fullmove', [position], INT4, 'the fullmove number'],
    ['fen_piece_count', [position], INT4, 'pieces on the board'],
    ['fen_piece_count', [position, ['piece', TEXT]], INT4, 'pieces of that letter on the board'],
    ['san_code', [['move', TEXT]], INT4, 'the 16-bit move code a chess_move column stores for this SAN'],
    ['san_text', [['code', INT4]], TEXT, 'the SAN a chess_move column holding the code presents'],
  ] as const
).map(([name, args, result, description], i) => ({ oid: 15000 + i, name, args, result, description }));

// Every chess function has a row: a function added there must be described here too.
for (const f of CHESS_FUNCTIONS) if (!HD_FUNCTIONS.some((h) => h.name === f)) throw new Error(`sql/pgcatalog/hdFunctions.ts: ${f} has no pg_proc row`);
