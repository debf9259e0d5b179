import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { LocalSql } from '../../local/localSql';
import { DuckDBInstance } from '@duckdb/node-api';
import { resultToArrow } from '../../local/duckdbToArrow';
import { LocalSqlError } from '../../local/localSqlError';
import { ALL_TYPES, allTypesBatch, columns } from './fixtures';

const local = new LocalSql({ threads: 2 });

async function rejects(p: Promise<unknown>, code: string, message: RegExp): Promise<LocalSqlError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, LocalSqlError);
    assert.is((err as LocalSqlError).code, code, (err as Error).message);
    assert.match((err as Error).message, message);
    return err as LocalSqlError;
  }
  return assert.unreachable('should reject') as never;
}

const types = suite('applySql: presentation types');

types('every HD type decoded by the engine comes back unchanged through SELECT *', async () => {
  const batch = allTypesBatch();
  const out = await local.applySql(batch, 'SELECT * FROM all_types');
  assert.equal(out.schema.fields.map((f) => [f.name, String(f.type)]), batch.schema.fields.map((f) => [f.name, String(f.type)]));
  assert.equal(columns(out), columns(batch));
  // Field metadata (hd.type, hd.enum, ...) stays on columns that come back unchanged.
  assert.is(out.schema.fields.find((f) => f.name === 'proto')!.metadata.get('hd.enum'), 'proto');
  assert.is(out.schema.fields.find((f) => f.name === 'u128')!.metadata.get('hd.type'), 'uint128');
});

types('the human-readable name works as a table name too', async () => {
  const out = await local.applySql(allTypesBatch(), 'SELECT count(*) AS n FROM "All types"', { aliases: [ALL_TYPES.name] });
  assert.equal(columns(out), { n: ['3n'] });
});

types('SQL sees presentation values: inet text, enum labels, chess text, lists of labels, exact wide integers', async () => {
  const batch = allTypesBatch();
  const q = async (sql: string): Promise<Record<string, unknown[]>> => columns(await local.applySql(batch, sql, { tableName: 'flows' }));
  assert.equal(await q("SELECT u8 FROM flows WHERE v4 = '192.168.1.2'"), { u8: [255] });
  assert.equal(await q("SELECT u8 FROM flows WHERE proto = 'icmp'"), { u8: [0] });
  assert.equal(await q("SELECT u8 FROM flows WHERE proto = 'no-such-label'"), { u8: [] });
  assert.equal(await q('SELECT proto FROM flows ORDER BY proto'), { proto: ['icmp', 'tcp', 'udp'] });
  assert.equal(await q("SELECT u8 FROM flows WHERE list_contains(arr, 'other') ORDER BY u8"), { u8: [255] });
  assert.equal(await q("SELECT u8 FROM flows WHERE mv = 'Nf3' AND fen LIKE 'rnbqkbnr/%'"), { u8: [7] });
  assert.equal(await q('SELECT u8 FROM flows WHERE i128 < 0 ORDER BY i128'), { u8: [255, 7] });
  assert.equal(await q('SELECT max(u64) AS m, sum(u64) AS s FROM flows'), { m: ['18446744073709551615n'], s: ['18455751272964292608'] });
  assert.equal(await q('SELECT max(u128) AS m FROM flows'), { m: ['340282366920938463463374607431768211455'] });
  assert.equal(await q('SELECT sum(num) AS s FROM flows'), { s: ['123456789012344178'] });
  assert.equal(await q("SELECT len(arr) AS l, arr[1] AS first FROM flows WHERE v6 = '::'"), { l: ['4n'], first: ['udp'] });
});

types('raw addresses (UINTEGER, 16 network-order bytes) order as addresses; inet text orders as text', async () => {
  const raw = await local.applySql(allTypesBatch({ addresses: 'raw' }), 'SELECT v4, v6 FROM all_types ORDER BY v6', { tableName: 'all_types' });
  assert.equal(columns(raw), {
    v4: [0, 0xffffffff, 0xc0a80102],
    v6: ['00000000000000000000000000000000', '00000000000000000000ffff01020304', '20010db8000000000000000000000001'],
  });
  assert.equal(columns(await local.applySql(allTypesBatch(), 'SELECT v4 FROM all_types ORDER BY v4')).v4, ['0.0.0.0', '192.168.1.2', '255.255.255.255']);
  assert.equal(columns(await local.applySql(allTypesBatch(), "SELECT v4 FROM all_types WHERE v4 > '9.0.0.0'")).v4, []);
});

