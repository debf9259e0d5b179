/**
 * The live catalog (sql/catalogRefresh.ts): datasets added, changed and removed in a real DMS
 * appear in a running hd_sql process (HD_SQL_CATALOG_REFRESH_MS) without a restart; a statement in
 * flight keeps the catalog it started with. The hd_sql process has no reachable SCC: its catalog
 * answers anyway, because a catalog statement dispatches no read (a dataset read fails, 08006).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { Schema } from '../../engine-rs/schema';
import { LocalSql } from '../../local/localSql';
import { registerWithDms } from '../../net/registerWithDms';
import { Catalog } from '../../sql/catalog';
import { catalogChange, startCatalogRefresh } from '../../sql/catalogRefresh';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { SqlEngine } from '../../sql/sqlEngine';
import { startTestDms, tempDir, type TestDms } from '../control/support';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { sqlProcessEnv } from './sqlProcessEnv';

const flowsDoc = JSON.parse(readFileSync(path.resolve(__dirname, '../../pipelines/examples/data/flows.schema.json'), 'utf8')) as { fields: object[] };
const withExtra = { ...flowsDoc, fields: [...flowsDoc.fields, { name: 'extra', offset: 48, size: 4, type: 'uint32', description: 'added later' }] };
const dnsDoc = { id: 'dns', record_size: 16, time_field: 'ts', fields: [{ name: 'ts', offset: 0, size: 8, type: 'timestamp' }, { name: 'qtype', offset: 8, size: 2, type: 'uint16' }] };

const engineSuite = suite('live catalog: the engine');

engineSuite('a statement in flight keeps the catalog it started with; the next one sees the new catalog', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  let fetching: () => void = () => undefined;
  const started = new Promise<void>((r) => (fetching = r));
  const fetcher: DatasetFetcher = {
    async fetch() {
      fetching();
      await gate;
      return { batchErrors: [], missingBatches: 0 };
    },
  };
  const local = new LocalSql({ threads: 1 });
  const engine = new SqlEngine(new Catalog([Schema.parse(flowsDoc)]), local, fetcher, { lookbackSec: 3600, timeoutMs: 20_000, maxRows: 0, qos: 1 }, () => 1_700_000_600);
  try {
    const inFlight = engine.execute('SELECT * FROM flows WHERE ts > 1700000000');
    await started;
    engine.setCatalog(new Catalog([Schema.parse(withExtra), Schema.parse(dnsDoc)]));
    release();
    const old = await inFlight;
    assert.is(old.table.schema.fields.length, 9, 'the statement ran with the 9 columns it was planned with');
    const now = await engine.execute('SELECT * FROM flows WHERE ts > 1700000000');
    assert.is(now.table.schema.fields.at(-1)?.name, 'extra');
    assert.equal((await engine.execute('SHOW TABLES')).table.toArray().map((r) => r.name), ['flows', 'dns']);
  } finally {
    await local.close();
  }
});

engineSuite('catalogChange names what was added, changed and removed; a failing source keeps the catalog', async () => {
  const a = [Schema.parse(flowsDoc), Schema.parse(dnsDoc)];
  assert.is(catalogChange(a, [Schema.parse(flowsDoc), Schema.parse(dnsDoc)]), undefined);
  assert.equal(catalogChange(a, [Schema.parse(withExtra)]), { added: [], changed: ['flows'], removed: ['dns'] });
  let current = new Catalog(a);
  const logs: string[] = [];
  let fail: Error | undefined = new Error('DMS down');
  const refresh = startCatalogRefresh({ intervalMs: 3_600_000, load: async () => {
    if (fail) throw fail;
    return [Schema.parse(flowsDoc), Schema.parse({ ...dnsDoc, name: 'flows' })];
  }, current: () => current, apply: (c) => (current = c), log: (l) => logs.push(l) });
  try {
    assert.is(await refresh.refreshNow(), undefined);
    assert.is(await refresh.refreshNow(), undefined);
    assert.equal(logs, ['catalog refresh failed, still serving the 2 dataset(s) read before: DMS down'], 'logged once');
    // Two datasets claiming one name cannot be served: the old catalog stays.
    fail = undefined;
    assert.is(await refresh.refreshNow(), undefined);
    assert.match(logs[1] ?? '', /datasets flows and dns are both named "flows"/);
    assert.is(current.schemas.length, 2);
  } finally {
    refresh.stop();
  }
});

const proc = suite('live catalog: a DMS and an hd_sql process');
const ctx: { dms?: TestDms; sql?: HdProcess; pgPort?: number; remove?: () => void } = {};

proc.before(async () => {
  const dms = (ctx.dms = await startTestDms());
  const t = tempDir('hd-livecat-');
  ctx.remove = t.remove;
  const ca = path.join(t.dir, 'ca.pem');
  writeFileSync(ca, dms.server.caCertPem);
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: flowsDoc })).status, 200);
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: 'hd-sql', role: 'sqlServer' })).body as { token: string }).token;
  const reg = await registerWithDms({ dmsUrl: dms.url, nodeName: 'hd-sql', role: 'sqlServer', caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
  assert.ok(reg.success, reg.error_message);
  const files = { ca, cert: path.join(t.dir, 'sql.crt'), key: path.join(t.dir, 'sql.key') };
  writeFileSync(files.cert, reg.signed_cert_pem);
  writeFileSync(files.key, reg.client_key_pem, { mode: 0o600 });
  const [pgPort, returnPort, noScc] = [await freePort(), await freePort(), await freePort()];
  ctx.pgPort = pgPort;
  // No SCC listens on noScc: every read would fail; the catalog must not need one.
  ctx.sql = startHd(['run', 'pipelines/sql.yaml', '--quiet'], sqlProcessEnv({ pgPort, returnPort, dms: { url: dms.url, ...files } }, { HD_SQL_SCC_TARGETS: `127.0.0.1:${noScc}`, HD_SQL_CATALOG_REFRESH_MS: '200', HD_SQL_QUERY_TIMEOUT_MS: '5000' }));
  await waitForPort('127.0.0.1', pgPort, ctx.sql, 60_000);
});
proc.after(async () => {
  await ctx.sql?.stop();
  await ctx.dms?.close();
  ctx.remove?.();
});

async function rows(text: string): Promise<unknown[][]> {
  const c = new pg.Client({ host: '127.0.0.1', port: ctx.pgPort, user: 'hd', database: 'hd' });
  await c.connect();
  try {
    return (await c.query({ text, rowMode: 'array' })).rows as unknown[][];
  } finally {
    await c.end();
  }
}

/** Re-runs `text` until `ok` holds of its rows (the refresh runs every 200 ms; bounded at 30 s). */
async function until(text: string, ok: (r: unknown[][]) => boolean): Promise<unknown[][]> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await rows(text);
    if (ok(r) || Date.now() > end) return r;
    await new Promise((res) => setTimeout(res, 50));
  }
}

