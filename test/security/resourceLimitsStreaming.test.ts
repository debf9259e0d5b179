/**
 * Security issue #14, item 6, while results flow: against a real hd_sql process, a client that stops
 * reading does not make the server queue the whole result (the backlog one connection reaches stays
 * near HD_SQL_SEND_BUFFER_BYTES: /metrics `hd_sql_send_backlog_peak_bytes`), and a statement waiting
 * for the Storage Nodes — here for a free read (HD_SQL_CONCURRENT_READS=1) behind one the SCC never
 * answers — is released by a pgwire CancelRequest with 57014, ahead of the read it waits behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startupMessage, typedMessage } from '../sql/pgRawSession';
import { freePort, waitForPort, type HdProcess } from '../support/hdProcess';
import { startSql } from './doorSupport';
import { metric, PgSocket, sendCancel, SilentScc } from './limitsSupport';

const SEND_BUFFER = 256 * 1024;
/** The result the slow reader asks for: 40 000 rows of 1 000 bytes, about 40 MB on the wire. */
const ROWS = 40_000;

const rs = suite('resource limits while results flow: slow reader, cancel of a waiting read');
let dir: string;
let sql: HdProcess;
let scc: SilentScc;
const ports = { pg: 0, obs: 0 };

rs.before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-limits-stream-'));
  scc = await new SilentScc().start();
  ports.pg = await freePort();
  ports.obs = await freePort();
  sql = startSql(dir, {
    HD_SQL_SCC_TARGETS: `127.0.0.1:9:${scc.port}`,
    HD_SQL_PGWIRE_ADDRESS: `127.0.0.1:${ports.pg}`,
    HD_SQL_HTTP_ENABLED: 'false',
    HD_SQL_FLIGHTSQL_ENABLED: 'false',
    OBSERVABILITY_INTERFACE: '127.0.0.1',
    OBSERVABILITY_PORT: String(ports.obs),
    HD_SQL_SEND_BUFFER_BYTES: String(SEND_BUFFER),
    HD_SQL_CONCURRENT_READS: '1',
    // Long enough that nothing here ends by the deadline before the test has looked.
    HD_SQL_QUERY_TIMEOUT_MS: '30000',
  });
  await waitForPort('127.0.0.1', ports.pg, sql, 120_000);
  await waitForPort('127.0.0.1', ports.obs, sql, 120_000);
});
rs.after(async () => {
  await sql?.stop();
  await scc?.stop();
  rmSync(dir, { recursive: true, force: true });
});

rs('a client that stops reading: the server stops producing rows instead of queueing the result; reading again gets every row', async () => {
  const s = await PgSocket.open(ports.pg);
  s.send(startupMessage({ user: 'hd', database: 'hd' }));
  assert.ok((await s.until('Z')) !== 'closed', 'logged in');
  s.pause();
  s.send(typedMessage('Q', Buffer.from(`SELECT repeat('x', 1000) AS s FROM range(${ROWS})\0`)));
  // Wait until the server's backlog toward us has stopped moving: it is stalled on us.
  let last = -1;
  let still = 0;
  while (still < 5) {
    await new Promise((r) => setTimeout(r, 200));
    const now = (await metric(ports.obs, 'hd_sql_send_backlog_bytes')) ?? -1;
    still = now > 0 && now === last ? still + 1 : 0;
    last = now;
  }
  const peak = await metric(ports.obs, 'hd_sql_send_backlog_peak_bytes');
  assert.ok(peak !== undefined, 'the backlog peak is on /metrics');
  // A DataRow chunk (256 KiB) and a row may pass the mark before the producer pauses; the result is ~40 MB.
  assert.ok((peak as number) <= SEND_BUFFER + 512 * 1024, `one slow reader's backlog reached ${peak} bytes (HD_SQL_SEND_BUFFER_BYTES ${SEND_BUFFER}; the result is ~${ROWS * 1000} bytes)`);
  s.resume();
  let rows = 0;
  for (;;) {
    const m = await s.next();
    if (m === 'closed') break;
    if (m.type === 'D') rows++;
    if (m.type === 'C') {
      assert.is(m.body.toString('utf8', 0, m.body.length - 1), `SELECT ${ROWS}`);
      break;
    }
  }
  assert.is(rows, ROWS);
  s.end();
});

rs('an open door (no credentials) caps the startup packet too: 10 MB claimed is refused (08P01) on its length', async () => {
  const s = await PgSocket.open(ports.pg);
  const h = Buffer.alloc(8);
  h.writeInt32BE(10 * 1024 * 1024, 0);
  h.writeInt32BE(196608, 4);
  s.send(h);
  const e = await s.error();
  assert.is(e?.['C'], '08P01');
  assert.match(e?.['M'] ?? '', /startup packet length 10485760 is out of range/);
  assert.ok(await s.closedBy(30_000));
});

/** The flows dataset's last full minute: a read the silent SCC accepts and never delivers. */
const readFlows = (): string => {
  const t = Math.floor(Date.now() / 1000 / 60) * 60 - 120;
  return `SELECT count(*) AS n FROM flows WHERE ts >= ${t} AND ts < ${t + 60}`;
};

rs('CancelRequest releases a statement waiting for a free read of the Storage Nodes (57014), ahead of the read it waits behind', async () => {
  const a = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'hd', database: 'hd' });
  const b = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'hd', database: 'hd' });
  await a.connect();
  await b.connect();
  const settled: string[] = [];
  try {
    const first = a.query(readFlows()).then(
      () => ({ code: 'ok', message: '' }),
      (e: { code?: string; message: string }) => ({ code: e.code, message: e.message }),
    );
    void first.then(() => settled.push('a'));
    // The first read holds the one read slot, waiting for batches the SCC never sends.
    while (scc.queries.length < 1) await new Promise((r) => setTimeout(r, 50));
    const second = b.query(readFlows()).then(
      () => ({ code: 'ok', message: '' }),
      (e: { code?: string; message: string }) => ({ code: e.code, message: e.message }),
    );
    void second.then(() => settled.push('b'));
    await new Promise((r) => setTimeout(r, 300));
    const ids = b as unknown as { processID: number; secretKey: number };
    await sendCancel(ports.pg, ids.processID, ids.secretKey);
    const got = await second;
    assert.is(got.code, '57014', got.message);
    assert.match(got.message, /canceling statement due to user request/);
    assert.equal(settled, ['b'], 'the cancelled statement came back while the read it waited behind was still running');
    assert.is(scc.queries.length, 1, 'the cancelled statement never reached the SCC');
    // The running read is released by its own cancel, and the SCC is told.
    const ida = a as unknown as { processID: number; secretKey: number };
    await sendCancel(ports.pg, ida.processID, ida.secretKey);
    const gotA = await first;
    assert.is(gotA.code, '57014', gotA.message);
    while (scc.cancels.length < 1) await new Promise((r) => setTimeout(r, 50));
    // Both connections still answer.
    assert.equal((await b.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  } finally {
    await a.end().catch(() => undefined);
    await b.end().catch(() => undefined);
  }
});

rs.run();
