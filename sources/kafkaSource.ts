/**
 * The ingester's Kafka source (docs/ingester.md): a kafkajs consumer in a consumer group whose
 * messages — one or more NDJSON or CSV lines each — are encoded into records of the dataset schema
 * in blocks (one native call per block), with refused lines sent to a dead-letter sink. Offsets are
 * committed only once every batch holding the records read up to them is acknowledged durable by
 * the SCC (stream/deliveryLedger.ts), never automatically: at-least-once.
 */
import { Kafka, logLevel, type Batch, type Consumer, type ConsumerConfig, type KafkaConfig, type KafkaMessage, type LogEntry } from 'kafkajs';
import { Observable } from 'rxjs';
import type { RecordCodec } from '../engine-rs/index';
import type { RecordChunk } from '../stream/chunk';
import { Flow } from '../stream/flow';
import { StageCounters } from '../stream/stageCounters';
import type { DeadLetter, DeadLetterSink } from './deadLetter';
import { DeliveryLedger } from '../stream/deliveryLedger';
import { WindowRewind } from '../operators/windowRewind';
import { KafkaCommits, type TopicPartitionOffset } from './kafkaSourceCommits';
import { encodeText, type TextFormat } from './textRecords';
import { KafkaRebalances } from './kafkaRebalances';

/** Options of {@link kafkaSource}. */
export interface KafkaSourceOptions {
  /** Brokers, client id, TLS and SASL, as kafkajs takes them. */
  readonly kafka: KafkaConfig;
  readonly topics: readonly string[];
  /** Consumer group id. */
  readonly groupId: string;
  /** Where a group without committed offsets starts: the earliest message or only new ones. */
  readonly startOffset: 'earliest' | 'latest';
  /** Encodes lines into records. */
  readonly codec: RecordCodec;
  readonly format: TextFormat;
  readonly dataset: string;
  readonly recordSize: number;
  /** Message bytes encoded per native call (a block of messages); default 1 MiB. */
  readonly blockBytes?: number;
  /** Units of downstream work allowed in flight before the next block (default 2). */
  readonly maxPending?: number;
  /** Take a checkpoint (and so commit) at most this often; default 1000 ms. */
  readonly commitIntervalMs?: number;
  /**
   * After a rebalance that left this member without a partition it read earlier in the run, pause
   * the partitions kept and hold the windows' batch timeout this long at most, waiting for the
   * partition to come back (a consumer that joined the group for a while); also the longest hold
   * while the group rebalances. Default 30 s; 0 never holds.
   */
  readonly rebalanceHoldMs?: number;
  /** kafkajs session timeout; default 30 s. */
  readonly sessionTimeoutMs?: number;
  /** Most bytes one fetch may return (bounds the consumer's memory); default 8 MiB. */
  readonly maxFetchBytes?: number;
  /** Where refused lines go; without one they are only reported. */
  readonly deadLetter?: DeadLetterSink;
  /** The pipeline's pending-work accounting (backpressure and checkpoints). */
  readonly flow?: Flow;
  /** The pipeline's delivery accounting, shared with its sink; default: one of its own (commits once drained). */
  readonly ledger?: DeliveryLedger;
  /** The pipeline's open windows, rewound across rebalances; default: none to rewind. */
  readonly windows?: WindowRewind;
  /** Counts lines with content: received, sent (encoded), dropped (refused); errors per refused line. */
  readonly counters?: StageCounters;
  readonly report?: (message: string) => void;
  /** The runner awaits the last commit and the disconnect. */
  readonly trackTeardown?: (work: Promise<unknown>) => void;
  /** Told about every commit (tests, metrics). */
  readonly onCommit?: (offsets: readonly TopicPartitionOffset[]) => void;
}

const NL = 0x0a;

