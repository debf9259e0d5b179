/**
 * The example queries `hd up` prints and the README shows, in one place: test/up/up.test.ts runs
 * each through psql against `hd up --demo small`, so the README's queries are known to work.
 * Keep README.md's quick start in sync (the test checks it contains each one).
 */

/** One example: what it shows and the SQL. */
export interface ExampleQuery {
  readonly shows: string;
  readonly sql: string;
}

/** The examples, over the demo datasets `flows` and `chess`. */
export const EXAMPLE_QUERIES: readonly ExampleQuery[] = [
  { shows: 'count and sum computed on the Storage Nodes, after the pushed filter (dst_port)', sql: 'SELECT count(*) AS flows, sum(bytes) AS bytes FROM flows WHERE dst_port = 443;' },
  { shows: 'an enum label (proto) pushed down as its code; ORDER BY … LIMIT 5: each batch sends only its best 5', sql: "SELECT ts, src_ip, dst_ip, app, bytes FROM flows WHERE proto = 'udp' AND dst_port = 53 ORDER BY bytes DESC LIMIT 5;" },
  { shows: 'an inet address literal, pushed down', sql: "SELECT ts, src_ip, dst_port, proto FROM flows WHERE dst_ip = '192.168.0.1' ORDER BY ts LIMIT 5;" },
  { shows: 'array columns: list_contains pushed down, GROUP BY vlan_path computed on the Storage Nodes', sql: 'SELECT vlan_path, count(*) AS flows FROM flows WHERE list_contains(vlan_path, 301) GROUP BY vlan_path ORDER BY flows DESC LIMIT 5;' },
  { shows: 'chess moves (SAN) and positions (FEN)', sql: 'SELECT ply, move, position FROM chess WHERE game_id = 1 ORDER BY ply LIMIT 6;' },
  { shows: 'chess functions; fen_turn and fen_occupied pushed down as masked comparisons', sql: "SELECT move, fen_piece(position, 'e4') AS on_e4, count(*) AS n FROM chess WHERE fen_turn(position) = 'b' AND fen_occupied(position, 'e4') GROUP BY ALL ORDER BY n DESC LIMIT 5;" },
  { shows: 'GROUP BY an enum on the Storage Nodes, merged exactly in hd_sql', sql: "SELECT proto, count(*) AS flows, sum(bytes) AS bytes FROM flows WHERE dst_port IN (443, 53) GROUP BY proto ORDER BY flows DESC;" },
];