types('nulls, many chunks, sliced batches, long and short strings, lists of text', async () => {
  const n = 5000;
  const ints = Array.from({ length: n }, (_x, i) => (i >= 2048 && i % 3 === 0 ? null : i));
  const strs = Array.from({ length: n }, (_x, i) => (i % 5 === 0 ? null : i % 2 ? `s${i}` : `a longer string number ${i} ✓`));
  const bools = Array.from({ length: n }, (_x, i) => (i % 7 === 0 ? null : i % 2 === 0));
  const lists = Array.from({ length: n }, (_x, i) => (i % 11 === 0 ? null : Array.from({ length: i % 4 }, (_y, k) => `e${i}-${k}`)));
  const labels = Array.from({ length: n }, (_x, i) => (i % 13 === 0 ? null : ['zeta', 'alpha', 'mid'][i % 3]!));
  const table = new arrow.Table({
    i: arrow.vectorFromArray(ints, new arrow.Int32()),
    s: arrow.vectorFromArray(strs, new arrow.Utf8()),
    b: arrow.vectorFromArray(bools, new arrow.Bool()),
    l: arrow.vectorFromArray(lists, new arrow.List(new arrow.Field('item', new arrow.Utf8(), true))),
    e: arrow.vectorFromArray(labels, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
  });
  const whole = await local.applySql(table, 'SELECT * FROM t', { tableName: 't' });
  assert.equal(columns(whole), columns(table));
  // A batch sliced at an odd row: validity and bit-packed booleans start mid-byte.
  const sliced = table.slice(3, 4003);
  assert.equal(columns(await local.applySql(sliced, 'SELECT * FROM t', { tableName: 't' })), columns(sliced));
  const counts = await local.applySql(table, 'SELECT count(i) AS i, count(s) AS s, count(b) AS b, count(l) AS l, count(e) AS e FROM t', { tableName: 't' });
  assert.equal(columns(counts), {
    i: [`${ints.filter((x) => x !== null).length}n`], s: [`${strs.filter((x) => x !== null).length}n`], b: [`${bools.filter((x) => x !== null).length}n`],
    l: [`${lists.filter((x) => x !== null).length}n`], e: [`${labels.filter((x) => x !== null).length}n`],
  });
  const ordered = await local.applySql(table, 'SELECT DISTINCT e FROM t WHERE e IS NOT NULL ORDER BY e', { tableName: 't' });
  assert.equal(columns(ordered), { e: ['alpha', 'mid', 'zeta'] });
});

types('timestamps, dates, times and results of computed types', async () => {
  const table = new arrow.Table({
    ts: arrow.vectorFromArray([1_700_000_000_000, null], new arrow.TimestampMillisecond()),
    tz: arrow.vectorFromArray([1_700_000_000_000, 0], new arrow.TimestampMillisecond('UTC')),
    day: arrow.vectorFromArray([new Date(86_400_000 * 3), null], new arrow.DateDay()),
  });
  const out = await local.applySql(table, 'SELECT * FROM t', { tableName: 't' });
  assert.equal(columns(out), columns(table));
  assert.is(String(out.schema.fields[1]!.type), String(new arrow.Timestamp(arrow.TimeUnit.MICROSECOND, 'UTC')));
  const computed = await local.applySql(table, `SELECT epoch_ms(ts) AS ms, day + 1 AS next, INTERVAL 90 MINUTE AS iv,
    {'a': 1, 'b': 'x'} AS st, [1.5, 2.5]::DOUBLE[2] AS fixed, NULL AS nothing, sum(1) OVER () AS total FROM t ORDER BY ms NULLS LAST`, { tableName: 't' });
  const c = columns(computed);
  assert.equal(c.ms, ['1700000000000n', null]);
  assert.equal(c.next, [86_400_000 * 4, null]);
  assert.equal(c.iv, ['01:30:00', '01:30:00']);
  assert.equal(computed.getChild('st')!.get(0)!.toJSON(), { a: 1, b: 'x' });
  assert.equal([...computed.getChild('fixed')!.get(1)!], [1.5, 2.5]);
  assert.equal(c.nothing, [null, null]);
  assert.equal(c.total, ['2', '2']);
});

types('other Arrow types load and come back: small and unsigned ints, decimals of each width, fixed-size lists and binaries, structs, large strings, time units', async () => {
  const dec = (scale: number, precision: number, bitWidth: number, values: bigint[]): arrow.Vector => {
    const words = bitWidth / 32;
    const data = new Uint32Array(values.length * words);
    values.forEach((v, i) => {
      let x = BigInt.asUintN(bitWidth, v);
      for (let w = 0; w < words; w++, x >>= 32n) data[i * words + w] = Number(x & 0xffffffffn);
    });
    return arrow.makeVector(arrow.makeData({ type: new arrow.Decimal(scale, precision, bitWidth), length: values.length, data }));
  };
  const t = new arrow.Table({
    i8: arrow.vectorFromArray([-128, 127, null], new arrow.Int8()),
    u8: arrow.vectorFromArray([0, 255, 1], new arrow.Uint8()),
    u16: arrow.vectorFromArray([0, 65535, 2], new arrow.Uint16()),
    u32: arrow.vectorFromArray([0, 4294967295, 3], new arrow.Uint32()),
    d4: dec(2, 4, 128, [-9999n, 9999n, 0n]),
    d9: dec(3, 9, 128, [-999999999n, 123456789n, 1n]),
    d18: dec(0, 18, 128, [-(10n ** 18n - 1n), 10n ** 18n - 1n, 2n]),
    d38: dec(5, 38, 128, [-(10n ** 38n - 1n), 10n ** 38n - 1n, 3n]),
    d256: dec(4, 20, 256, [-(10n ** 20n - 1n), 10n ** 20n - 1n, 4n]),
    fixed: arrow.vectorFromArray([[1, 2, 3], null, [7, 8, 9]], new arrow.FixedSizeList(3, new arrow.Field('item', new arrow.Int16(), true))),
    bin: arrow.vectorFromArray([new Uint8Array([1, 2]), new Uint8Array([3, 4]), null], new arrow.FixedSizeBinary(2)),
    st: arrow.vectorFromArray([{ a: 1, b: 'x' }, null, { a: 3, b: 'a string longer than twelve' }], new arrow.Struct([
      new arrow.Field('a', new arrow.Int32(), true), new arrow.Field('b', new arrow.Utf8(), true),
    ])),
    large: arrow.vectorFromArray(['short', 'a large-offset string over twelve bytes', null], new arrow.LargeUtf8()),
    tsS: arrow.vectorFromArray([0, 1_700_000_000_000, null], new arrow.TimestampSecond()),
    tsUs: arrow.vectorFromArray([0, 1_700_000_000_000, 5], new arrow.TimestampMicrosecond()),
    tsNs: arrow.vectorFromArray([0, 1_700_000_000_000, 5], new arrow.TimestampNanosecond()),
    tus: arrow.vectorFromArray([0, 86_399_999_999, null].map((x) => (x === null ? null : BigInt(x))), new arrow.TimeMicrosecond()),
  });
  const out = await local.applySql(t, 'SELECT * FROM t', { tableName: 't' });
  const expected = columns(t);
  // Binary kinds come back as Binary and large strings as Utf8: compare values, not types.
  assert.equal(columns(out), expected);
  assert.equal(out.schema.fields.map((f) => String(f.type)).slice(0, 9), t.schema.fields.map((f) => String(f.type)).slice(0, 4).concat(
    ['Decimal[4e+2]', 'Decimal[9e+3]', 'Decimal[18e0]', 'Decimal[38e+5]', 'Decimal[20e+4]'],
  ));
  const q = columns(await local.applySql(t, 'SELECT st.b AS b, fixed[2] AS f2, d38 + 0 AS d FROM t ORDER BY u8', { tableName: 't' }));
  assert.equal(q.b, ['x', 'a string longer than twelve', null]);
  assert.equal(q.f2, [2, 8, null]);
});

types.run();

const errors = suite('applySql: errors and edges');

errors('a SQL error rejects with DuckDB\'s message', async () => {
  const batch = allTypesBatch();
  await rejects(local.applySql(batch, 'SELEC 1'), 'ERR_SQL', /syntax error at or near "SELEC"/);
  await rejects(local.applySql(batch, 'SELECT * FROM nope'), 'ERR_SQL', /Table with name nope does not exist/);
  await rejects(local.applySql(batch, 'SELECT no_such_column FROM all_types'), 'ERR_SQL', /no_such_column/);
});

errors('empty SQL returns the dataset as it is', async () => {
  const batch = allTypesBatch();
  const out = await local.applySql(batch, '   ');
  assert.equal(columns(out), columns(batch));
});

errors('executeSqlOnEmpty: count(*) answers 0 under the id and the name, with the schema\'s columns', async () => {
  assert.equal(columns(await local.executeSqlOnEmpty(ALL_TYPES, 'SELECT count(*) AS n FROM all_types')), { n: ['0n'] });
  assert.equal(columns(await local.executeSqlOnEmpty(ALL_TYPES, 'SELECT count(*) AS n, max(u64) AS m FROM "All types"')), { n: ['0n'], m: [null] });
  const rows = await local.executeSqlOnEmpty(ALL_TYPES, 'SELECT * FROM all_types');
  assert.is(rows.numRows, 0);
  // The same column types as decoded rows: enums (and enum arrays) as dictionaries of the schema's labels.
  assert.equal(rows.schema.fields.map((f) => [f.name, String(f.type)]), allTypesBatch().schema.fields.map((f) => [f.name, String(f.type)]));
  assert.equal(columns(await local.executeSqlOnEmpty(ALL_TYPES, "SELECT count(*) AS n FROM all_types WHERE proto = 'tcp' AND list_contains(arr, 'udp')")), { n: ['0n'] });
  const arrowSchema = new arrow.Schema([new arrow.Field('x', new arrow.Int32())]);
  assert.equal(columns(await local.executeSqlOnEmpty(arrowSchema, 'SELECT count(*) AS n FROM t', { tableName: 't' })), { n: ['0n'] });
});

errors('bad names and options are refused, naming the setting', async () => {
  await rejects(local.applySql(allTypesBatch(), 'SELECT 1', { tableName: '' }), 'ERR_LOCAL_ARGS', /^tableName: /);
  await rejects(local.applySql(allTypesBatch(), 'SELECT 1', { aliases: [''] }), 'ERR_LOCAL_ARGS', /^aliases: /);
  assert.throws(() => new LocalSql({ threads: 0 }), /threads: must be an integer/);
  assert.throws(() => new LocalSql({ memoryLimit: 'lots' }), /memoryLimit: must look like/);
});

errors('a column type DuckDB cannot hold is named', async () => {
  const t = new arrow.Table({ m: arrow.makeVector(arrow.makeData({ type: new arrow.DurationSecond(), length: 2, data: new BigInt64Array(2) })) });
  await rejects(local.applySql(t, 'SELECT * FROM t', { tableName: 't' }), 'ERR_SQL_TYPE', /column "m"/);
});

errors('malformed Arrow data is refused before any copy; all-null columns without values load as nulls', async () => {
  const short = arrow.makeData({ type: new arrow.Int32(), length: 10, data: new Int32Array(2) });
  const bad = new arrow.Table(new arrow.Schema([new arrow.Field('x', new arrow.Int32())]), [
    new arrow.RecordBatch(new arrow.Schema([new arrow.Field('x', new arrow.Int32())]), arrow.makeData({
      type: new arrow.Struct([new arrow.Field('x', new arrow.Int32())]), length: 10, nullCount: 0, children: [short],
    })),
  ]);
  await rejects(local.applySql(bad, 'SELECT * FROM t', { tableName: 't' }), 'ERR_SQL_LOAD', /column "x": its Arrow buffers are shorter than its 10 rows/);
  // apache-arrow fills a column it lacks with all-null data that has no values at all.
  const filled = arrow.makeData({ type: new arrow.Utf8(), length: 3, nullCount: 3, nullBitmap: new Uint8Array(1), valueOffsets: new Int32Array(0), data: new Uint8Array(0) });
  const schema = new arrow.Schema([new arrow.Field('s', new arrow.Utf8(), true)]);
  const t = new arrow.Table(schema, [new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: 3, nullCount: 0, children: [filled] }))]);
  assert.equal(columns(await local.applySql(t, 'SELECT s, s IS NULL AS n FROM t', { tableName: 't' })), { s: [null, null, null], n: [true, true, true] });
});

