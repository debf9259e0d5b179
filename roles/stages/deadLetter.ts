import path from 'node:path';
import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import { fileDeadLetter, kafkaDeadLetter, type DeadLetterSink } from '../../sources/deadLetter';
import type { Setting } from '../../pipelines/settings';

/** Where a source's refused lines go: nowhere (reported only), a file, or a Kafka topic. */
export type DeadLetterTarget =
  | { readonly kind: 'none' }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'kafka'; readonly topic: string; readonly brokers?: readonly string[] };

const EXPECTS = "empty (refused lines are only reported), a file path (JSON lines), 'file:<path>', 'kafka:<topic>' (the source's own cluster) or 'kafka:<topic>@<host:port>[,<host:port>...]'";
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;
const BROKER = /^[^\s:,]+:\d{1,5}$/;

/**
 * The `dead_letter` setting shared by `kafkaSource` and `s3Source` (docs/ingester.md, "Dead
 * letters"). File paths resolve against the pipeline file's directory.
 */
export function deadLetterSetting(doc: string, kafkaOwnCluster: boolean): Setting<DeadLetterTarget> {
  return {
    expects: EXPECTS,
    doc,
    required: false,
    fallback: { kind: 'none' },
    parse(v, ctx) {
      if (typeof v.value !== 'string') return { ok: false, expected: EXPECTS };
      const text = v.value.trim();
      if (text === '') return { ok: true, value: { kind: 'none' } };
      if (text.startsWith('kafka:')) {
        const [topic, brokerList] = text.slice('kafka:'.length).split('@', 2);
        if (!TOPIC.test(topic)) return { ok: false, expected: `${EXPECTS}; '${topic}' is not a Kafka topic name (letters, digits, '.', '_', '-')` };
        if (brokerList === undefined) {
          if (!kafkaOwnCluster) return { ok: false, expected: `${EXPECTS}; this source has no Kafka cluster of its own, so name the brokers: kafka:${topic}@host:port` };
          return { ok: true, value: { kind: 'kafka', topic } };
        }
        const brokers = brokerList.split(',').map((b) => b.trim());
        const bad = brokers.filter((b) => !BROKER.test(b));
        if (bad.length > 0) return { ok: false, expected: `${EXPECTS}; not host:port: ${bad.join(', ')}` };
        return { ok: true, value: { kind: 'kafka', topic, brokers } };
      }
      const file = text.startsWith('file:') ? text.slice('file:'.length) : text;
      if (file === '') return { ok: false, expected: EXPECTS };
      return { ok: true, value: { kind: 'file', path: path.resolve(ctx.baseDir, file) } };
    },
  };
}

/** Opens the dead-letter sink of `target`; `ownCluster` is the source's Kafka connection, when it has one. */
export function openDeadLetter(target: DeadLetterTarget, ownCluster?: KafkaConfig): DeadLetterSink | undefined {
  switch (target.kind) {
    case 'none':
      return undefined;
    case 'file':
      return fileDeadLetter(target.path);
    case 'kafka': {
      const config: KafkaConfig | undefined = target.brokers ? { clientId: 'hd-dead-letter', brokers: [...target.brokers] } : ownCluster;
      if (!config) throw new Error(`dead_letter kafka:${target.topic} names no brokers`);
      return kafkaDeadLetter(new Kafka({ ...config, logLevel: logLevel.ERROR }), target.topic);
    }
  }
}
