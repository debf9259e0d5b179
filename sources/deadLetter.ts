/**
 * Dead-letter sinks: where the ingester's sources put input lines that could not be encoded
 * (docs/ingester.md, "Dead letters"), each with where it came from and why it was refused. A write
 * is awaited before the source goes on, so a line is in its dead-letter sink before the position it
 * came from can be committed.
 */
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Kafka, Producer } from 'kafkajs';

/** One refused input line. */
export interface DeadLetter {
  /** Where it came from: `kafka:<topic>/<partition>@<offset>` or `s3://<bucket>/<key>`. */
  readonly source: string;
  /** Line number within the source (the Kafka message's own lines, or the S3 object's), 1-based. */
  readonly line: number;
  /** The field to blame, when the parser named one. */
  readonly field?: string;
  readonly reason: string;
  /** The line as read (without its newline). */
  readonly text: Buffer;
}

/** Somewhere refused lines go. */
export interface DeadLetterSink {
  /** What the sink is, for messages (`file /x/dead.ndjson`, `kafka topic flows-dlq`). */
  readonly describe: string;
  /** Writes the letters; resolves once they are durable (file synced, Kafka acknowledged by all in-sync replicas). */
  write(letters: readonly DeadLetter[]): Promise<void>;
  /** Flushes and releases the sink. */
  close(): Promise<void>;
}

/** The JSON line a file dead-letter sink writes per letter. */
export interface DeadLetterLine {
  readonly time: string;
  readonly source: string;
  readonly line: number;
  readonly field?: string;
  readonly reason: string;
  /** The line as UTF-8 text, when it is valid UTF-8. */
  readonly text?: string;
  /** The line as base64, when it is not valid UTF-8. */
  readonly text_base64?: string;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The JSON form of one letter: the text as UTF-8 when it is, else base64. */
export function deadLetterLine(l: DeadLetter, now = new Date()): DeadLetterLine {
  let text: string | undefined;
  try {
    text = decoder.decode(l.text);
  } catch {
    text = undefined;
  }
  return {
    time: now.toISOString(),
    source: l.source,
    line: l.line,
    ...(l.field ? { field: l.field } : {}),
    reason: l.reason,
    ...(text === undefined ? { text_base64: l.text.toString('base64') } : { text }),
  };
}

/**
 * Appends letters as JSON lines ({@link DeadLetterLine}) to a file, created with its directory when
 * missing; each write is synced before it resolves.
 */
export function fileDeadLetter(file: string): DeadLetterSink {
  let fh: Promise<FileHandle> | undefined;
  const handle = (): Promise<FileHandle> => {
    fh ??= (async () => {
      mkdirSync(path.dirname(file), { recursive: true });
      return open(file, 'a');
    })();
    return fh;
  };
  return {
    describe: `file ${file}`,
    async write(letters) {
      if (letters.length === 0) return;
      const h = await handle();
      const now = new Date();
      await h.write(letters.map((l) => JSON.stringify(deadLetterLine(l, now)) + '\n').join(''));
      await h.datasync();
    },
    async close() {
      const h = fh;
      fh = undefined;
      if (h) await (await h).close();
    },
  };
}

/**
 * Produces each letter to a Kafka topic: the value is the refused line as read, and headers carry
 * `hd-source`, `hd-line`, `hd-reason` and (when known) `hd-field`. Writes wait for every in-sync
 * replica (acks -1).
 */
export function kafkaDeadLetter(kafka: Kafka, topic: string): DeadLetterSink {
  let producer: Promise<Producer> | undefined;
  const connect = (): Promise<Producer> => {
    producer ??= (async () => {
      const p = kafka.producer({ allowAutoTopicCreation: true, idempotent: false });
      await p.connect();
      return p;
    })();
    return producer;
  };
  return {
    describe: `kafka topic ${topic}`,
    async write(letters) {
      if (letters.length === 0) return;
      const p = await connect();
      await p.send({
        topic,
        acks: -1,
        messages: letters.map((l) => ({
          value: l.text,
          headers: { 'hd-source': l.source, 'hd-line': String(l.line), 'hd-reason': l.reason, ...(l.field ? { 'hd-field': l.field } : {}) },
        })),
      });
    },
    async close() {
      const p = producer;
      producer = undefined;
      if (p) await (await p).disconnect();
    },
  };
}