errors.run();

const sessions = suite('LocalSqlSession');

sessions('batches as they arrive: register a schema, append, query; a foreign batch is refused', async () => {
  const session = await local.openSession();
  try {
    const batch = allTypesBatch();
    await session.register('flows', batch.schema);
    assert.equal(columns(await session.query('SELECT count(*) AS n FROM flows')), { n: ['0n'] });
    await session.append('flows', batch);
    await session.append('flows', batch.slice(1, 3));
    assert.equal(columns(await session.query('SELECT proto, count(*) AS n FROM flows GROUP BY proto ORDER BY proto')), {
      proto: ['icmp', 'tcp', 'udp'], n: ['2n', '2n', '1n'],
    });
    const other = new arrow.Table({ x: arrow.vectorFromArray([1], new arrow.Int32()) });
    await rejects(session.append('flows', other), 'ERR_SQL_LOAD', /append to flows: rows have columns \(x: Int32\)/);
    await rejects(session.append('nope', batch), 'ERR_LOCAL_ARGS', /no table registered/);
  } finally {
    await session.close();
  }
});

sessions('appends that arrive at once (one per Storage Node stream) all land, none replaces the table', async () => {
  const batch = allTypesBatch();
  // The second append starts 0, 1, 2... event-loop turns after the first, to land in each of its steps.
  for (let turns = 0; turns < 24; turns++) {
    const session = await local.openSession();
    try {
      session.register('flows', batch.schema).catch(() => undefined);
      const first = session.append('flows', batch);
      for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
      await Promise.all([first, session.append('flows', batch.slice(0, 2)), session.append('flows', batch)]);
      assert.equal(columns(await session.query('SELECT count(*) AS n FROM flows')), { n: [`${2 * batch.numRows + 2}n`] }, `second append ${turns} turns later`);
    } finally {
      await session.close();
    }
  }
});

