/** The HTTP door over real HTTP: JSON rows, Arrow IPC, notices, the catalog routes and every error code. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as arrow from 'apache-arrow';
import { httpDoor } from '../../sql/httpDoor';
import { memoryEngine, T0 } from './support';

const http = suite('sql HTTP door');
const { engine, local } = memoryEngine(300, { maxRows: 50 });
const app = httpDoor(engine);
let base = '';
http.before(async () => {
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
http.after(async () => {
  await app.close();
  await local.close();
});
const post = (body: unknown, headers: Record<string, string> = {}): Promise<Response> => fetch(`${base}/v1/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

http('POST /v1/query answers columns, rows and notices; params bind; HD_SQL_MAX_ROWS cuts with a notice', async () => {
  const r = await post({ sql: `SELECT proto, count(*) AS n FROM flows WHERE ts >= $1 AND ts < ${T0 + 30} GROUP BY proto ORDER BY proto`, params: [T0] });
  assert.is(r.status, 200);
  const j = (await r.json()) as { columns: { name: string }[]; rows: unknown[][]; notices: string[] };
  assert.equal(j.columns.map((c) => c.name), ['proto', 'n']);
  assert.equal(j.rows, [['icmp', 10], ['tcp', 10], ['udp', 10]]);
  assert.equal(j.notices, []);
  const capped = (await (await post({ sql: `SELECT ts FROM flows WHERE ts >= ${T0}` })).json()) as { rows: unknown[]; notices: string[] };
  assert.is(capped.rows.length, 50);
  assert.match(capped.notices.join(' '), /HD_SQL_MAX_ROWS/);
  const list = (await (await fetch(`${base}/v1/sql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: "SELECT [1,2] AS a, 'x' AS b" }) })).json()) as { rows: unknown[][] };
  assert.equal(list.rows, [[[1, 2], 'x']]);
});

http('Accept: application/vnd.apache.arrow.stream answers Arrow IPC', async () => {
  const r = await post({ sql: `SELECT ts, proto FROM flows WHERE ts < ${T0 + 3} AND ts >= ${T0} ORDER BY ts` }, { accept: 'application/vnd.apache.arrow.stream' });
  assert.is(r.headers.get('content-type'), 'application/vnd.apache.arrow.stream');
  const t = arrow.tableFromIPC(new Uint8Array(await r.arrayBuffer()));
  assert.equal(t.toArray().map((x) => `${x.ts}:${x.proto}`), [`${T0}:tcp`, `${T0 + 1}:udp`, `${T0 + 2}:icmp`]);
});

http('errors: 400 unsupported_statement / invalid_statement, 404 unknown_dataset, bad bodies; catalog routes', async () => {
  const codeOf = async (body: unknown): Promise<string> => {
    const r = await post(body);
    const j = (await r.json()) as { error: { code: string; sqlstate: string } };
    return `${r.status} ${j.error.code} ${j.error.sqlstate}`;
  };
  assert.is(await codeOf({ sql: 'DELETE FROM flows' }), '400 unsupported_statement 0A000');
  assert.is(await codeOf({ sql: 'SELEC 1' }), '400 invalid_statement 42601');
  assert.is(await codeOf({ sql: 'SELECT * FROM nope' }), '404 unknown_dataset 42P01');
  assert.is(await codeOf({ nosql: 1 }), '400 invalid_statement 42601');
  const ds = (await (await fetch(`${base}/v1/datasets`)).json()) as { datasets: { id: string }[] };
  assert.equal(ds.datasets.map((d) => d.id), ['flows']);
  const one = (await (await fetch(`${base}/v1/datasets/Network%20flows`)).json()) as { id: string; columns: { name: string; sql_type: string }[] };
  assert.is(one.id, 'flows');
  assert.is(one.columns.find((c) => c.name === 'proto')?.sql_type, 'text');
  assert.is((await fetch(`${base}/v1/datasets/nope`)).status, 404);
});

http.run();
