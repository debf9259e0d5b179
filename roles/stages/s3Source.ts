import { S3Client } from '@aws-sdk/client-s3';
import { RecordCodec } from '../../engine-rs/index';
import { s3Source } from '../../sources/s3Source';
import { S3Checkpoint } from '../../sources/s3SourceCheckpoint';
import { defineSource } from '../../pipelines/registry';
import path from 'node:path';
import { bool, int, oneOf, str, type Setting } from '../../pipelines/settings';
import { usesDeliveryLedger } from '../services/deliveryLedger';
import { deadLetterSetting, openDeadLetter } from './deadLetter';
import { datasetOf, textFormatOf, textFormatSettings } from './textFormatSettings';

/** A file path relative to the pipeline file, or empty for none. */
function optionalFile(doc: string): Setting<string> {
  return {
    expects: 'a file path, or empty',
    doc,
    required: false,
    fallback: '',
    parse: (v, ctx) => (typeof v.value === 'string' ? { ok: true, value: v.value.trim() === '' ? '' : path.resolve(ctx.baseDir, v.value.trim()) } : { ok: false, expected: 'a file path, or empty' }),
  };
}

const settings = {
  bucket: str({ doc: 'bucket to read' }),
  prefix: str({ doc: 'only objects whose key starts with this (empty: the whole bucket)', default: '', allowEmpty: true }),
  endpoint: str({ doc: "S3-compatible server URL, e.g. http://127.0.0.1:9000 (empty: AWS's own endpoints)", default: '', allowEmpty: true }),
  region: str({ doc: 'region (empty: AWS_REGION, else us-east-1)', default: '', allowEmpty: true }),
  force_path_style: bool({ doc: 'address buckets as <endpoint>/<bucket> rather than <bucket>.<endpoint> (most S3-compatible servers)', default: false }),
  ...textFormatSettings,
  format: oneOf(['auto', 'ndjson', 'csv'] as const, { doc: "line format; auto: keys ending in .csv or .csv.gz are CSV, others NDJSON (gzip by the .gz suffix or Content-Encoding either way)", default: 'auto' }),
  checkpoint: optionalFile('JSON file of the objects done (durable at the SCC); read at start, so a restart skips them (empty: kept in memory only)'),
  watch_interval_ms: int({ doc: 'list again this often for new objects (0: stop once the listed objects are read)', default: 0, min: 0, max: 86_400_000 }),
  dead_letter: deadLetterSetting("where refused lines go: a file path, 'kafka:<topic>@host:port' or empty", false),
};

/** `s3Source`: reads NDJSON/CSV objects (gzip too) from an S3-compatible bucket; lines → records; checkpoints done objects. */
export const s3SourceStage = defineSource({
  name: 's3Source',
  kind: 'source',
  doc: 'Lists and reads objects of a bucket prefix on any S3-compatible server (NDJSON, CSV, gzip), encodes them into records one block per native call, dead-letters refused lines, checkpoints objects once durable; optionally watches for new ones.',
  unit: 'records',
  output: 'records',
  settings,
  uses: { delivery: usesDeliveryLedger },
  create: (c, ctx) => {
    // Credentials come from the standard AWS chain (environment, shared files, web identity, instance metadata).
    const client = new S3Client({
      ...(c.endpoint ? { endpoint: c.endpoint } : {}),
      region: c.region || process.env.AWS_REGION || 'us-east-1',
      forcePathStyle: c.force_path_style,
    });
    return s3Source({
      client,
      bucket: c.bucket,
      prefix: c.prefix,
      codec: new RecordCodec(c.schema),
      format: c.format === 'auto' ? 'auto' : textFormatOf({ ...c, format: c.format }, ctx.id, false),
      ...datasetOf(c.schema),
      blockBytes: c.block_size,
      maxPending: c.max_pending,
      checkpoint: new S3Checkpoint(c.checkpoint || undefined, c.bucket, c.prefix),
      watchIntervalMs: c.watch_interval_ms,
      deadLetter: openDeadLetter(c.dead_letter),
      flow: ctx.flow,
      ledger: ctx.services.delivery,
      counters: ctx.counters,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w.finally(() => client.destroy())),
      progress: ctx.progress,
    });
  },
});