sessions('several datasets in one session join (enum labels against text)', async () => {
  const session = await local.openSession();
  try {
    await session.register('all_types', allTypesBatch(), { aliases: ['All types'] });
    await session.register('names', new arrow.Table({
      label: arrow.vectorFromArray(['tcp', 'udp'], new arrow.Utf8()),
      full: arrow.vectorFromArray(['Transmission Control', 'User Datagram'], new arrow.Utf8()),
    }));
    const out = await session.query('SELECT a.v4, n.full FROM "All types" a JOIN names n ON a.proto = n.label ORDER BY a.v4');
    assert.equal(columns(out), { v4: ['192.168.1.2', '255.255.255.255'], full: ['User Datagram', 'Transmission Control'] });
    assert.equal([...session.tableNames], ['all_types', 'names']);
  } finally {
    await session.close();
  }
});

sessions('parameters are bound, not spliced', async () => {
  const session = await local.openSession();
  try {
    await session.register('all_types', allTypesBatch());
    const hostile = "x' OR 1=1 --";
    assert.equal(columns(await session.query('SELECT count(*) AS n FROM all_types WHERE v4 = $1 OR s = $2', { params: ['192.168.1.2', hostile] })), { n: ['1n'] });
    assert.equal(columns(await session.query('SELECT $1::UBIGINT + 1 AS big', { params: [2n ** 63n] })), { big: [`${2n ** 63n + 1n}n`] });
    await rejects(session.query('SELECT $1 + $2', { params: [1] }), 'ERR_SQL', /.+/);
  } finally {
    await session.close();
  }
});

