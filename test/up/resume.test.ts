/**
 * `hd up` interrupted during its first start, as a user does it, with real processes: Ctrl-C
 * (SIGINT to the terminal's whole foreground process group) while the demo loads stops the nodes
 * in order and nothing restarts; a SIGKILL of `hd up` itself leaves its nodes running, which the
 * next start stops; that next start resumes the demo where it was cut and ends with the whole
 * demo answered. It also runs every command the ready message prints (curl to the DMS, the
 * PGPASSWORD export, psql, the HTTP door, the SDK example) exactly as printed. And the fatal
 * errors: one line, the log to read, a non-zero status.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chessDataset } from '../../up/demoData';
import { HOLD_ENV } from '../../up/demoLoad';
import { pidsFile } from '../../up/leftovers';

const NET = '127.79';
const ROOT = path.resolve(__dirname, '../..');
/** Smaller keys than hd up's default 4096 bits: faster starts (see test/up/up.test.ts). */
const KEYS = { DMS_CA_KEY_BITS: '2048', DMS_MIN_KEY_BITS: '2048', PLATFORM_KEY_BITS: '2048' };
const ENTRY = "require('./bin/cli').main(process.argv.slice(1)).then((c) => process.exit(c ?? 0), (e) => { console.error(e); process.exit(1); })";

/** `hd up` started as a shell starts a foreground job: the leader of its own process group. */
interface Job {
  readonly proc: ChildProcess;
  output(): string;
  readonly exited: Promise<number | string>;
}

