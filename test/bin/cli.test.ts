import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EXIT, main, topHelp, type CliIo } from '../../bin/cli';
import { testRegistry } from '../pipelines/testStages';

interface Captured extends CliIo {
  out: string;
  err: string;
}
const io = (env: Record<string, string> = {}): Captured => {
  const c: Captured = {
    out: '',
    err: '',
    stdout: { write: (s: string) => (c.out += s) },
    stderr: { write: (s: string) => (c.err += s), isTTY: false },
    env,
    registry: testRegistry(),
    handleSignals: false,
  };
  return c;
};

const dir = mkdtempSync(path.join(tmpdir(), 'hd-cli-'));
writeFileSync(path.join(dir, 'in.bin'), Buffer.alloc(5000, 7));
const good = path.join(dir, 'good.yaml');
writeFileSync(good, 'pipeline: good\nstages:\n  src: { type: fileSource, path: in.bin }\n  out: { type: bytesSink, inputs: [src], slow: false }\n');
const bad = path.join(dir, 'bad.yaml');
writeFileSync(bad, 'pipeline: bad\nstages:\n  src: { type: fileSrc, path: in.bin }\n  out: { type: bytesSink, inputs: [nope] }\n');
const envd = path.join(dir, 'env.yaml');
writeFileSync(envd, 'pipeline: env\nstages:\n  src:\n    type: fileSource\n    path: ${IN}\n  out: { type: bytesSink, inputs: [src], slow: false }\n');
const failing = path.join(dir, 'failing.yaml');
writeFileSync(failing, 'pipeline: failing\nstages:\n  src: { type: fileSource, path: missing.bin }\n  out: { type: bytesSink, inputs: [src] }\n');

const help = suite('hd help');
help('--help lists exactly the commands that exist', async () => {
  const c = io();
  assert.is(await main(['--help'], c), EXIT.ok);
  assert.is(c.out, topHelp());
  assert.match(c.out, /run\s+run a pipeline/);
  assert.match(c.out, /validate\s+check a pipeline file/);
  assert.match(c.out, /up\s+run the whole platform/);
  assert.match(c.out, /status\s+show the nodes/);
  assert.match(c.out, /down\s+stop the platform/);
  assert.not.match(c.out, /\bfrobnicate\b/);
});
help('no arguments prints help and is a usage error', async () => {
  const c = io();
  assert.is(await main([], c), EXIT.usage);
  assert.match(c.out, /Usage: hd <command>/);
});
help('each command has its own help', async () => {
  for (const cmd of ['run', 'validate']) {
    const c = io();
    assert.is(await main([cmd, '--help'], c), EXIT.ok);
    assert.match(c.out, new RegExp(`Usage: hd ${cmd} <pipeline.yaml>`));
  }
  const c = io();
  assert.is(await main(['help', 'run'], c), EXIT.ok);
  assert.match(c.out, /--quiet/);
});
help('unknown command: help on stderr and exit 2', async () => {
  const c = io();
  assert.is(await main(['frobnicate'], c), EXIT.usage);
  assert.match(c.err, /unknown command 'frobnicate'/);
  assert.match(c.err, /Commands:/);
});
help('bad options and a missing file argument are usage errors', async () => {
  const c = io();
  assert.is(await main(['run', good, '--bogus'], c), EXIT.usage);
  assert.match(c.err, /bogus/);
  const d = io();
  assert.is(await main(['validate'], d), EXIT.usage);
  assert.match(d.err, /expected one pipeline file, got 0/);
});
help('--version', async () => {
  const c = io();
  assert.is(await main(['--version'], c), EXIT.ok);
  assert.match(c.out, /^hd \d+\.\d+\.\d+/);
});
help.run();

const validate = suite('hd validate');
validate('a good file: exit 0 and a one-line summary', async () => {
  const c = io();
  assert.is(await main(['validate', good], c), EXIT.ok);
  assert.match(c.out, /ok, pipeline 'good' with 2 stages \(1 sources, 0 operators, 1 sinks\)/);
});
validate('a bad file: every problem with file:line:col, exit 1', async () => {
  const c = io();
  assert.is(await main(['validate', bad], c), EXIT.failed);
  assert.ok(c.err.includes(`${bad}:3:16: stage 'src': unknown stage type 'fileSrc'`), c.err);
  assert.ok(c.err.includes(`${bad}:4:36: stage 'out': input 'nope' is not a stage`), c.err);
  assert.match(c.err, /2 problems/);
});
validate('a missing file is reported, exit 1', async () => {
  const c = io();
  assert.is(await main(['validate', path.join(dir, 'absent.yaml')], c), EXIT.failed);
  assert.match(c.err, /cannot read the pipeline file/);
});
validate('--config values feed ${VAR}', async () => {
  const cfg = path.join(dir, 'cfg.yaml');
  writeFileSync(cfg, 'IN: in.bin\n');
  const c = io();
  assert.is(await main(['validate', envd], c), EXIT.failed);
  assert.match(c.err, /env.yaml:5:11: environment variable IN is not set/);
  const d = io();
  assert.is(await main(['validate', envd, '--config', cfg], d), EXIT.ok, d.err);
  writeFileSync(cfg, '- a list\n');
  const e = io();
  assert.is(await main(['validate', envd, '--config', cfg], e), EXIT.failed);
  assert.match(e.err, /a config file is a map/);
});
validate.run();

const run = suite('hd run');
run('runs to completion and prints the counters', async () => {
  const c = io();
  assert.is(await main(['run', good], c), EXIT.ok, c.err);
  assert.match(c.err, /src\s+fileSource\s+bytes\s+5,000\s+5,000\s+0/);
  assert.match(c.err, /good .*5,000 records/);
});
run('--quiet prints nothing on success', async () => {
  const c = io();
  assert.is(await main(['run', good, '--quiet'], c), EXIT.ok);
  assert.is(c.err, '');
  assert.is(c.out, '');
});
run('environment values resolve', async () => {
  const c = io({ IN: 'in.bin' });
  assert.is(await main(['run', envd, '-q'], c), EXIT.ok, c.err);
});
run('an invalid file does not run: exit 1', async () => {
  const c = io();
  assert.is(await main(['run', bad], c), EXIT.failed);
  assert.match(c.err, /bad\.yaml:3:16/);
});
run('a failing stage: exit 1 naming the stage', async () => {
  const c = io();
  assert.is(await main(['run', failing, '-q'], c), EXIT.failed);
  assert.match(c.err, /stage 'src': .*ENOENT/);
});
run.run();
