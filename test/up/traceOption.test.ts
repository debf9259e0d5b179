/**
 * `hd up --trace <url>` (up/traceOption.ts): the value is checked as the nodes read OTEL_GRPC_URL,
 * every node gets it in its environment, and `hd up` refuses a bad one before starting anything.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { upCommand } from '../../bin/upCommands';
import { parseTraceOption, tracedNodes, traceReadyLines } from '../../up/traceOption';

const opt = suite('hd up --trace');

opt('grpc://, grpcs:// and http(s):// URLs are taken as given', () => {
  for (const url of ['grpc://127.0.0.1:4317', 'grpcs://collector:4317', 'http://localhost:4317', 'https://otel.example:443']) assert.equal(parseTraceOption(` ${url} `), { url });
});

opt('anything else is refused, naming --trace', () => {
  for (const bad of ['', 'localhost:4317x', 'ftp://x:1', 'not a url']) {
    const r = parseTraceOption(bad);
    assert.ok('error' in r, bad);
    assert.match((r as { error: string }).error, /--trace/);
  }
});

opt('every node gets OTEL_GRPC_URL, its own environment kept', () => {
  const nodes = tracedNodes([{ name: 'scc', role: 'scc', args: ['run'], env: { A: '1' }, host: '127.0.0.1', readyPort: 1, healthUrl: 'h' }], 'grpc://127.0.0.1:4317');
  assert.equal(nodes[0]?.env, { A: '1', OTEL_GRPC_URL: 'grpc://127.0.0.1:4317' });
  assert.match(traceReadyLines('grpc://127.0.0.1:4317'), /Traces: .* grpc:\/\/127\.0\.0\.1:4317/);
});

opt('hd up --trace with a bad URL exits 2 before starting a node', async () => {
  let err = '';
  const io = { stdout: { write: () => true }, stderr: { write: (s: string) => ((err += s), true) }, env: {} };
  const code = await upCommand.run([], { trace: 'ftp://x:1' }, io as unknown as Parameters<typeof upCommand.run>[2]);
  assert.is(code, 2);
  assert.match(err, /^hd up: --trace .*ftp:\/\/x:1/);
});

opt.run();
