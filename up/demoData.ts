/**
 * Demo datasets of `hd up`: network flows and chess moves, generated as NDJSON text (the same
 * text an ingester would read) so they enter through the normal native parse + encode path.
 *
 * This is demo input, not a data path: generating text in JavaScript is fine here, and every loop
 * over records after it (parse, encode, hash, store, scan) is engine-rs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Chess } from 'chess.js';
import { mulberry32 } from '../lib/mulberry32';
import { packageRoot } from './packageRoot';

/** A demo dataset: its schema JSON text and how to make its NDJSON. */
export interface DemoDataset {
  readonly id: string;
  readonly schemaJson: string;
  /** Records it holds (for chess, computing it plays the games: seconds of CPU). */
  readonly rows: number;
  /** Records it holds when known without generating anything (the ready message shows it). */
  readonly plannedRows: number | undefined;
  /** NDJSON blocks, timestamps ascending, the last one no later than `endTime`. */
  blocks(endTime: number): Iterable<string>;
}

const schemaText = (name: string): string => readFileSync(path.join(packageRoot(), 'up', 'demo', `${name}.schema.json`), 'utf8');

const BLOCK_LINES = 50_000;
const PROTOS = ['tcp', 'tcp', 'tcp', 'tcp', 'udp', 'udp', 'icmp', 'gre', 'esp', 'sctp'];
const APPS: Record<number, string> = { 443: 'https', 80: 'http', 53: 'dns', 22: 'ssh', 123: 'ntp', 5432: 'postgres', 6987: 'hdwp', 25: 'smtp' };
const PORTS = [443, 443, 443, 80, 53, 53, 22, 123, 5432, 6987, 25, 8443];
const HOSTS = ['api.example.com', 'cdn.example.net', 'db.internal', 'mail.example.org', 'ntp.pool.org', 'files.example.com', 'hd.internal', ''];

/** Network flows over the `spanSec` seconds before the end time: `rows` records. */
export function flowsDataset(rows: number, spanSec = 24 * 3600): DemoDataset {
  return {
    id: 'flows',
    schemaJson: schemaText('flows'),
    rows,
    plannedRows: rows,
    *blocks(endTime: number) {
      const rand = mulberry32(42);
      const start = endTime - spanSec;
      for (let i = 0; i < rows; ) {
        const n = Math.min(BLOCK_LINES, rows - i);
        const lines: string[] = new Array(n);
        for (let j = 0; j < n; j++, i++) {
          const ts = start + Math.floor((i / rows) * spanSec);
          const dstPort = PORTS[Math.floor(rand() * PORTS.length)] as number;
          const proto = dstPort === 53 || dstPort === 123 ? 'udp' : (PROTOS[Math.floor(rand() * PROTOS.length)] as string);
          const packets = 1 + Math.floor(rand() ** 3 * 5000);
          const duration = Math.floor(rand() * 120_000);
          const v6 = rand() < 0.3;
          lines[j] = JSON.stringify({
            ts,
            src_ip: `10.150.${Math.floor(rand() * 256)}.${Math.floor(rand() * 256)}`,
            dst_ip: `192.168.${Math.floor(rand() * 16)}.${Math.floor(rand() * 256)}`,
            src_ip6: v6 ? `2001:db8:${Math.floor(rand() * 65536).toString(16)}::${Math.floor(rand() * 65536).toString(16)}` : '',
            dst_ip6: v6 ? `2001:db8:ffff::${Math.floor(rand() * 4096).toString(16)}` : '',
            src_port: 1024 + Math.floor(rand() * 64000),
            dst_port: dstPort,
            proto,
            tcp_flags: proto === 'tcp' ? Math.floor(rand() * 64) : 0,
            packets,
            bytes: packets * (64 + Math.floor(rand() * 1400)),
            duration_ms: duration,
            end_ts: duration,
            vlan_path: `[${100 + Math.floor(rand() * 4)},${200 + Math.floor(rand() * 8)},${300 + Math.floor(rand() * 2)}]`,
            app: APPS[dstPort] ?? 'unknown',
            host: HOSTS[Math.floor(rand() * HOSTS.length)],
            rtt_ms: Math.round(rand() * 2000) / 10,
          });
        }
        yield `${lines.join('\n')}\n`;
      }
    },
  };
}

const PLAYERS = ['Carlsen', 'Caruana', 'Ding', 'Nepomniachtchi', 'Firouzja', 'Gukesh', 'Nakamura', 'So', 'Giri', 'Aronian', 'Anand', 'Rapport', 'Duda', 'Abdusattorov', 'Praggnanandhaa', 'Vachier-Lagrave'];
const ECO = ['B90', 'C42', 'D37', 'E60', 'C65', 'B12', 'A45', 'D02', 'C88', 'B33'];

/** One played game: SAN moves and the FEN after each. */
interface Game {
  readonly moves: readonly { san: string; fen: string }[];
  readonly result: 'white' | 'black' | 'draw' | 'unfinished';
}

/** Random legal games (chess.js), replayed `copies` times with other players, ids and times. */
export function chessDataset(games: number, copies: number, spanSec = 24 * 3600): DemoDataset {
  const played: Game[] = [];
  const play = (): Game[] => {
    if (played.length > 0) return played;
    const rand = mulberry32(7);
    for (let g = 0; g < games; g++) {
      const c = new Chess();
      const moves: { san: string; fen: string }[] = [];
      while (!c.isGameOver() && moves.length < 160) {
        const legal = c.moves();
        // Prefer captures and checks a little, so games look less like random walks.
        const sharp = legal.filter((m) => m.includes('x') || m.includes('+'));
        const pick = sharp.length > 0 && rand() < 0.4 ? sharp : legal;
        const san = pick[Math.floor(rand() * pick.length)] as string;
        c.move(san);
        moves.push({ san, fen: c.fen() });
      }
      const result = c.isCheckmate() ? (c.turn() === 'w' ? 'black' : 'white') : c.isDraw() || c.isStalemate() ? 'draw' : 'unfinished';
      played.push({ moves, result });
    }
    return played;
  };
  const rowsPerCopy = (): number => play().reduce((n, g) => n + g.moves.length, 0);
  return {
    id: 'chess',
    schemaJson: schemaText('chess'),
    plannedRows: undefined,
    get rows() {
      return rowsPerCopy() * copies;
    },
    *blocks(endTime: number) {
      const all = play();
      const rand = mulberry32(11);
      const start = endTime - spanSec;
      const totalGames = all.length * copies;
      let lines: string[] = [];
      for (let k = 0; k < totalGames; k++) {
        const game = all[k % all.length] as Game;
        const t0 = start + Math.floor((k / totalGames) * (spanSec - 600));
        const white = PLAYERS[Math.floor(rand() * PLAYERS.length)] as string;
        const black = PLAYERS[Math.floor(rand() * PLAYERS.length)] as string;
        const we = 2600 + Math.floor(rand() * 250);
        const be = 2600 + Math.floor(rand() * 250);
        const eco = ECO[Math.floor(rand() * ECO.length)] as string;
        game.moves.forEach((m, ply) => {
          lines.push(JSON.stringify({ ts: t0 + ply * 3, game_id: k + 1, ply: ply + 1, move: m.san, position: m.fen, white_elo: we, black_elo: be, result: game.result === 'unfinished' ? '' : game.result, white, black, eco, eval_cp: Math.round((rand() - 0.5) * 400) }));
        });
        if (lines.length >= BLOCK_LINES) {
          yield `${lines.join('\n')}\n`;
          lines = [];
        }
      }
      if (lines.length > 0) yield `${lines.join('\n')}\n`;
    },
  };
}
