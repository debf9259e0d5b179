/**
 * The session questions the PostgreSQL wire door answers itself (SHOW <setting>, SELECT version())
 * and the SETs that change them; SHOW TABLES and unknown settings still go to the engine.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { EXTRA_SETTINGS, sessionAnswer, SessionSettings } from '../../sql/pgwire/sessionQueries';
import { serveDoor } from './pgRawSession';

const rows = (t: { toArray(): unknown[] } | undefined): unknown[] => (t ? t.toArray().map((r) => ({ ...(r as object) })) : []);

const unit = suite('pgwire session questions');

unit('SHOW of a known setting, case-insensitive; SHOW ALL; TRANSACTION ISOLATION LEVEL; unknown and SHOW TABLES left to the engine', () => {
  const s = new SessionSettings({ ...EXTRA_SETTINGS, server_version: '16.0 (hd_sql)', DateStyle: 'ISO, MDY' });
  assert.equal(rows(sessionAnswer('show datestyle;', s)), [{ datestyle: 'ISO, MDY' }]);
  assert.equal(rows(sessionAnswer('SHOW server_version_num', s)), [{ server_version_num: '160000' }]);
  assert.equal(rows(sessionAnswer('SHOW TRANSACTION  ISOLATION LEVEL', s)), [{ transaction_isolation: 'read committed' }]);
  assert.ok(rows(sessionAnswer('SHOW ALL', s)).length >= Object.keys(EXTRA_SETTINGS).length + 2);
  assert.is(sessionAnswer('SHOW TABLES', s), undefined);
  assert.is(sessionAnswer('SHOW no_such_setting', s), undefined);
  assert.is(sessionAnswer('SELECT 1', s), undefined);
  assert.match(String(rows(sessionAnswer(' select pg_catalog.version ( ) ; ', s))[0]?.['version' as never]), /^PostgreSQL 16\.0 \(hd_sql\)/);
});

unit('SET name = value / TO value / quoted / DEFAULT updates what SHOW reports; other statements change nothing', () => {
  const s = new SessionSettings({ application_name: '' });
  s.noteSet("SET application_name = 'it''s me'");
  assert.is(s.get('APPLICATION_NAME'), "it's me");
  s.noteSet('SET SESSION extra_float_digits TO 3;');
  assert.is(s.get('extra_float_digits'), '3');
  s.noteSet('set application_name to default');
  assert.is(s.get('application_name'), '');
  s.noteSet('RESET ALL');
  s.noteSet('BEGIN');
  assert.is(s.get('extra_float_digits'), '3');
});

const wire = suite('pgwire session questions over the wire');
const server = serveDoor(wire, 10);

wire('the startup application_name is reported and SHOWn; SET changes it; an unknown SHOW gets the engine error', async () => {
  const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'tester', database: 'hd', application_name: 'from-startup' });
  await c.connect();
  try {
    assert.equal((await c.query('SHOW application_name')).rows, [{ application_name: 'from-startup' }]);
    await c.query("SET application_name = 'later'");
    assert.equal((await c.query({ text: 'SHOW application_name', values: [] })).rows, [{ application_name: 'later' }]);
    assert.equal((await c.query('SHOW transaction_read_only')).rows, [{ transaction_read_only: 'on' }]);
    const err = await c.query('SHOW no_such_setting').then(() => undefined, (e: { code?: string }) => e.code);
    assert.is(err, '0A000');
    assert.equal((await c.query('SHOW TABLES')).rows.length, 1);
  } finally {
    await c.end();
  }
});

unit.run();
wire.run();
