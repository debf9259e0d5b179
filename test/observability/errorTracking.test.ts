import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkDsn, errorTrackingState } from '../../lib/errorTracking';

const root = path.resolve(__dirname, '..', '..');

/** A local HTTP server standing in for the Sentry ingest endpoint; counts every TCP connection. */
async function startTracker(): Promise<{ port: number; connections: () => number; requests: { url: string; body: string }[]; close: () => Promise<void> }> {
  const requests: { url: string; body: string }[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const raw = Buffer.concat(parts);
      requests.push({ url: req.url ?? '', body: (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString() });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, connections: () => connections, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Runs the crashing fixture with `env`; resolves with its exit code and output. */
function runCrash(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-r', 'tsx/cjs', 'test/observability/crashFixture.ts'], { cwd: root, env: { ...process.env, PLATFORM_OPT_IN: '', TRACKER_DSN: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('exit', (code) => resolve({ code, out }));
  });
}

const settings = suite('error tracking settings');
settings('on only with PLATFORM_OPT_IN=true and a Sentry-format DSN', () => {
  const dsn = 'https://abc123@o1.ingest.example.com/42';
  assert.equal(errorTrackingState({ PLATFORM_OPT_IN: 'true', TRACKER_DSN: dsn }), { enabled: true, dsn });
  assert.equal(errorTrackingState({ PLATFORM_OPT_IN: 'TRUE', TRACKER_DSN: dsn }).enabled, true);
  assert.equal(errorTrackingState({ PLATFORM_OPT_IN: 'false', TRACKER_DSN: dsn }).enabled, false);
  assert.equal(errorTrackingState({ TRACKER_DSN: dsn }).enabled, false);
  assert.equal(errorTrackingState({ PLATFORM_OPT_IN: 'true' }).enabled, false);
  assert.equal(checkDsn(dsn), undefined);
  assert.match(checkDsn('https://o1.example.com/42') ?? '', /public key/);
  assert.match(checkDsn('https://k@o1.example.com/') ?? '', /project id/);
  assert.match(checkDsn('not a url') ?? '', /not a URL/);
});

const crash = suite('a crash and the tracker (real process, real socket)');
crash('opted in: the uncaught error reaches the tracker as a Sentry envelope for the DSN\'s project', async () => {
  const t = await startTracker();
  try {
    const r = await runCrash({ PLATFORM_OPT_IN: 'true', TRACKER_DSN: `http://publickey1@127.0.0.1:${t.port}/7` });
    assert.ok(r.out.includes('tracking on'), r.out);
    assert.is.not(r.code, 0);
    const hit = t.requests.find((q) => q.body.includes('fixture crash 7f3a'));
    assert.ok(hit, `no event with the error; got ${JSON.stringify(t.requests.map((q) => q.url))}`);
    assert.match(hit.url, /^\/api\/7\/envelope\//);
    assert.ok(hit.body.includes('crash-node'), 'the node name goes with the event');
  } finally {
    await t.close();
  }
});
crash('not opted in (DSN set): the process crashes the same and no connection reaches the tracker', async () => {
  const t = await startTracker();
  try {
    const r = await runCrash({ PLATFORM_OPT_IN: 'false', TRACKER_DSN: `http://publickey1@127.0.0.1:${t.port}/7` });
    assert.ok(r.out.includes('tracking off'), r.out);
    assert.ok(r.out.includes('fixture crash 7f3a'), 'the crash itself happened');
    assert.is.not(r.code, 0);
    assert.is(t.connections(), 0);
  } finally {
    await t.close();
  }
});

settings.run();
crash.run();