/** Resolves with `work`, calling `heartbeat` every 3 s meanwhile so a long wait keeps the group membership. */
async function withHeartbeat<T>(work: Promise<T>, heartbeat: () => Promise<void>, onError: (err: unknown) => void): Promise<T> {
  const timer = setInterval(() => void heartbeat().catch(onError), 3000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/** The messages of `from..to` as one block of lines, each message ending in a newline. */
function blockOf(messages: readonly KafkaMessage[]): { block: Buffer; starts: number[] } {
  const parts: Buffer[] = [];
  const starts: number[] = [];
  let at = 0;
  for (const m of messages) {
    starts.push(at);
    const v = m.value;
    if (!v || v.length === 0) continue;
    parts.push(v);
    at += v.length;
    if (v[v.length - 1] !== NL) {
      parts.push(Buffer.from([NL]));
      at++;
    }
  }
  return { block: Buffer.concat(parts, at), starts };
}

/** The message holding byte `pos` of a block (binary search over the message starts). */
function messageAt(starts: readonly number[], pos: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Consumes `topics` as group `groupId` and emits record chunks. Never completes by itself:
 * unsubscribing (a stop) ends the consumption, and the teardown commits what is durable by then and
 * leaves the group. While downstream is busy (more than `maxPending` units in flight) the consumer
 * stops inside its batch handler, so no further fetch happens: a slow SCC pauses consumption and
 * memory stays bounded by one fetch.
 */
export function kafkaSource(opts: KafkaSourceOptions): Observable<RecordChunk> {
  const flow = opts.flow ?? new Flow();
  const counters = opts.counters ?? new StageCounters('records');
  const maxPending = opts.maxPending ?? 2;
  const blockBytes = opts.blockBytes ?? 1024 * 1024;
  const commitEvery = opts.commitIntervalMs ?? 1000;
  const report = opts.report ?? (() => undefined);
  return new Observable<RecordChunk>((subscriber) => {
    let active = true;
    const ledger = opts.ledger ?? new DeliveryLedger(flow);
    const commits = new KafkaCommits();
    let lastCheckpoint = Date.now();
    let commitChain: Promise<void> = Promise.resolve();
    const kafka = new Kafka({
      ...opts.kafka,
      logLevel: logLevel.WARN,
      logCreator: () => (e: LogEntry) => {
        if (e.level <= logLevel.WARN) report(`kafka: ${e.log.message}${e.log.error ? `: ${String(e.log.error)}` : ''}`);
      },
    });
    const config: ConsumerConfig = {
      groupId: opts.groupId,
      sessionTimeout: opts.sessionTimeoutMs ?? 30_000,
      maxBytes: opts.maxFetchBytes ?? 8 * 1024 * 1024,
      maxBytesPerPartition: Math.min(opts.maxFetchBytes ?? 8 * 1024 * 1024, 4 * 1024 * 1024),
      allowAutoTopicCreation: false,
    };
    const consumer: Consumer = kafka.consumer(config);
    // Rebalances: held timeouts, discarded and rebuilt windows, paused partitions (docs/ingester.md).
    const rebalances = new KafkaRebalances({ consumer, topics: opts.topics, flow, commits, windows: opts.windows ?? new WindowRewind(), holdMs: opts.rebalanceHoldMs, report, isActive: () => active });
    consumer.on(consumer.events.CRASH, (e) => {
      if (!e.payload.restart && active) subscriber.error(new Error(`kafka consumer crashed: ${e.payload.error.message}`));
    });

    const commit = async (snap: ReturnType<KafkaCommits['snapshot']>): Promise<void> => {
      const due = commits.due(snap);
      if (due.length === 0) return;
      try {
        await consumer.commitOffsets([...due]);
        commits.markCommitted(due);
        opts.onCommit?.(due);
      } catch (err) {
        // A rebalance in progress refuses commits; the next checkpoint carries these positions again.
        report(`commit of ${due.map((o) => `${o.topic}/${o.partition}@${o.offset}`).join(', ')} deferred: ${(err as Error).message}`);
      }
    };
    let checkpointing: Promise<void> | undefined;
    let readSince = false;
    /** Waits for the pipeline to drain, then commits the positions read so far once they are durable (one at a time). */
    const checkpoint = (heartbeat?: () => Promise<void>): Promise<void> => {
      checkpointing ??= takeCheckpoint(heartbeat).finally(() => (checkpointing = undefined));
      return checkpointing;
    };
    const takeCheckpoint = async (heartbeat?: () => Promise<void>): Promise<void> => {
      const taking = ledger.checkpoint(() => {
        readSince = false;
        return commits.snapshot();
      });
      const cp = heartbeat ? await withHeartbeat(taking, heartbeat, () => undefined) : await taking;
      lastCheckpoint = Date.now();
      commitChain = commitChain.then(() =>
        cp.durable.then(
          () => commit(cp.taken),
          (err: unknown) => {
            // Not durable: nothing at or past these positions may be committed, ever, in this run.
            if (active) subscriber.error(err);
            throw err;
          },
        ),
      );
      commitChain.catch(() => undefined);
    };

    const emitBlock = async (batch: Batch, messages: readonly KafkaMessage[], current: () => boolean): Promise<void> => {
      const { block, starts } = blockOf(messages);
      const enc = await encodeText(opts.codec, opts.format, opts.dataset, opts.recordSize, block);
      if (enc.refused.length > 0) {
        const letters: DeadLetter[] = enc.refused.map((r) => {
          const i = messageAt(starts, r.start);
          let line = 1;
          for (let at = block.indexOf(NL, starts[i]); at >= 0 && at < r.start; at = block.indexOf(NL, at + 1)) line++;
          return { source: `kafka:${batch.topic}/${batch.partition}@${messages[i].offset}`, line, ...(r.field ? { field: r.field } : {}), reason: r.reason, text: Buffer.from(block.subarray(r.start, r.end)) };
        });
        for (const l of letters) report(`${l.source} line ${l.line}${l.field ? `, field '${l.field}'` : ''}: ${l.reason}`);
        await opts.deadLetter?.write(letters);
      }
      if (!active || !current()) return;
      counters.received += enc.records + enc.refused.length;
      counters.dropped += enc.refused.length;
      counters.errors += enc.refused.length;
      for (const c of enc.chunks) {
        counters.sent += c.count;
        subscriber.next(c);
      }
      commits.advance(batch.topic, batch.partition, messages[messages.length - 1].offset);
      readSince = true;
    };

    let running: Promise<void> = Promise.resolve();
    const start = async (): Promise<void> => {
      await consumer.connect();
      for (const topic of opts.topics) await consumer.subscribe({ topic, fromBeginning: opts.startOffset === 'earliest' });
      if (!active) return;
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          const generation = commits.currentGeneration;
          // The rewind waits for the pipeline to drain (a slow SCC): keep the membership meanwhile.
          await withHeartbeat(rebalances.rewound, heartbeat, () => undefined);
          let rebalancing = false;
          const onHeartbeatError = (err: unknown): void => {
            rebalancing = true;
            // kafkajs emits REBALANCING only when a fetch learns of it; a heartbeat may learn first.
            if ((err as { type?: string }).type === 'REBALANCE_IN_PROGRESS') rebalances.rebalancing();
          };
          const current = (): boolean => generation === commits.currentGeneration;
          const msgs = batch.messages;
          let i = 0;
          // Messages left unresolved (paused, or a newer generation) are fetched again later.
          while (i < msgs.length && active && isRunning() && !isStale() && !rebalancing && current() && !rebalances.paused) {
            let j = i;
            let bytes = 0;
            while (j < msgs.length && (j === i || bytes + (msgs[j].value?.length ?? 0) <= blockBytes)) bytes += (msgs[j++].value?.length ?? 0) + 1;
            const work = (async () => {
              // A block of an older generation is not emitted: its windows are being rebuilt from the commit.
              await emitBlock(batch, msgs.slice(i, j), current);
              if (!active || !current()) return;
              resolveOffset(msgs[j - 1].offset);
              // Backpressure: the next block only once downstream has room.
              await flow.whenAtMost(maxPending);
              if (active && Date.now() - lastCheckpoint >= commitEvery) await checkpoint(heartbeat);
            })();
            running = work.catch(() => undefined);
            await withHeartbeat(work, heartbeat, onHeartbeatError);
            i = j;
          }
        },
      });
    };
    start().catch((err: unknown) => {
      if (active) subscriber.error(err);
    });
    // Positions read since the last checkpoint are checkpointed when the consumer goes quiet too.
    const timer = setInterval(() => {
      if (active && readSince && Date.now() - lastCheckpoint >= commitEvery) void checkpoint();
    }, commitEvery);

    return () => {
      active = false;
      clearInterval(timer);
      rebalances.stop();
      const closing = (async () => {
        await running;
        // What was emitted before the stop becomes durable as the rest of the pipeline drains. A
        // pipeline without a tracker commits only while running: a drain after teardown proves nothing.
        await checkpointing?.catch(() => undefined);
        if (ledger.tracked) await checkpoint().catch(() => undefined);
        await commitChain.catch(() => undefined);
        await consumer.disconnect().catch((err: unknown) => report(`kafka disconnect: ${(err as Error).message}`));
        await opts.deadLetter?.close();
      })();
      if (opts.trackTeardown) opts.trackTeardown(closing);
      else void closing;
    };
  });
}