function startJob(args: readonly string[], env: Record<string, string> = {}): Job {
  const proc = spawn(process.execPath, ['-r', 'tsx/cjs', '-e', ENTRY, ...args], { cwd: ROOT, env: { ...process.env, ...KEYS, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { proc, output: () => out, exited };
}

async function until(what: string, job: Job, test: () => boolean, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (job.proc.exitCode !== null || job.proc.signalCode !== null) throw new Error(`hd up exited before ${what}:\n${job.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms:\n${job.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The node pids hd up recorded. */
const nodePids = (dir: string): Record<string, number> => JSON.parse(readFileSync(pidsFile(dir), 'utf8')) as Record<string, number>;

/** Stops a job and every node it left (their groups), whatever state the test left them in. */
async function cleanup(job: Job | undefined, dir: string): Promise<void> {
  const pids = existsSync(pidsFile(dir)) ? Object.values(nodePids(dir)) : [];
  if (job?.proc.pid && job.proc.exitCode === null && job.proc.signalCode === null) {
    process.kill(job.proc.pid, 'SIGTERM');
    const t = setTimeout(() => job.proc.kill('SIGKILL'), 30_000);
    await job.exited;
    clearTimeout(t);
  }
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

const landed = (dir: string, dataset: string): number => (existsSync(path.join(dir, 'demo', `${dataset}.landed`)) ? readFileSync(path.join(dir, 'demo', `${dataset}.landed`), 'utf8').trim().split('\n').length : 0);

const t = suite('hd up: interrupted first starts resume');
let dir: string;
let hold: string;
t.before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-up-resume-'));
  hold = `${dir}.hold`;
});
t.after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(hold, { force: true });
});

t('Ctrl-C while the demo loads reaches hd up only, which stops the nodes in order; nothing restarts', async () => {
  writeFileSync(hold, '');
  const job = startJob(['up', '--demo', 'small', '--data-dir', dir, '--net', NET], { [HOLD_ENV]: hold });
  try {
    await until('the held ingest', job, () => job.output().includes('holding the demo ingest'));
    const out = job.output();
    // The doors answer before the demo is in, and the ready message says it loads in the background.
    assert.match(out, 'HD is up.');
    assert.match(out, /flows: loading in the background \(20,000 records\)/);
    assert.match(out, /Queries answer now and see each batch as it lands/);
    const pids = nodePids(dir);
    assert.equal(Object.keys(pids), ['dms', 'sn1', 'sn2', 'scc', 'proxy', 'sql']);
    // Each node leads its own process group: a terminal's Ctrl-C does not reach it.
    for (const pid of Object.values(pids)) assert.is(Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[2]), pid, `pid ${pid} leads its group`);
    process.kill(-(job.proc.pid as number), 'SIGINT');
    assert.is(await job.exited, 0, job.output());
    assert.match(job.output(), 'hd up: stopping...');
    assert.not.match(job.output(), /restarting/);
    // Stopped the last started first: hd_sql and the Proxy, the SCC, the Storage Nodes, the DMS — each once, cleanly.
    const exitAt = (n: string): number => {
      const exits = [...readFileSync(path.join(dir, 'logs', `${n}.log`), 'utf8').matchAll(/--- (\S+) exit: (\S+)/g)];
      assert.is(exits.length, 1, `${n} exited once`);
      assert.is(exits[0]?.[2], '0', `${n} exited cleanly`);
      return Date.parse(exits[0]?.[1] as string);
    };
    assert.ok(Math.max(exitAt('sql'), exitAt('proxy')) <= exitAt('scc'));
    assert.ok(exitAt('scc') <= Math.min(exitAt('sn1'), exitAt('sn2')));
    assert.ok(Math.max(exitAt('sn1'), exitAt('sn2')) <= exitAt('dms'));
    for (const pid of Object.values(pids)) assert.not.ok(alive(pid), `node pid ${pid} has exited`);
    assert.ok(landed(dir, 'flows') >= 1, 'a batch landed before the interruption');
    assert.not.ok(existsSync(path.join(dir, 'demo.json')), 'the demo is not complete');
  } finally {
    await cleanup(job, dir);
  }
});

t('a SIGKILL of hd up leaves its nodes running; the next start stops them, resumes the demo and answers all of it', async () => {
  // The second start resumes, lands one more batch and is killed.
  const before = landed(dir, 'flows');
  const killed = startJob(['up', '--demo', 'small', '--data-dir', dir, '--net', NET], { [HOLD_ENV]: hold });
  let pids: Record<string, number> = {};
  try {
    await until('the held ingest', killed, () => killed.output().includes('holding the demo ingest'));
    assert.match(killed.output(), `resuming the flows demo: ${before} batches landed on an earlier start`);
    pids = nodePids(dir);
    process.kill(killed.proc.pid as number, 'SIGKILL');
    await killed.exited;
    assert.ok(Object.values(pids).some(alive), 'nodes outlive a killed hd up (their own process groups)');
  } finally {
    rmSync(hold, { force: true });
    if (killed.proc.exitCode === null && killed.proc.signalCode === null) await cleanup(killed, dir);
  }
  const job = startJob(['up', '--demo', 'small', '--data-dir', dir, '--net', NET]);
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'hd-up-sdk-'));
  try {
    await until('the demo loaded', job, () => job.output().includes('hd up: data loaded:'));
    const out = job.output();
    assert.match(out, /hd up: stopped [a-z0-9, ]+, left running by an earlier 'hd up'/);
    for (const pid of Object.values(pids)) assert.not.ok(alive(pid), `the earlier node pid ${pid} was stopped`);
    assert.match(out, /resuming the flows demo: \d+ batches landed on an earlier start, sending the rest/);
    const chessRows = chessDataset(10, 2, 3600).rows;
    assert.match(out, new RegExp(`data loaded: flows 20,000 records in \\d+ batches, chess ${chessRows.toLocaleString('en-US')} records`), out);

    // Every command the ready message prints, exactly as printed (the SDK example from another directory).
    const line = (re: RegExp): string => {
      const m = re.exec(out);
      if (!m) throw new Error(`the ready message has no line like ${re}:\n${out}`);
      return m[1] as string;
    };
    const dmsCurl = line(/^ {4}(curl --cacert .*\/v1\/topology)$/m);
    const exportLine = line(/^ {2}(export PGPASSWORD=.*?)\s{3}\(/m);
    const psqlLine = line(/^ {2}(psql -h .*)$/m);
    const httpLine = line(/^ {2}HTTP: (curl .*)$/m);
    const sdk = /^ {2}(node -e '\n[\s\S]*?\}\)\(\);')$/m.exec(out)?.[1];
    assert.ok(sdk, `the ready message has the SDK example:\n${out}`);
    const sh = (script: string): string => execFileSync('bash', ['-c', script], { cwd: scratch, encoding: 'utf8', timeout: 60_000 });
    assert.match(sh(dmsCurl), /"primary_cluster":"c1"/);
    assert.match(sh(`${exportLine}\necho 'SELECT count(*) AS n FROM flows;' | ${psqlLine}`), /^\s*20000\s*$/m);
    assert.match(sh(`${exportLine}\necho 'SELECT count(*) AS n FROM chess;' | ${psqlLine}`), new RegExp(`^\\s*${chessRows}\\s*$`, 'm'));
    assert.match(sh(`${exportLine}\n${httpLine}`), /flows/);
    assert.ok(existsSync(path.join(ROOT, 'dist', 'index.js')), "the SDK example loads the built package: run 'npm run build'");
    assert.is(sh(sdk as string).trim(), '20000');

    process.kill(job.proc.pid as number, 'SIGTERM');
    assert.is(await job.exited, 0, job.output());
    assert.ok(existsSync(path.join(dir, 'demo.json')), 'the demo is complete');
  } finally {
    await cleanup(job, dir);
    rmSync(scratch, { recursive: true, force: true });
  }
});

t('a fatal error: one line with the reason and the log, a non-zero status, nothing left running', async () => {
  // The DMS's port is taken by another program: said before any node starts.
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(6986, `${NET}.10.1`, resolve));
  const other = mkdtempSync(path.join(os.tmpdir(), 'hd-up-fatal-'));
  const job = startJob(['up', '--demo', 'none', '--data-dir', other, '--net', NET]);
  try {
    assert.is(await job.exited, 1, job.output());
    assert.is(job.output().trim(), `hd up: ${NET}.10.1:6986 (dms's port) is in use by another program; stop it, or give hd up other addresses with --net 127.<n> — log: ${path.join(other, 'logs', 'up.log')}`);
    assert.not.ok(existsSync(pidsFile(other)), 'nothing was started');
  } finally {
    blocker.close();
    await cleanup(job, other);
  }
  // A schema without an id fails before any node starts: the reason, and hd up's own log.
  const schema = path.join(other, 'bad.schema.json');
  writeFileSync(schema, '{"fields": []}');
  writeFileSync(path.join(other, 'x.ndjson'), '');
  const bad = startJob(['up', '--demo', 'none', '--data-dir', other, '--net', NET, '--ingest', path.join(other, 'x.ndjson'), '--schema', schema]);
  assert.is(await bad.exited, 1, bad.output());
  assert.is(bad.output().trim(), `hd up: --schema ${schema}: no usable "id" — log: ${path.join(other, 'logs', 'up.log')}`);
  assert.match(readFileSync(path.join(other, 'logs', 'up.log'), 'utf8'), /fatal: Error: --schema/);
  // Files that are not there: refused before anything starts.
  const missing = startJob(['up', '--data-dir', other, '--ingest', path.join(other, 'nope.ndjson'), '--schema', schema]);
  assert.is(await missing.exited, 2);
  assert.is(missing.output().trim(), `hd up: --ingest ${path.join(other, 'nope.ndjson')}: no such file`);
  rmSync(other, { recursive: true, force: true });
});

t.run();
