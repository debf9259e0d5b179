import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { main, EXIT, type CliIo } from '../../../bin/cli';
import { readSegment, verifySegment } from '../../../engine-rs/index';

const data = path.resolve(__dirname, '../../../pipelines/examples/data');

function io(): CliIo & { out: string; err: string } {
  const o = {
    out: '',
    err: '',
    env: {},
    handleSignals: false,
    stdout: { write: (s: string) => (o.out += s) },
    stderr: { isTTY: false, columns: 80, write: (s: string) => (o.err += s) },
  };
  return o as unknown as CliIo & { out: string; err: string };
}

function setup(config: Record<string, unknown>): { dir: string; pipeline: string; config: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-snpipe-'));
  const pipeline = path.join(dir, 'ingest.yaml');
  writeFileSync(
    pipeline,
    [
      'pipeline: local-ingest',
      'stages:',
      '  src:',
      '    type: fileSource',
      `    path: ${path.join(data, 'flows.ndjson')}`,
      '  parse:',
      '    type: parse',
      '    inputs: [src]',
      `    schema: ${path.join(data, 'flows.schema.json')}`,
      '  batch:',
      '    type: timeBatch',
      '    inputs: [parse]',
      `    schema: ${path.join(data, 'flows.schema.json')}`,
      '  store: { type: segmentStore, inputs: [batch], uses: [node] }',
      'services:',
      '  node:',
      '    config: ${CONFIG_FILE}',
      '    type: storageNode',
      '',
    ].join('\n'),
  );
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return { dir, pipeline, config: file };
}

const cli = suite('segmentStore under hd run --config config.json');
cli('the example flows land as verified segments, one per time batch', async () => {
  const s = setup({
    node_name: 'sn-pipe',
    production_port: 6987,
    production_ip: '127.0.0.1',
    observability_port: 0,
    reserve_bytes: 0,
    drive_strategy: 'round_robin',
    storage_devices: [
      { name: 'a', address: 'devices/a', type: 'dir' },
      { name: 'b', address: 'devices/b', type: 'dir' },
    ],
  });
  const c = io();
  assert.is(await main(['run', s.pipeline, '--config', s.config], c), EXIT.ok, c.err);
  const batches = Number(/batch\s+timeBatch\s+records\s+3,000\s+3,000\s+0\s+0\s+0\s+(\d+)/.exec(c.err)?.[1]);
  assert.ok(batches >= 10, c.err);
  assert.match(c.err, new RegExp(`store\\s+segmentStore\\s+records\\s+3,000\\s+3,000\\s+0\\s+0\\s+0\\s+${batches}\\n`));
  let records = 0;
  let segments = 0;
  for (const dev of ['a', 'b']) {
    const dir = path.join(s.dir, 'devices', dev, 'flows');
    const names = readdirSync(dir).filter((n) => n.endsWith('.hdseg'));
    assert.is(names.length, Math.floor(batches / 2) + (dev === 'a' ? batches % 2 : 0), `${dev}: round_robin alternates`);
    for (const n of names) {
      const v = await verifySegment(path.join(dir, n));
      assert.ok(v.ok, n);
      records += (await readSegment(path.join(dir, n))).length / 64;
      segments++;
    }
  }
  assert.is(segments, batches);
  assert.is(records, 3000);
});
cli('a bad config.json is reported by hd validate at the config setting, naming each key', async () => {
  const s = setup({ node_name: 'sn', production_port: 6987, storage_devices: [{ name: 'a', address: '/x', type: 'tape' }], drive_strategy: 'fullest' });
  const c = io();
  assert.is(await main(['validate', s.pipeline, '--config', s.config], c), EXIT.failed);
  assert.match(c.err, /ingest\.yaml:17:13: .*storage_devices\[0\]\.type: must be one of 'nvme', 'ssd', 'hdd', 'dir', got 'tape'/);
  assert.match(c.err, /drive_strategy: must be one of 'round_robin', 'fill_first', 'most_free', got 'fullest'/);
});
cli('without --config, CONFIG_FILE is unresolved and says so', async () => {
  const s = setup({});
  const c = io();
  assert.is(await main(['validate', s.pipeline], c), EXIT.failed);
  assert.match(c.err, /CONFIG_FILE is not set/);
});
cli.run();
