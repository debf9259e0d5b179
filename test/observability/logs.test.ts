import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Logger, configureProcessLogger, guessLevels, levelOfLine, logLine, type LogLevel } from '../../lib/logging';
import { freePort, startHd, waitForOutput, waitForPort } from '../support/hdProcess';
import { flowsSchemaJson } from '../sql/flowsFixture';
import { sqlProcessEnv } from '../sql/sqlProcessEnv';

const sink = (): { lines: string[]; write: (s: string) => void } => {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(...s.split('\n').filter((l) => l !== '')) };
};

const logger = suite('Logger');
logger('LOG_LEVEL drops lines below it; json lines carry level, time, node, message and fields', () => {
  const s = sink();
  const log = new Logger({ level: 'warn', format: 'json', node: 'sn1', sink: s, now: () => 0 });
  log.debug('d');
  log.info('i');
  log.warn('w', { replica: 'sn2' });
  log.error('e');
  assert.equal(s.lines.map((l) => JSON.parse(l) as unknown), [
    { level: 'warn', time: '1970-01-01T00:00:00.000Z', node: 'sn1', message: 'w', replica: 'sn2' },
    { level: 'error', time: '1970-01-01T00:00:00.000Z', node: 'sn1', message: 'e' },
  ]);
});
logger('text is one human-readable line with time, level and node', () => {
  const s = sink();
  new Logger({ level: 'debug', node: 'scc1', sink: s, now: () => 0 }).debug('hello');
  assert.equal(s.lines, ['1970-01-01T00:00:00.000Z DEBUG scc1: hello']);
});
logger('the process logger: bad settings fall back and say so; log(line, level) callbacks write the level they are given', () => {
  const s = sink();
  const { logger: l, problems } = configureProcessLogger({ LOG_LEVEL: 'loud', LOG_FORMAT: 'json' }, 'n', s);
  assert.is(l.level, 'info');
  assert.match(problems[0], /LOG_LEVEL 'loud'/);
  configureProcessLogger({ LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, 'n', s);
  const log = logLine('dms: ');
  // The stated level wins over the words: a failure word at info, none at warn.
  log('policy push failed once, then went through', 'info');
  log('the doors accept anyone who can reach them', 'warn');
  log('debug detail', 'debug');
  assert.equal(s.lines.map((x) => JSON.parse(x) as { level: string; message: string }).map((o) => [o.level, o.message]), [
    ['info', 'dms: policy push failed once, then went through'],
    ['warn', 'dms: the doors accept anyone who can reach them'],
  ]);
  configureProcessLogger({});
});
logger('the fallback for bare lines (code that states no level): the level is guessed from the words', () => {
  const s = sink();
  assert.is(levelOfLine('replica sn2 is down'), 'warn');
  assert.is(levelOfLine('connect failed: ECONNREFUSED'), 'warn');
  assert.is(levelOfLine('listening on 127.0.0.1:6986'), 'info');
  configureProcessLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }, 'n', s);
  logLine('dms: ')('listening on 127.0.0.1:6986');
  logLine('dms: ')('policy push failed');
  const seen: [string, LogLevel][] = [];
  guessLevels((line, level) => seen.push([line, level]))('replica sn2 is down');
  assert.equal(s.lines.map((x) => (JSON.parse(x) as { message: string }).message), ['dms: policy push failed']);
  assert.equal(seen, [['replica sn2 is down', 'warn']]);
  configureProcessLogger({});
});

