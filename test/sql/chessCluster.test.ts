/**
 * Chess pushdown end to end: chess.js games ingested into a real SCC and Storage Node processes,
 * read through hd_sql's engine and query clients. Each pushed chess rule gives the same rows as
 * the same predicate kept local (wrapped in an OR, which never pushes), and the nodes' counters
 * show it: the same records scanned, only the matches matched (and sent).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { ingestMinutes } from '../support/ingestMinutes';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';
import { Catalog } from '../../sql/catalog';
import { QueryClientFetcher } from '../../sql/datasetFetcher';
import { SqlEngine } from '../../sql/sqlEngine';
import { startCluster, type Cluster } from '../support/cluster';
import { playGames } from './chessGames';

const schemaJson = readFileSync(path.resolve(__dirname, '../../up/demo/chess.schema.json'), 'utf8');
const schema = Schema.parse(schemaJson);
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const plies = playGames(6, 60, 3);
const WINDOW = `ts >= ${T0} AND ts < ${T0 + 120}`;

let cluster: Cluster;
let client: PlatformQueryClient;
const local = new LocalSql({ threads: 1 });
let engine: SqlEngine;

/** The Storage Nodes' scanned and matched record counters, summed. */
async function counters(): Promise<{ scanned: number; matched: number }> {
  const out = { scanned: 0, matched: 0 };
  for (const sn of cluster.sns) {
    const text = await (await fetch(`http://127.0.0.1:${sn.observabilityPort}/metrics`)).text();
    out.scanned += Number(/^hd_sn_query_records_scanned_total (\d+)/m.exec(text)?.[1] ?? 0);
    out.matched += Number(/^hd_sn_query_records_matched_total (\d+)/m.exec(text)?.[1] ?? 0);
  }
  return out;
}

const ec = suite('chess pushdown against a real cluster');
ec.before(async () => {
  cluster = await startCluster({ recordSize: schema.recordSize, schemas: [schemaJson] });
  await ingestMinutes(cluster, schemaJson, T0, 2, (b) => plies.filter((_, i) => i % 2 === b).map((p, i) => ({ ts: String(T0 + b * 60 + (i % 60)), game_id: String(p.game), ply: String(p.ply), move: p.san, position: p.fen, white_elo: '1500', black_elo: '1600', result: 'draw', white: 'w', black: 'b', eco: 'C20', eval_cp: '0' })));
  client = new PlatformQueryClient('', '127.0.0.1', '', { listenPort: 0, log: () => undefined });
  client.setSccTargets([{ host: cluster.host, port: cluster.scc.productionPort, grpcPort: cluster.scc.queryGrpcPort }]);
  engine = new SqlEngine(new Catalog([schema]), local, new QueryClientFetcher(client), { lookbackSec: 3600, timeoutMs: 60_000, maxRows: 0, qos: 1 });
});
ec.after(async () => {
  await local.close();
  await client?.stop();
  await cluster?.stop();
});

const rowsOf = async (where: string): Promise<{ rows: string[]; scanned: number; matched: number }> => {
  const before = await counters();
  const r = await engine.execute(`SELECT game_id, ply, move, position FROM chess WHERE ${WINDOW} AND ${where} ORDER BY game_id, ply`);
  const after = await counters();
  return { rows: r.table.toArray().map((x) => `${String(x.game_id)}/${String(x.ply)} ${String(x.move)} ${String(x.position)}`), scanned: after.scanned - before.scanned, matched: after.matched - before.matched };
};

ec('each chess rule pushed gives the rows local evaluation gives; the nodes match only those', async () => {
  const sample = plies[17]!;
  const cases: [string, (p: (typeof plies)[number]) => boolean][] = [
    [`move = '${sample.san}'`, (p) => p.san === sample.san],
    [`position = '${sample.fen}'`, (p) => p.fen === sample.fen],
    ["fen_occupied(position, 'e4')", (p) => p.pieces.has('e4')],
    ["NOT fen_occupied(position, 'f3') AND fen_turn(position) = 'b'", (p) => !p.pieces.has('f3') && p.turn === 'b'],
  ];
  for (const [where, want] of cases) {
    const n = plies.filter(want).length;
    assert.ok(n > 0 && n < plies.length, `${where} selects some (${n} of ${plies.length})`);
    const pushed = await rowsOf(where);
    const kept = await rowsOf(`(${where} OR false)`);
    assert.is(pushed.rows.length, n, where);
    assert.equal(pushed.rows, kept.rows, `${where}: pushed and local answers agree`);
    assert.is(kept.scanned, plies.length, `${where}: the window holds every record`);
    assert.is(kept.matched, plies.length, `${where}: kept local, the nodes send the window`);
    assert.is(pushed.scanned, plies.length, `${where}: pushed, the nodes still scan the window`);
    assert.is(pushed.matched, n, `${where}: pushed, the nodes match (and send) only the answer`);
  }
});

ec.run();
