/**
 * The supervisor of `hd up` with real child processes (node scripts standing in for `hd run`): the
 * prepare step runs before every start and its env reaches the process, a failing prepare counts as
 * an exit and is retried, the pid is in the log, and stopAll during a prepare starts nothing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Supervisor, type NodeSpec, type SupervisorEvent } from '../../up/supervisor';

/** A "node" that prints its TOKEN and then exits with `code` (or stays up when code is empty). */
const SCRIPT = "console.log('token=' + process.env.TOKEN); const c = process.argv[1]; if (c) process.exit(Number(c)); else setInterval(() => undefined, 1000);";

async function until(cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function spec(name: string, exitCode: string, prepare?: NodeSpec['prepare']): NodeSpec {
  return { name, role: 'test', args: exitCode ? [exitCode] : [], env: {}, host: '127.0.0.1', readyPort: 1, healthUrl: 'http://127.0.0.1:1/health', ...(prepare ? { prepare } : {}) };
}

const sv = suite('up supervisor: prepare before every start');
let dir: string;
sv.before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'hd-sup-'));
});
sv.after(() => rmSync(dir, { recursive: true, force: true }));

sv('each start gets a fresh prepare (a single-use token per start); the pid is in the log', async () => {
  const events: SupervisorEvent[] = [];
  const sup = new Supervisor([process.execPath, '-e', SCRIPT], dir, path.join(dir, 'a'), (e) => events.push(e));
  let n = 0;
  sup.start(spec('crashy', '3', async () => ({ TOKEN: `t${++n}` })));
  try {
    await until(() => sup.exits('crashy') >= 2);
  } finally {
    await sup.stopAll();
  }
  const log = readFileSync(sup.logFile('crashy'), 'utf8');
  assert.match(log, /token=t1\n/);
  assert.match(log, /token=t2\n/);
  assert.match(log, /start: hd 3 \(pid \d+\)/);
  assert.ok(events.some((e) => e.kind === 'crashed' && e.code === 3));
});

sv('a prepare that fails counts as an exit, is logged and retried; stopAll during a prepare starts nothing', async () => {
  const events: SupervisorEvent[] = [];
  const sup = new Supervisor([process.execPath, '-e', SCRIPT], dir, path.join(dir, 'b'), (e) => events.push(e));
  let calls = 0;
  let release!: () => void;
  sup.start(
    spec('waits', '', async () => {
      calls++;
      if (calls === 1) throw new Error('the DMS is not up yet');
      await new Promise<void>((r) => (release = r));
      return { TOKEN: 'late' };
    }),
  );
  await until(() => calls === 2);
  assert.is(sup.exits('waits'), 1);
  assert.ok(events.some((e) => e.kind === 'crashed' && e.code === 'prepare failed'));
  await sup.stopAll();
  release();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(sup.pids(), { waits: undefined }, 'nothing was started after stopAll');
  const log = readFileSync(sup.logFile('waits'), 'utf8');
  assert.match(log, /could not prepare the start: the DMS is not up yet/);
  assert.not.match(log, /token=late/);
});

sv.run();
