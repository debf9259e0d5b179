/**
 * The ingester's object-store source (docs/ingester.md): lists a bucket prefix on any S3-compatible
 * server, reads each object (NDJSON or CSV, gzip of either) as a stream, encodes it into records of
 * the dataset schema in blocks (one native call per block), dead-letters refused lines, and marks an
 * object done in its checkpoint only once every batch holding its records is durable at the SCC.
 * With a watch interval it keeps listing for new objects.
 */
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, type S3Client, type _Object } from '@aws-sdk/client-s3';
import { Observable } from 'rxjs';
import type { RecordCodec } from '../engine-rs/index';
import type { RecordChunk } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';
import type { DeadLetter, DeadLetterSink } from './deadLetter';
import { DeliveryLedger } from '../stream/deliveryLedger';
import { pull } from '../stream/pull';
import type { S3Checkpoint } from './s3SourceCheckpoint';
import { encodeText, type TextFormat } from './textRecords';

/** Options of {@link s3Source}. */
export interface S3SourceOptions {
  readonly client: S3Client;
  readonly bucket: string;
  /** Only keys starting with it (empty: the whole bucket). */
  readonly prefix: string;
  readonly codec: RecordCodec;
  /** `auto` reads keys ending in `.csv` / `.csv.gz` as CSV (header on the first line), others as NDJSON. */
  readonly format: TextFormat | 'auto';
  readonly dataset: string;
  readonly recordSize: number;
  /** Bytes encoded per native call; default 1 MiB. */
  readonly blockBytes?: number;
  /** Units of downstream work allowed in flight before the next block (default 2). */
  readonly maxPending?: number;
  /** Objects done (skipped at start, marked once durable). */
  readonly checkpoint: S3Checkpoint;
  /** List again this often for new objects; 0 completes once the listed objects are read. */
  readonly watchIntervalMs?: number;
  readonly deadLetter?: DeadLetterSink;
  readonly flow?: Flow;
  /** The pipeline's delivery accounting, shared with its sink; default: one of its own (checkpoints once drained). */
  readonly ledger?: DeliveryLedger;
  /** Counts lines with content: received, sent (encoded), dropped (refused). */
  readonly counters?: StageCounters;
  readonly report?: (message: string) => void;
  /** The runner awaits the last checkpoint writes. */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
  /** Told the total size of the objects to read, and each block's size as read. */
  readonly progress?: { addTotal(bytes: number): void; addBytes(bytes: number): void };
}

const NL = 0x0a;

/** True for keys (or content encodings) that hold gzip. */
function isGzip(key: string, encoding: string | undefined): boolean {
  return /\.gz(ip)?$/i.test(key) || encoding === 'gzip';
}

/** The format of one object. */
function formatOf(fmt: TextFormat | 'auto', key: string): TextFormat {
  if (fmt !== 'auto') return fmt;
  return /\.csv(\.gz(ip)?)?$/i.test(key) ? { format: 'csv' } : { format: 'ndjson' };
}

/** Lists every object under the prefix, in key order. */
async function listAll(client: S3Client, bucket: string, prefix: string): Promise<_Object[]> {
  const out: _Object[] = [];
  let token: string | undefined;
  do {
    const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix || undefined, ContinuationToken: token }));
    for (const o of r.Contents ?? []) if (o.Key && !o.Key.endsWith('/')) out.push(o);
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return out.sort((a, b) => ((a.Key as string) < (b.Key as string) ? -1 : 1));
}

/**
 * Reads the objects of `bucket`/`prefix` not yet done, one after the other in key order, and emits
 * their records; completes after the listing when there is no watch. Each block is read from the
 * object's stream only once downstream has room (pulling), so a slow SCC slows the reads and
 * memory stays bounded by about `(maxPending + 1) × blockBytes`.
 */