/** Runs `hd run pipelines/dms.yaml` with `env` until its port answers, stops it, returns its output. */
async function dmsOutput(env: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-logs-'));
  const port = await freePort();
  const hd = startHd(['run', 'pipelines/dms.yaml', '--quiet'], {
    DMS_DATA_DIR: dir, COMMAND_INTERFACE: '127.0.0.1', COMMAND_PORT: String(port), OBSERVABILITY_INTERFACE: '127.0.0.1', OBSERVABILITY_PORT: '0',
    DMS_MIN_KEY_BITS: '2048', DMS_CA_KEY_BITS: '2048', DMS_WEBUX_PORT: '-1', NODE_NAME: 'dms-logs', LOG_LEVEL: '', LOG_FORMAT: '', ...env,
  });
  try {
    await waitForPort('127.0.0.1', port, hd, 60_000);
  } finally {
    await hd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return hd.output();
}

const proc = suite('LOG_LEVEL and LOG_FORMAT in real node processes (hd run pipelines/dms.yaml, pipelines/sql.yaml)');
proc('json: every line parses, info lines included; warn: the same node prints no info line, warnings still show', async () => {
  const [json, warn] = await Promise.all([dmsOutput({ LOG_FORMAT: 'json' }), dmsOutput({ LOG_LEVEL: 'warn', LOG_FORMAT: 'bogus' })]);
  const lines = json.split('\n').filter((l) => l.trim() !== '');
  const objs = lines.map((l) => JSON.parse(l) as { level: string; time: string; node: string; message: string });
  for (const o of objs) {
    assert.ok(['debug', 'info', 'warn', 'error'].includes(o.level));
    assert.ok(!Number.isNaN(Date.parse(o.time)));
    assert.is(o.node, 'dms-logs');
  }
  assert.ok(objs.some((o) => o.level === 'info' && o.message.includes('DMS-Core listening')), json);
  assert.not.match(warn, /DMS-Core listening/);
  assert.not.match(warn, / INFO /);
  assert.match(warn, / WARN {2}dms-logs: LOG_FORMAT 'bogus' is not one of text, json/);
});

/** Runs `hd run pipelines/sql.yaml` (no credential, loopback doors, an SCC nobody listens on) with `env` until its last start-up line, stops it, returns its output. */
async function sqlOutput(env: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-logs-sql-'));
  writeFileSync(path.join(dir, 'flows.json'), flowsSchemaJson);
  const [pgPort, returnPort, dead] = [await freePort(), await freePort(), await freePort()];
  const hd = startHd(['run', 'pipelines/sql.yaml', '--quiet'], sqlProcessEnv({ pgPort, returnPort }, { HD_SQL_SCC_TARGETS: `127.0.0.1:${dead}:${dead}`, HD_SQL_SCHEMA_DIR: dir, NODE_NAME: 'sql-logs', LOG_LEVEL: '', LOG_FORMAT: '', ...env }));
  try {
    await waitForPort('127.0.0.1', pgPort, hd, 60_000);
    // The security warning is written after the start-up lines, once every door listens.
    await waitForOutput(hd, DOOR_WARNING);
  } finally {
    await hd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return hd.output();
}
const DOOR_WARNING = 'HD_SQL_PGWIRE_PASSWORD_FILE is not set';

proc('hd_sql: each line has the level its call site states (a warning whose words guess info), LOG_LEVEL=warn keeps only the warnings', async () => {
  const [json, warn] = await Promise.all([sqlOutput({ LOG_FORMAT: 'json' }), sqlOutput({ LOG_LEVEL: 'warn' })]);
  const objs = json.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { level: string; node: string; message: string });
  const door = objs.find((o) => o.message.includes(DOOR_WARNING));
  assert.ok(door, json);
  assert.is(door.level, 'warn');
  assert.is(levelOfLine(door.message), 'info', 'its words alone would have made it info: the level is the call site\'s');
  assert.is(objs.find((o) => o.message.includes('PostgreSQL wire on 127.0.0.1'))?.level, 'info', json);
  for (const o of objs) assert.is(o.node, 'sql-logs');
  assert.match(warn, new RegExp(` WARN {2}sql-logs: hd_sql: WARNING: ${DOOR_WARNING}`));
  assert.not.match(warn, / INFO /);
  assert.not.match(warn, /PostgreSQL wire on/);
});

logger.run();
proc.run();