sessions('concurrent applySql calls on one instance each see only their own rows', async () => {
  const tables = Array.from({ length: 6 }, (_x, k) => new arrow.Table({ x: arrow.vectorFromArray(Array.from({ length: 3000 + k }, (_y, i) => i), new arrow.Int32()) }));
  const sums = await Promise.all(tables.map((t) => local.applySql(t, 'SELECT count(*) AS n, sum(x) AS s FROM t', { tableName: 't' })));
  assert.equal(sums.map((r) => columns(r)), tables.map((t) => ({ n: [`${t.numRows}n`], s: [String((t.numRows * (t.numRows - 1)) / 2)] })));
});

sessions('sessions do not see each other\'s tables', async () => {
  const a = await local.openSession();
  const b = await local.openSession();
  try {
    await a.register('t', new arrow.Table({ x: arrow.vectorFromArray([1, 2, 3], new arrow.Int32()) }));
    await b.register('t', new arrow.Table({ x: arrow.vectorFromArray([10], new arrow.Int32()) }));
    assert.equal(columns(await a.query('SELECT sum(x) AS s FROM t')), { s: ['6'] });
    assert.equal(columns(await b.query('SELECT sum(x) AS s FROM t')), { s: ['10'] });
  } finally {
    await a.close();
    await b.close();
  }
});

