import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Logger, configureProcessLogger, levelOfLine, logLine } from '../../lib/logging';
import { freePort, startHd, waitForPort } from '../support/hdProcess';

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
logger('the process logger: bad settings fall back and say so; log(line) callbacks get levels from their words', () => {
  const s = sink();
  const { logger: l, problems } = configureProcessLogger({ LOG_LEVEL: 'loud', LOG_FORMAT: 'json' }, 'n', s);
  assert.is(l.level, 'info');
  assert.match(problems[0], /LOG_LEVEL 'loud'/);
  assert.is(levelOfLine('replica sn2 is down'), 'warn');
  assert.is(levelOfLine('connect failed: ECONNREFUSED'), 'warn');
  assert.is(levelOfLine('listening on 127.0.0.1:6986'), 'info');
  configureProcessLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }, 'n', s);
  logLine('dms: ')('listening on 127.0.0.1:6986');
  logLine('dms: ')('policy push failed');
  assert.equal(s.lines.map((x) => (JSON.parse(x) as { message: string }).message), ['dms: policy push failed']);
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

const proc = suite('LOG_LEVEL and LOG_FORMAT in a real node process (hd run pipelines/dms.yaml)');
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

logger.run();
proc.run();