const TABLES = 'SELECT table_name FROM information_schema.tables ORDER BY 1';
const COLUMNS = "SELECT a.attname, format_type(a.atttypid, a.atttypmod), col_description(a.attrelid, a.attnum) FROM pg_attribute a WHERE a.attrelid = 'flows'::regclass AND a.attnum > 0 ORDER BY a.attnum";

proc('a dataset added, changed and removed in the DMS appears in hd_sql without a restart', async () => {
  const dms = ctx.dms as TestDms;
  assert.equal(await rows(TABLES), [['flows']]);
  assert.is((await dms.call('PUT', '/v1/datasets/dns', dms.admin, { schema: dnsDoc })).status, 200);
  assert.equal(await until(TABLES, (r) => r.length === 2), [['dns'], ['flows']]);
  assert.equal(await rows("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'dns'::regclass AND attname = 'qtype'"), [['integer']]);
  assert.is((await dms.call('PUT', '/v1/datasets/flows', dms.admin, { schema: withExtra })).status, 200);
  const cols = await until(COLUMNS, (r) => r.length === 10);
  assert.equal(cols.at(-1), ['extra', 'bigint', 'added later']);
  assert.is((await dms.call('DELETE', '/v1/datasets/dns', dms.admin)).status, 200);
  assert.equal(await until(TABLES, (r) => r.length === 1), [['flows']]);
  const gone = await rows('SELECT * FROM dns').then(
    () => 'no error',
    (e: { code?: string }) => e.code,
  );
  assert.is(gone, '42P01');
});

proc('with no SCC reachable the catalog answers; a dataset read fails as unavailable', async () => {
  assert.equal(await rows("SELECT relname FROM pg_class WHERE relname = 'flows'"), [['flows']]);
  const read = await rows('SELECT count(*) FROM flows').then(
    () => 'no error',
    (e: { code?: string; message: string }) => `${e.code}: ${e.message}`,
  );
  assert.match(read, /^08006: the SCC cannot be reached/, 'a dataset read needs the SCC');
});

engineSuite.run();
proc.run();