const SLOW = 'SELECT sum(hash(i)) AS h FROM range(10000000000000) t(i)';

sessions('timeoutMs interrupts a running statement; the session stays usable', async () => {
  const session = await local.openSession();
  try {
    await rejects(session.query(SLOW, { timeoutMs: 50 }), 'ERR_SQL_INTERRUPTED', /timed out after 50 ms/);
    assert.equal(columns(await session.query('SELECT 42 AS x')), { x: [42] });
  } finally {
    await session.close();
  }
});

sessions('applySql: timeoutMs covers loading and the statement; an aborted signal stops a load', async () => {
  const big = new arrow.Table({ x: arrow.vectorFromArray(Array.from({ length: 400_000 }, (_v, i) => i), new arrow.Int32()) });
  await rejects(local.applySql(big, SLOW, { tableName: 't', timeoutMs: 60 }), 'ERR_SQL_INTERRUPTED', /timed out/);
  const ac = new AbortController();
  const session = await local.openSession();
  try {
    const p = session.register('t', big, { signal: ac.signal });
    ac.abort();
    await rejects(p, 'ERR_SQL_INTERRUPTED', /cancelled while loading rows/);
  } finally {
    await session.close();
  }
});

sessions('an abort signal cancels a running statement, and one already aborted does not start', async () => {
  const session = await local.openSession();
  try {
    const ac = new AbortController();
    const p = session.query(SLOW, { signal: ac.signal });
    setTimeout(() => ac.abort(), 30);
    await rejects(p, 'ERR_SQL_INTERRUPTED', /query cancelled/);
    await rejects(session.query('SELECT 1', { signal: ac.signal }), 'ERR_SQL_INTERRUPTED', /before it started/);
  } finally {
    await session.close();
  }
});

sessions('close releases a running statement; closed sessions and instances refuse work', async () => {
  const own = new LocalSql({ threads: 1 });
  const session = await own.openSession();
  const p = session.query(SLOW);
  setTimeout(() => void own.close(), 30);
  await rejects(p, 'ERR_SQL_INTERRUPTED', /session was closed/);
  await rejects(session.query('SELECT 1'), 'ERR_SQL_CLOSED', /closed/);
  await rejects(own.openSession(), 'ERR_SQL_CLOSED', /closed/);
  await own.close();
});

sessions('a large result converts in slices and can be abandoned between them', async () => {
  const db = await DuckDBInstance.create(':memory:', { threads: '1', autoinstall_known_extensions: 'false' });
  const conn = await db.connect();
  try {
    const result = await conn.run('SELECT range AS x FROM range(100000)');
    assert.ok(result.chunkCount > 32, `${result.chunkCount} chunks`);
    let asked = 0;
    try {
      await resultToArrow(result, undefined, () => {
        asked++;
        throw new Error('stop here');
      });
      assert.unreachable('should stop');
    } catch (err) {
      assert.is((err as Error).message, 'stop here');
    }
    assert.is(asked, 1);
    const whole = await resultToArrow(await conn.run('SELECT range AS x FROM range(100000)'));
    assert.is(whole.numRows, 100000);
    assert.is(whole.getChild('x')!.get(99999), 99999n);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
});

sessions.after(async () => {
  await local.close();
});
sessions.run();
