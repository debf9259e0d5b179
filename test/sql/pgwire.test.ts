/**
 * The PostgreSQL wire door with real clients: node-postgres (simple and extended protocol, binary
 * parameters, errors with SQLSTATEs, notices, password, CancelRequest) and psql; plus the frontend
 * message parser on input split at every point and on malformed input.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { FrontendParser, PgProtocolError, PROTOCOL_3 } from '../../sql/pgwire/frontend';
import { PgServer } from '../../sql/pgwire/pgServer';
import { memoryEngine, T0 } from './support';

const PSQL = '/usr/bin/psql';

function startupBytes(params: Record<string, string>): Buffer {
  const body = Buffer.concat([Buffer.alloc(4), ...Object.entries(params).flatMap(([k, v]) => [Buffer.from(`${k}\0${v}\0`)]), Buffer.from([0])]);
  body.writeInt32BE(PROTOCOL_3, 0);
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  return Buffer.concat([len, body]);
}
function typed(code: string, body: Buffer): Buffer {
  const h = Buffer.alloc(5);
  h.write(code, 0, 'latin1');
  h.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([h, body]);
}

const parser = suite('pgwire frontend parser');
parser('the same bytes split at every point give the same messages', () => {
  const bind = Buffer.concat([Buffer.from('p1\0s1\0'), Buffer.from([0, 1, 0, 1]), Buffer.from([0, 2]), Buffer.from([0, 0, 0, 4, 0, 0, 0, 7]), Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.from([0, 0])]);
  const bytes = Buffer.concat([startupBytes({ user: 'u', database: 'd' }), typed('Q', Buffer.from('SELECT 1\0')), typed('P', Buffer.from('s1\0SELECT $1\0\0\0')), typed('B', bind), typed('E', Buffer.from('p1\0\0\0\0\0')), typed('S', Buffer.alloc(0))]);
  const whole = new FrontendParser().push(bytes);
  assert.equal(whole.map((m) => m.kind), ['startup', 'query', 'parse', 'bind', 'execute', 'sync']);
  assert.equal(whole[3], { kind: 'bind', portal: 'p1', statement: 's1', paramFormats: [1], params: [Buffer.from([0, 0, 0, 7]), null], resultFormats: [] });
  for (let cut = 1; cut < bytes.length; cut++) {
    const p = new FrontendParser();
    const got = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut))];
    assert.equal(got, whole, `split at ${cut}`);
  }
  for (const size of [1, 3, 7]) {
    const p = new FrontendParser();
    const got = [];
    for (let i = 0; i < bytes.length; i += size) got.push(...p.push(bytes.subarray(i, i + size)));
    assert.equal(got, whole, `chunks of ${size}`);
  }
});
parser('malformed input: bad lengths, unterminated strings, short bodies, bad protocol, bad targets', () => {
  const bad = (bytes: Buffer, re: RegExp, afterStartup = true): void => {
    const p = new FrontendParser();
    if (afterStartup) p.push(startupBytes({ user: 'u' }));
    assert.throws(() => p.push(bytes), (e: unknown) => e instanceof PgProtocolError && re.test(e.message));
  };
  bad(Buffer.from([0, 0, 0, 2]), /length 2 is out of range/, false);
  bad(Buffer.from([0, 0, 0, 8, 0, 2, 0, 0]), /unsupported protocol 2\.0/, false);
  bad(typed('Q', Buffer.from('SELECT 1')), /not NUL-terminated/);
  bad(typed('E', Buffer.from('p\0\0')), /ends early/);
  bad(typed('D', Buffer.from('X\0')), /target must be 'S' or 'P'/);
  bad(typed('B', Buffer.from('\0\0\0\x01\0\0\0\x01\xff\xff\xff\xf0', 'latin1')), /bad parameter length/);
  bad(Buffer.from([0x51, 0x7f, 0xff, 0xff, 0xff]), /out of range/);
});

const wire = suite('pgwire door with node-postgres and psql');
const { engine, local, stats } = memoryEngine(300);
const server = new PgServer(engine, { host: '127.0.0.1', port: 0 });
const pwServer = new PgServer(engine, { host: '127.0.0.1', port: 0, password: 's3cret' });
let port = 0;
let pwPort = 0;
wire.before(async () => {
  port = (await server.listen()).port;
  pwPort = (await pwServer.listen()).port;
});
wire.after(async () => {
  await server.close();
  await pwServer.close();
  await local.close();
});
const client = async (extra: Partial<pg.ClientConfig> = {}): Promise<pg.Client> => {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'tester', database: 'hd', ...extra });
  await c.connect();
  return c;
};

wire('simple query: aggregates over the enum labels; pushdown narrows what the nodes return; notice of the default lookback', async () => {
  const c = await client();
  const notices: string[] = [];
  c.on('notice', (n) => notices.push(n.message ?? ''));
  try {
    const before = stats.returned;
    const r = await c.query(`SELECT proto, count(*) AS n, sum(bytes) AS total FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 30} AND proto = 'udp' GROUP BY proto`);
    assert.equal(r.rows, [{ proto: 'udp', n: '10', total: String(Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3 === 1).reduce((a, i) => a + i * 10, 0)) }]);
    assert.is(stats.returned - before, 10, 'the nodes returned only the 10 udp flows of the window');
    assert.is(r.fields.find((f) => f.name === 'n')?.dataTypeID, 20);
    assert.equal(notices, []);
    const all = await c.query('SELECT count(*)::INTEGER AS n FROM "Network flows"');
    assert.equal(all.rows, [{ n: 300 }]);
    assert.match(notices[0] ?? '', /HD_SQL_DEFAULT_LOOKBACK_SEC/);
    const s = await c.query("SELECT src_ip, dst_port FROM flows WHERE src_ip = '10.0.0.3' ORDER BY ts LIMIT 2");
    assert.equal(s.rows, [{ src_ip: '10.0.0.3', dst_port: 443 }, { src_ip: '10.0.0.3', dst_port: 80 }]);
    const set = await c.query("SET application_name = 'x'");
    assert.is(set.command, 'SET');
  } finally {
    await c.end();
  }
});

wire('a SELECT of columns streams its rows as they arrive: the same fields, rows and notices as the whole answer', async () => {
  const whole = memoryEngine(300, { rowPassthrough: false });
  const wholeServer = new PgServer(whole.engine, { host: '127.0.0.1', port: 0 });
  const wholePort = (await wholeServer.listen()).port;
  // HD_SQL_EXPLAIN_PUSHDOWN says which answers streamed; its notices are left out of the comparison.
  const live = memoryEngine(300, { explainPushdown: true });
  const liveServer = new PgServer(live.engine, { host: '127.0.0.1', port: 0 });
  const streamed = await client({ port: (await liveServer.listen()).port });
  const reference = await client({ port: wholePort });
  let streamedAnswers = 0;
  try {
    for (const sql of [`SELECT ts, proto, src_ip, dst_port, bytes, duration_ms FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 300}`, `SELECT proto, dst_port FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 300} LIMIT 5`, `SELECT TS, Proto, src_ip AS "Src", dst_port AS DstPort FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 300}`, 'SELECT ts, src_ip FROM flows', `SELECT ts FROM flows WHERE ts > ${T0 + 10_000}`]) {
      const notices: [string[], string[]] = [[], []];
      streamed.on('notice', (n) => notices[0].push(n.message ?? ''));
      reference.on('notice', (n) => notices[1].push(n.message ?? ''));
      const a = await streamed.query({ text: sql, rowMode: 'array' });
      const b = await reference.query({ text: sql, rowMode: 'array' });
      streamed.removeAllListeners('notice');
      reference.removeAllListeners('notice');
      if (notices[0].some((n) => /streamed as they arrived/.test(n))) streamedAnswers++;
      notices[0] = notices[0].filter((n) => !/row passthrough|pushed down:/.test(n));
      assert.equal(a.fields.map((f) => [f.name, f.dataTypeID]), b.fields.map((f) => [f.name, f.dataTypeID]), sql);
      assert.equal(a.rows, b.rows, sql);
      assert.is(a.rowCount, b.rowCount, sql);
      assert.equal(notices[0], notices[1], sql);
    }
    assert.is(streamedAnswers, 4, 'every statement with rows streamed them');
  } finally {
    await streamed.end();
    await reference.end();
    await wholeServer.close();
    await liveServer.close();
    await whole.local.close();
    await live.local.close();
  }
});

wire('extended protocol: text and binary parameters, prepared statements reused, rows by portal', async () => {
  const c = await client();
  try {
    const q = { name: 'by_port', text: 'SELECT count(*)::INTEGER AS n FROM flows WHERE ts >= $1 AND dst_port = $2' };
    assert.equal((await c.query({ ...q, values: [T0, 443] })).rows, [{ n: 100 }]);
    assert.equal((await c.query({ ...q, values: [T0 + 150, 80] })).rows, [{ n: 50 }]);
    const bin = Buffer.alloc(8);
    bin.writeBigInt64BE(BigInt(T0 + 297));
    // node-postgres sends Buffers as binary parameters.
    const b = await c.query({ text: 'SELECT ts, proto FROM flows WHERE ts >= $1::BIGINT ORDER BY ts', values: [String(T0 + 297)] });
    assert.equal(b.rows.map((r) => `${r.ts}:${r.proto}`), [`${T0 + 297}:tcp`, `${T0 + 298}:udp`, `${T0 + 299}:icmp`]);
    const arr = await c.query({ text: "SELECT [1, 2]::INTEGER[] AS a, ['x', 'y z']::VARCHAR[] AS t, 2.50::DECIMAL(5,2) AS d, true AS b" , rowMode: 'array' });
    assert.equal(arr.rows, [[[1, 2], ['x', 'y z'], '2.50', true]]);
  } finally {
    await c.end();
  }
});

wire('errors carry the reference SQLSTATEs and the connection stays usable', async () => {
  const c = await client();
  try {
    const codeOf = async (sql: string): Promise<string> => c.query(sql).then(() => 'none', (e: { code?: string }) => String(e.code));
    assert.is(await codeOf('INSERT INTO flows VALUES (1)'), '0A000');
    assert.is(await codeOf('SELECT * FROM nope'), '42P01');
    assert.is(await codeOf('SELEC 1'), '42601');
    assert.is(await codeOf('SELECT no_such_column FROM flows'), '42000');
    const ext = await c.query({ text: 'SELECT * FROM nope WHERE x = $1', values: [1] }).then(() => 'none', (e: { code?: string }) => String(e.code));
    assert.is(ext, '42P01');
    assert.equal((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  } finally {
    await c.end();
  }
});

wire('password: SCRAM-SHA-256 auth accepts the password and refuses a wrong one with 28P01', async () => {
  const ok = await client({ port: pwPort, password: 's3cret' });
  assert.equal((await ok.query('SELECT 2 AS two')).rows, [{ two: 2 }]);
  await ok.end();
  const bad = new pg.Client({ host: '127.0.0.1', port: pwPort, user: 'tester', password: 'wrong' });
  const err = await bad.connect().then(() => undefined, (e: { code?: string }) => e);
  assert.is(err?.code, '28P01');
  await bad.end().catch(() => undefined);
});

wire('CancelRequest cancels a running statement with 57014', async () => {
  const c = await client();
  try {
    const running = c.query('SELECT count(*) FROM range(100000000000) a').then(() => 'none', (e: { code?: string }) => String(e.code));
    await new Promise((r) => setTimeout(r, 300));
    // node-postgres' own cancel path: a CancelRequest with the connection's key on a new socket.
    await new Promise<void>((resolve) => {
      const con = new (pg as unknown as { Connection: new () => { connect(p: number, h: string): void; on(e: string, f: () => void): void; cancel(pid: number, key: number): void; end(): void } }).Connection();
      con.on('connect', () => {
        const k = c as unknown as { processID: number; secretKey: number };
        con.cancel(k.processID, k.secretKey);
        resolve();
      });
      con.connect(port, '127.0.0.1');
    });
    assert.is(await running, '57014');
    assert.equal((await c.query('SELECT 3 AS three')).rows, [{ three: 3 }]);
  } finally {
    await c.end();
  }
});

wire('psql: a query, SHOW TABLES, information_schema.columns, COPY TO STDOUT and an error', async () => {
  if (!existsSync(PSQL)) {
    console.warn(`SKIPPED: ${PSQL} is not installed; the psql checks did not run`);
    return;
  }
  const env = { ...process.env, PGCONNECT_TIMEOUT: '10' };
  // Asynchronous: the server runs in this process.
  const run = promisify(execFile);
  const psql = async (sql: string): Promise<string> => (await run(PSQL, ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(port), '-U', 'tester', '-d', 'hd', '-c', sql], { env, encoding: 'utf8' })).stdout;
  assert.is((await psql(`SELECT proto, count(*) FROM flows WHERE ts BETWEEN ${T0} AND ${T0 + 5} GROUP BY proto ORDER BY proto`)).trim(), 'icmp|2\ntcp|2\nudp|2');
  assert.is((await psql('SHOW TABLES')).trim(), 'flows');
  assert.match(await psql("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'flows'"), /src_ip\|inet/);
  assert.is(await psql(`COPY (SELECT ts, proto FROM flows WHERE ts < ${T0 + 2} ORDER BY ts) TO STDOUT`), `${T0}\ttcp\n${T0 + 1}\tudp\n`);
  const bad = await run(PSQL, ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'tester', '-d', 'hd', '-v', 'VERBOSITY=verbose', '-c', 'DELETE FROM flows'], { env, encoding: 'utf8' }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: String(e.stderr) }),
  );
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /0A000/);
});

parser.run();
wire.run();
