/**
 * HDWP v1 frame types and limits: the TypeScript face of `engine-rs/core/src/hdwp`. The byte
 * layout is in docs/hdwp.md; encoding and decoding happen in Rust (hdwp.ts, hdwpDecoder.ts).
 */
import type { BatchID } from './batchId';

/** Protocol version carried in every header and hello frame. */
export const HDWP_VERSION = 1;
/** Bytes in a frame header. */
export const HDWP_HEADER_LEN = 16;
/** Bytes in a per-query token. */
export const HDWP_TOKEN_LEN = 16;
/** Default largest payload a decoder accepts and a stream encoder produces: 16 MiB. */
export const HDWP_DEFAULT_MAX_PAYLOAD = 16 * 1024 * 1024;
/** Largest payload limit a decoder may be configured with: 1 GiB. */
export const HDWP_MAX_PAYLOAD_CEILING = 1024 * 1024 * 1024;
/** Longest bad batch reason or error message, in UTF-8 bytes. */
export const HDWP_MAX_TEXT_LEN = 4096;
/** Longest dataset id in a hello frame, in UTF-8 bytes. */
export const HDWP_MAX_DATASET_ID_LEN = 255;
/** Longest query JSON, in bytes. */
export const HDWP_MAX_JSON_LEN = 1024 * 1024;
/** Longest closing hash of an end-of-batch frame, in bytes. */
export const HDWP_MAX_HASH_LEN = 64;
/** Length of the sender's batch digest an end-of-batch frame may carry (BLAKE3-256, docs/hdwp.md). */
export const HDWP_BATCH_DIGEST_LEN = 32;
/** Most batches one eobs frame ends (docs/hdwp.md, "eobs"); more need several frames. */
export const HDWP_MAX_EOBS_BATCHES = 65535;
/** Bytes of one eobs entry: the 64-byte batch id and its u64 record count. */
export const HDWP_EOBS_ENTRY_LEN = 72;
/** Standard data-plane datagram MTU (the reference's default): 1200 bytes per datagram. */
export const MTU_STANDARD = 1200;
/** Jumbo data-plane datagram MTU: 8500 bytes per datagram (links must carry at least 8550). */
export const MTU_JUMBO = 8500;

/**
 * The query id and per-query token that authenticate a query result stream. Result frames
 * (hello, records, eob, bbn, error, credit, aggregate, columns, eobs, traceContext) carry it so a client's listener can drop anything
 * that does not belong to one of its queries.
 */
export interface QueryAuth {
  /** HDQuery `query_id`, an unsigned 32-bit integer. */
  queryId: number;
  /** The query's 16 random bytes; never all zero. */
  token: Uint8Array;
}

/** Who opened a stream. */
export type HdwpRole = 'ingestClient' | 'ingester' | 'scc' | 'storageNode' | 'queryClient' | 'sqlServer';

/** Wire codes of the roles, in code order starting at 1. */
export const HDWP_ROLES: readonly HdwpRole[] = ['ingestClient', 'ingester', 'scc', 'storageNode', 'queryClient', 'sqlServer'];

/** Opens and binds a stream. */
export interface HelloFrame {
  kind: 'hello';
  /** Protocol version the sender speaks (1). */
  version: number;
  role: HdwpRole;
  /** Dataset id (the schema id), 1..255 UTF-8 bytes. */
  datasetId: string;
  /** Record size of every records frame on the stream, 1..65535. */
  recordSize: number;
  auth?: QueryAuth;
}

/** A run of whole records of one batch. Decoded payloads are Buffer views of the received bytes. */
export interface RecordsFrame {
  kind: 'records';
  batchId: BatchID;
  /** Bytes per record, 1..65535. */
  recordSize: number;
  /** Records in the payload, at least 1. */
  count: number;
  /** `count * recordSize` bytes. */
  payload: Uint8Array;
  auth?: QueryAuth;
}

/** End of batch: the batch is complete. */
export interface EobFrame {
  kind: 'eob';
  batchId: BatchID;
  /** Records the batch holds in total, at most 2^53 - 1. */
  recordCount: number;
  /** Closing hash, 0..64 bytes (empty: none). */
  closingHash: Uint8Array;
  /**
   * The sender's batch digest: BLAKE3-256 of every record byte of the batch in the order sent
   * (`BatchDigest`), 32 bytes. Absent or empty: none (an eob of a sender without it).
   */
  digest?: Uint8Array;
  auth?: QueryAuth;
}

/** Bad batch notice: the batch is void. */
export interface BbnFrame {
  kind: 'bbn';
  batchId: BatchID;
  /** Why, at most 4096 UTF-8 bytes. */
  reason: string;
  auth?: QueryAuth;
}

/** A query; its results must carry the same query id and token. */
export interface QueryFrame {
  kind: 'query';
  queryId: number;
  token: Uint8Array;
  /** The HDQuery JSON: an object, at most 1 MiB, nested at most 64 deep. */
  json: string;
}

/** Cancels a query; the token proves the sender owns it. */
export interface CancelFrame {
  kind: 'cancel';
  queryId: number;
  token: Uint8Array;
}

