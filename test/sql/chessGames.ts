/**
 * Real chess positions for the chess SQL tests: seeded random legal games played by chess.js, each
 * ply with its SAN, the FEN chess.js writes, and what chess.js (not our code) says about the
 * position: pieces by square, side to move, castling rights, clocks.
 */
import { Chess, type Square } from 'chess.js';

/** One ply of a game and chess.js's view of the position after it. */
export interface Ply {
  readonly game: number;
  readonly ply: number;
  readonly san: string;
  readonly fen: string;
  /** Piece letter by square (`e4` → `P`); empty squares absent. */
  readonly pieces: ReadonlyMap<string, string>;
  readonly turn: 'w' | 'b';
  /** `KQkq` subset in that order, or `-`. */
  readonly castling: string;
  /** The en passant target chess.js writes, or null. */
  readonly enPassant: string | null;
  /** Plies since the last capture or pawn move (counted here from chess.js's move flags). */
  readonly halfmove: number;
  readonly fullmove: number;
}

/** Every square name, a1 … h8. */
export const SQUARES: readonly string[] = Array.from({ length: 64 }, (_, i) => `${'abcdefgh'[i % 8]}${(i >> 3) + 1}`);

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** `games` random games of at most `maxPlies` plies, captures and checks a little preferred. */
export function playGames(games: number, maxPlies: number, seed = 42): Ply[] {
  const rand = rng(seed);
  const out: Ply[] = [];
  for (let g = 0; g < games; g++) {
    const c = new Chess();
    let halfmove = 0;
    for (let p = 1; p <= maxPlies && !c.isGameOver(); p++) {
      const legal = c.moves({ verbose: true });
      const sharp = legal.filter((m) => m.san.includes('x') || m.san.includes('+') || m.san.includes('=') || m.san.startsWith('O-'));
      const pick = sharp.length > 0 && rand() < 0.5 ? sharp : legal;
      const m = pick[Math.floor(rand() * pick.length)]!;
      c.move(m.san);
      halfmove = m.piece === 'p' || m.captured ? 0 : halfmove + 1;
      const pieces = new Map<string, string>();
      for (const sq of SQUARES) {
        const at = c.get(sq as Square);
        if (at) pieces.set(sq, at.color === 'w' ? at.type.toUpperCase() : at.type);
      }
      const w = c.getCastlingRights('w');
      const b = c.getCastlingRights('b');
      const castling = `${w.k ? 'K' : ''}${w.q ? 'Q' : ''}${b.k ? 'k' : ''}${b.q ? 'q' : ''}` || '-';
      const ep = c.fen().split(' ')[3];
      out.push({ game: g, ply: p, san: m.san, fen: c.fen(), pieces, turn: c.turn(), castling, enPassant: ep === '-' || ep === undefined ? null : ep, halfmove, fullmove: c.moveNumber() });
    }
  }
  return out;
}
