import { readFileSync } from 'node:fs';
import type { KafkaConfig, SASLOptions } from 'kafkajs';
import { RecordCodec } from '../../engine-rs/index';
import { kafkaSource } from '../../sources/kafkaSource';
import { defineSource } from '../../pipelines/registry';
import { bool, byteSize, int, oneOf, str } from '../../pipelines/settings';
import { usesDeliveryLedger } from '../services/deliveryLedger';
import { usesWindowRewind } from '../services/windowRewind';
import { deadLetterSetting, openDeadLetter } from './deadLetter';
import { datasetOf, textFormatOf, textFormatSettings } from './textFormatSettings';

const settings = {
  brokers: str({ doc: 'comma-separated bootstrap brokers, host:port' }),
  topics: str({ doc: 'comma-separated topics to consume' }),
  group: str({ doc: 'consumer group id; offsets are committed for it' }),
  client_id: str({ doc: 'Kafka client id', default: 'hd-ingester' }),
  start_offset: oneOf(['earliest', 'latest'] as const, { doc: 'where a group without committed offsets starts', default: 'earliest' }),
  tls: bool({ doc: 'connect to the brokers over TLS', default: false }),
  tls_ca_file: str({ doc: 'TLS: PEM file of the CA that signed the brokers\' certificates (empty: the system CAs)', default: '', allowEmpty: true }),
  tls_reject_unauthorized: bool({ doc: 'TLS: refuse brokers whose certificate does not verify', default: true }),
  sasl_mechanism: oneOf(['none', 'plain', 'scram-sha-256', 'scram-sha-512'] as const, { doc: 'SASL authentication', default: 'none' }),
  sasl_username: str({ doc: 'SASL user name', default: '', allowEmpty: true }),
  sasl_password: str({ doc: 'SASL password (use ${NAME} to take it from the environment)', default: '', allowEmpty: true }),
  ...textFormatSettings,
  commit_interval_ms: int({ doc: 'take a checkpoint (commit what is durable) at most this often', default: 1000, min: 10, max: 3_600_000 }),
  rebalance_hold_ms: int({ doc: 'after a rebalance took away a partition this member read, pause the others and keep open windows from timing out this long at most, waiting for it to come back (0: never)', default: 30_000, min: 0, max: 3_600_000 }),
  session_timeout_ms: int({ doc: 'consumer group session timeout', default: 30_000, min: 6000, max: 3_600_000 }),
  max_fetch_bytes: byteSize({ doc: 'most bytes one fetch returns (bounds the consumer\'s memory)', default: 8 * 1024 * 1024, min: 64 * 1024, max: 256 * 1024 * 1024 }),
  dead_letter: deadLetterSetting("where refused lines go: a file path, 'kafka:<topic>' or empty", true),
};

const list = (s: string): string[] => s.split(',').map((x) => x.trim()).filter((x) => x !== '');

/** `kafkaSource`: consumes Kafka topics as a consumer group; lines → records; commits after the SCC acknowledged them. */
export const kafkaSourceStage = defineSource({
  name: 'kafkaSource',
  kind: 'source',
  doc: 'Consumes Kafka topics (consumer group, SASL/TLS), encodes NDJSON/CSV messages into records one block per native call, dead-letters refused lines, commits offsets once the SCC acknowledged their batches.',
  unit: 'records',
  output: 'records',
  settings,
  uses: { delivery: usesDeliveryLedger, windows: usesWindowRewind },
  create: (c, ctx) => {
    let sasl: SASLOptions | undefined;
    if (c.sasl_mechanism !== 'none') {
      if (c.sasl_username === '') throw new Error(`stage '${ctx.id}': sasl_mechanism ${c.sasl_mechanism} needs sasl_username`);
      sasl = { mechanism: c.sasl_mechanism, username: c.sasl_username, password: c.sasl_password } as SASLOptions;
    }
    const kafka: KafkaConfig = {
      clientId: c.client_id,
      brokers: list(c.brokers),
      ...(c.tls ? { ssl: { rejectUnauthorized: c.tls_reject_unauthorized, ...(c.tls_ca_file ? { ca: [readFileSync(c.tls_ca_file, 'utf8')] } : {}) } } : {}),
      ...(sasl ? { sasl } : {}),
    };
    return kafkaSource({
      kafka,
      topics: list(c.topics),
      groupId: c.group,
      startOffset: c.start_offset,
      codec: new RecordCodec(c.schema),
      format: textFormatOf(c, ctx.id, true),
      ...datasetOf(c.schema),
      blockBytes: c.block_size,
      maxPending: c.max_pending,
      commitIntervalMs: c.commit_interval_ms,
      rebalanceHoldMs: c.rebalance_hold_ms,
      sessionTimeoutMs: c.session_timeout_ms,
      maxFetchBytes: c.max_fetch_bytes,
      deadLetter: openDeadLetter(c.dead_letter, kafka),
      flow: ctx.flow,
      ledger: ctx.services.delivery,
      windows: ctx.services.windows,
      counters: ctx.counters,
      report: (m) => ctx.report(m),
      trackTeardown: (w) => ctx.trackTeardown(w),
    });
  },
});
