/**
 * The ingester's S3 source end to end with real components: moto's S3 server (started by
 * scripts/s3.sh) reached through @aws-sdk/client-s3 over HTTP, `hd run
 * pipelines/examples/s3-to-scc.yaml` as a process, and an SCC with a Storage Node behind it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordCodec, Schema } from '../../engine-rs/index';
import { startCluster, type Cluster } from '../support/cluster';
import { freePort, startHd } from '../support/hdProcess';
import { installed, metric, recordHexes, startComponent, storedRecords, waitFor, type Component } from './ingesterKit';

const data = path.resolve(__dirname, '../../pipelines/examples/data');
const schema = Schema.parse(readFileSync(path.join(data, 'flows.schema.json'), 'utf8'));
const RS = schema.recordSize;
const lines = readFileSync(path.join(data, 'flows.ndjson'), 'utf8').split('\n').filter((l) => l !== '');
const COLUMNS = ['ts', 'src_ip', 'dst_ip', 'src_port', 'dst_port', 'proto', 'packets', 'bytes', 'duration_ms'];
const csvOf = (ls: readonly string[]): string => [COLUMNS.join(','), ...ls.map((l) => COLUMNS.map((c) => String((JSON.parse(l) as Record<string, unknown>)[c])).join(','))].join('\n') + '\n';
/** The same flows a day later (other batches than the first run's). */
const nextDay = (ls: readonly string[]): string[] => ls.map((l) => l.replace(/"ts":(\d+)/, (_, t: string) => `"ts":${Number(t) + 86400}`));
const AWS = { AWS_ACCESS_KEY_ID: 'hdtest', AWS_SECRET_ACCESS_KEY: 'hdtest', AWS_REGION: 'us-east-1' };

async function expected(good: readonly string[]): Promise<string[]> {
  const r = await new RecordCodec(schema).parseNdjson(Buffer.from(good.join('\n') + '\n'));
  return recordHexes(r.records, RS);
}

interface Env {
  s3: Component;
  client: S3Client;
  cluster: Cluster;
  tmp: string;
}
let env: Env | undefined;

const s3 = suite('ingester: S3 (moto server) → SCC → Storage Node (real processes)');
s3.before(async () => {
  if (!(await installed('s3'))) return;
  const server = await startComponent('s3');
  const client = new S3Client({ endpoint: `http://127.0.0.1:${server.port}`, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'hdtest', secretAccessKey: 'hdtest' } });
  const cluster = await startCluster({ storageNodes: 1, recordSize: RS });
  env = { s3: server, client, cluster, tmp: mkdtempSync(path.join(os.tmpdir(), 'hd-ingester-s3-')) };
  await client.send(new CreateBucketCommand({ Bucket: 'flows' }));
});
s3.after(async () => {
  env?.client.destroy();
  await env?.cluster.stop();
  await env?.s3.stop();
  if (env) rmSync(env.tmp, { recursive: true, force: true });
});

const put = (key: string, body: string | Buffer): Promise<unknown> => (env as Env).client.send(new PutObjectCommand({ Bucket: 'flows', Key: key, Body: body }));

function ingest(extra: Record<string, string> = {}): { proc: ReturnType<typeof startHd>; obs: Promise<number> } {
  const e = env as Env;
  const obs = freePort();
  const proc = startHd(['run', 'pipelines/examples/s3-to-scc.yaml', '--quiet'], {
    ...AWS,
    S3_ENDPOINT: `http://127.0.0.1:${e.s3.port}`,
    S3_PREFIX: 'in/',
    S3_CHECKPOINT: path.join(e.tmp, 'checkpoint.json'),
    DEAD_LETTER: path.join(e.tmp, 'dead.ndjson'),
    SCC_TARGETS: `127.0.0.1:${e.cluster.scc.productionPort}`,
    OBSERVABILITY_HOST: '127.0.0.1',
    BATCH_TIMEOUT_MS: '300',
    ...extra,
  });
  return { proc, obs };
}

s3('NDJSON, CSV and gzip objects land exactly; bad lines dead-lettered with key and line; the checkpoint survives a restart; a watch picks up new objects', async () => {
  if (!env) return;
  const e = env;
  await put('in/a.ndjson', [...lines.slice(0, 1000), '{"ts":1700000000,"proto":"tcp","src_ip":"1.2.3"}'].join('\n') + '\n');
  await put('in/b.csv', csvOf(lines.slice(1000, 2000)));
  await put('in/c.ndjson.gz', gzipSync(lines.slice(2000).join('\n')));
  await put('other/ignored.ndjson', lines[0] + '\n');

  // A run without a watch reads the three objects and ends by itself once they are durable.
  const first = ingest({ OBSERVABILITY_PORT: String(await freePort()) });
  assert.is(await first.proc.exited, 0, first.proc.output());
  assert.equal(await storedRecords(e.cluster.sns[0], 'flows', RS), await expected(lines));
  const dead = readFileSync(path.join(e.tmp, 'dead.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { source: string; line: number; field?: string; reason: string; text: string });
  assert.is(dead.length, 1);
  assert.equal([dead[0].source, dead[0].line, dead[0].field], ['s3://flows/in/a.ndjson', 1001, 'src_ip']);
  assert.match(dead[0].reason, /IPv4/);
  const cp = JSON.parse(readFileSync(path.join(e.tmp, 'checkpoint.json'), 'utf8')) as { done: Record<string, string> };
  assert.equal(Object.keys(cp.done).sort(), ['in/a.ndjson', 'in/b.csv', 'in/c.ndjson.gz']);

  // A restart skips what the checkpoint holds: nothing is read twice.
  const again = ingest({ OBSERVABILITY_PORT: String(await freePort()) });
  assert.is(await again.proc.exited, 0, again.proc.output());
  assert.match(again.proc.output(), /^(?![\s\S]*error)/i);
  assert.is((await storedRecords(e.cluster.sns[0], 'flows', RS)).length, lines.length);

  // With a watch, a new object is read when it appears.
  const port = await freePort();
  const watching = ingest({ OBSERVABILITY_PORT: String(port), S3_WATCH_MS: '200' });
  try {
    const later = nextDay(lines.slice(0, 500));
    await put('in/d.ndjson', later.join('\n') + '\n');
    await waitFor(async () => (await metric(port, 'hd_stage_sent_total', { stage: 'send' }).catch(() => undefined)) === 500, 'the new object durable', watching.proc.output);
    assert.equal(await storedRecords(e.cluster.sns[0], 'flows', RS), [...(await expected(lines)), ...(await expected(later))].sort());
    await waitFor(() => 'in/d.ndjson' in (JSON.parse(readFileSync(path.join(e.tmp, 'checkpoint.json'), 'utf8')) as { done: Record<string, string> }).done, 'the new object checkpointed', watching.proc.output);
  } finally {
    assert.is(await watching.proc.stop(), 0, watching.proc.output());
  }
});

s3.run();