/** An error that closes the stream (or, with `auth`, one query's results). */
export interface ErrorFrame {
  kind: 'error';
  /** Error code, 0..65535 (assigned values in docs/hdwp.md). */
  code: number;
  /** At most 4096 UTF-8 bytes. */
  message: string;
  auth?: QueryAuth;
}

/** Flow-control credit: frame bytes the receiver grants the sender. */
export interface CreditFrame {
  kind: 'credit';
  /** 1..2^53 - 1 bytes. */
  bytes: number;
  auth?: QueryAuth;
}

/**
 * A batch's partial aggregate (HDQuery `aggregate`, docs/query.md "Aggregates"), sent by a Storage
 * Node in place of the batch's records frames; the batch still ends with its eob or bbn.
 */
export interface AggregateFrame {
  kind: 'aggregate';
  batchId: BatchID;
  /** The partial as UTF-8 JSON: `{ "v": 1, "groups": [{ "k": [...], "m": [...] }] }`, decimal strings. */
  json: string;
  auth?: QueryAuth;
}

/**
 * A run of a batch's matching rows as Arrow-layout columns (HDQuery `result_format: "columns"`,
 * docs/hdwp.md "columns"), sent by a Storage Node in place of records frames; the batch still ends
 * with its eob or bbn. `body` is the columnar body (`engine-rs/columnar.ts` checks and reads it).
 */
export interface ColumnsFrame {
  kind: 'columns';
  batchId: BatchID;
  /** Rows in the body, at least 1. */
  rows: number;
  body: Uint8Array;
  auth?: QueryAuth;
}

/** One batch an eobs frame ends. */
export interface BatchEnd {
  batchId: BatchID;
  /** Records the batch delivered in total, at most 2^53 - 1. */
  recordCount: number;
}

/**
 * Ends several batches of a query at once (docs/hdwp.md, "eobs"): sent by a Storage Node that merged
 * the results of many small batches, in place of one eob per batch. Result streams only (a receiver
 * other than a query client refuses it); no closing hash.
 */
export interface EobsFrame {
  kind: 'eobs';
  /** 1..65535 batches, none twice, in the sender's order. */
  batches: readonly BatchEnd[];
  auth?: QueryAuth;
}

/**
 * The W3C trace context of the sender's span (docs/hdwp.md, "trace_context"), sent by a Storage Node
 * right after hello on a result stream so the client can parent its span for the transfer. The codec
 * checks only that `json` is a JSON object; the receiver checks the `traceparent` layout.
 */
export interface TraceContextFrame {
  kind: 'traceContext';
  /** `{"traceparent": "00-<32 hex>-<16 hex>-<2 hex>", "tracestate"?: "…"}`, nested at most 64 deep. */
  json: string;
  auth?: QueryAuth;
}

/** One HDWP frame, discriminated on `kind`. */
export type Frame =
  | HelloFrame
  | RecordsFrame
  | EobFrame
  | BbnFrame
  | QueryFrame
  | CancelFrame
  | ErrorFrame
  | CreditFrame
  | AggregateFrame
  | ColumnsFrame
  | EobsFrame
  | TraceContextFrame;

/** The kinds, indexed by wire code - 1 (eobs is 0x0B, traceContext 0x0C). */
export const HDWP_KINDS: readonly Frame['kind'][] = ['hello', 'records', 'eob', 'bbn', 'query', 'cancel', 'error', 'credit', 'aggregate', 'columns', 'eobs', 'traceContext'];

/** Assigned error frame codes (docs/hdwp.md); any 0..65535 is accepted on the wire. */
export const HDWP_ERROR_FRAME_CODES = {
  protocol: 1,
  unsupported: 2,
  unknownQuery: 3,
  cancelled: 4,
  timeout: 5,
  overloaded: 6,
  internal: 7,
  creditExceeded: 8,
  /** The receiver is stopping; the stream closes, unacknowledged batches stay open (docs/ingest-protocol.md). */
  shuttingDown: 9,
  /** One batch refused: its content does not match its eob (closing hash, count, record size), or it is durable with other content. */
  batchRefused: 10,
  /** The HDQuery failed validation on a node; the message names the key (docs/query.md). */
  badQuery: 11,
  /** verify_hash found a chain that does not match the stored closing hash. */
  hashMismatch: 12,
  /** The segment is damaged (checksum) or missing. */
  batchUnreadable: 13,
  /**
   * An eob does not describe what the receiver holds for its batch: the record count or the
   * sender's batch digest differ (records lost or added on the way, e.g. across an SCC restart).
   * Nothing was acknowledged; the sender re-sends the batch from its first record (docs/ingest-protocol.md).
   */
  batchMismatch: 14,
} as const;

/** `s` cut to at most `max` UTF-8 bytes at a character boundary (error frames hold 4096 bytes). */
export function clipUtf8(s: string, max: number = HDWP_MAX_TEXT_LEN): string {
  const b = Buffer.from(s, 'utf8');
  if (b.length <= max) return s;
  let end = max;
  // Step back over continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
  while (end > 0 && (b[end] & 0xc0) === 0x80) end--;
  return b.toString('utf8', 0, end);
}