export function s3Source(opts: S3SourceOptions): Observable<RecordChunk> {
  const flow = opts.flow ?? new Flow();
  const counters = opts.counters ?? new StageCounters('records');
  const blockBytes = opts.blockBytes ?? 1024 * 1024;
  const report = opts.report ?? (() => undefined);
  const ledger = opts.ledger ?? new DeliveryLedger(flow);
  /** Checkpoint writes waiting for their objects to become durable. */
  const marking = new Set<Promise<void>>();
  let failure: Error | undefined;

  /** The records of one object, block by block; returns the ETag of what was read. */
  async function* readObject(o: _Object): AsyncGenerator<RecordChunk, string> {
    const key = o.Key as string;
    const got = await opts.client.send(new GetObjectCommand({ Bucket: opts.bucket, Key: key }));
    let stream = got.Body as Readable;
    if (isGzip(key, got.ContentEncoding)) stream = stream.pipe(createGunzip());
    let fmt = formatOf(opts.format, key);
    let carry: Buffer = Buffer.alloc(0);
    let firstLine = 1;
    const source = `s3://${opts.bucket}/${key}`;
    const encode = async function* (block: Buffer): AsyncGenerator<RecordChunk> {
      const enc = await encodeText(opts.codec, fmt, opts.dataset, opts.recordSize, block);
      // CSV: the first block's header names the columns of the rest of the object.
      if (fmt.format === 'csv' && !fmt.columns && enc.header) fmt = { ...fmt, columns: enc.header };
      if (enc.refused.length > 0) {
        const letters: DeadLetter[] = enc.refused.map((r) => ({ source, line: firstLine + r.line - 1, ...(r.field ? { field: r.field } : {}), reason: r.reason, text: Buffer.from(block.subarray(r.start, r.end)) }));
        for (const l of letters) report(`${l.source} line ${l.line}${l.field ? `, field '${l.field}'` : ''}: ${l.reason}`);
        await opts.deadLetter?.write(letters);
      }
      firstLine += enc.lines;
      counters.received += enc.records + enc.refused.length;
      counters.dropped += enc.refused.length;
      counters.errors += enc.refused.length;
      for (const c of enc.chunks) {
        counters.sent += c.count;
        yield c;
      }
    };
    try {
      for await (const piece of stream as AsyncIterable<Buffer>) {
        opts.progress?.addBytes(piece.length);
        carry = carry.length > 0 ? Buffer.concat([carry, piece]) : piece;
        while (carry.length >= blockBytes) {
          const cut = carry.lastIndexOf(NL, blockBytes - 1);
          // A line longer than a block goes whole into the next call.
          const end = cut >= 0 ? cut + 1 : Math.max(carry.indexOf(NL, blockBytes) + 1, 0);
          if (end === 0) break;
          const block = carry.subarray(0, end);
          carry = Buffer.from(carry.subarray(end));
          yield* encode(block);
        }
      }
      if (carry.length > 0) yield* encode(carry[carry.length - 1] === NL ? carry : Buffer.concat([carry, Buffer.from([NL])]));
    } finally {
      stream.destroy();
    }
    return got.ETag ?? o.ETag ?? '';
  }

  /** After an object's last block: mark it done once everything emitted so far is durable. */
  async function markWhenDurable(key: string, etag: string): Promise<void> {
    const cp = await ledger.checkpoint(() => undefined);
    const p = cp.durable
      .then(() => opts.checkpoint.markDone(key, etag))
      .catch((err: unknown) => {
        failure ??= new Error(`s3://${opts.bucket}/${key} is not marked done: ${(err as Error).message}`);
      })
      .finally(() => marking.delete(p));
    marking.add(p);
  }

  async function* objects(): AsyncGenerator<RecordChunk> {
    const seen = new Set<string>();
    for (;;) {
      const listed = (await listAll(opts.client, opts.bucket, opts.prefix)).filter((o) => {
        const id = `${o.Key}\n${o.ETag}`;
        return !seen.has(id) && !opts.checkpoint.isDone(o.Key as string, o.ETag ?? '');
      });
      opts.progress?.addTotal(listed.reduce((s, o) => s + (o.Size ?? 0), 0));
      for (const o of listed) {
        if (failure) throw failure;
        seen.add(`${o.Key}\n${o.ETag}`);
        const etag = yield* readObject(o);
        await markWhenDurable(o.Key as string, etag);
      }
      if (failure) throw failure;
      if (!opts.watchIntervalMs) return;
      await new Promise((r) => setTimeout(r, opts.watchIntervalMs));
    }
  }

  const source = pull(objects, flow, opts.maxPending ?? 2);
  return new Observable<RecordChunk>((subscriber) => {
    const sub = source.subscribe(subscriber);
    return () => {
      sub.unsubscribe();
      const closing = (async () => {
        await Promise.allSettled([...marking]);
        await opts.deadLetter?.close();
      })();
      if (opts.trackTeardown) opts.trackTeardown(closing);
      else void closing;
    };
  });
}
