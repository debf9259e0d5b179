/**
 * Reading back, two ways:
 * - {@link readReplica}: every batch from ONE Storage Node alone, as the SCC's query legs do (HDWP on
 *   the node's command port, role scc, a query frame per 5 000 batches) with verify_hash, the
 *   records arriving at this process's result listener; each batch ends in an eob (its records) or
 *   a bbn (12: the chain does not verify; 13: missing or unreadable).
 * - {@link dispatchQuery}: a query through the SCC's gRPC QueryDispatch, as clients place them,
 *   every batch it delivers compared with what the filter selects from the records sent.
 */
import net from 'node:net';
import { encodeFrame, FrameDecoder, type BatchID, type Frame } from '../../engine-rs/index';
import { parseBbnReason } from '../../query/batchNotice';
import { DispatchError, type QueryDispatchClient } from '../../query/dispatch/dispatchClient';
import { serializeHdQuery, type HdQuery } from '../../query/hdQuery';
import { newQueryToken } from '../../query/token';
import type { ResultListener } from '../../hdwp/resultListener';
import { DATASET, RECORD_SIZE } from './chaosCluster';
import { expected, type QueryShape } from './chaosData';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let nextQueryId = 1 + Math.floor(Math.random() * 2 ** 30);
/** A query id not used before in this process. */
export const queryId = (): number => (nextQueryId = (nextQueryId % 0xfffffff0) + 1);

/** What one replica answered for one batch. */
export type ReplicaAnswer = { kind: 'records'; records: Buffer } | { kind: 'bbn'; code: number; reason: string } | { kind: 'none'; why: string };

/** Batches per query frame (each id is 130 bytes of JSON; a frame holds 1 MiB). */
const PER_FRAME = 5000;

/**
 * Reads `ids` from the Storage Node whose command port is `port`, alone, with verify_hash.
 * Resolves with one answer per batch (hex id); a batch the node did not answer within `timeoutMs`
 * is `none`.
 */
export async function readReplica(host: string, port: number, listener: ResultListener, listenPort: number, ids: readonly BatchID[], timeoutMs = 30_000): Promise<Map<string, ReplicaAnswer>> {
  const out = new Map<string, ReplicaAnswer>();
  for (let i = 0; i < ids.length; i += PER_FRAME) {
    const part = ids.slice(i, i + PER_FRAME);
    for (const [k, v] of await readPart(host, port, listener, listenPort, part, timeoutMs)) out.set(k, v);
  }
  return out;
}

async function readPart(host: string, port: number, listener: ResultListener, listenPort: number, ids: readonly BatchID[], timeoutMs: number): Promise<Map<string, ReplicaAnswer>> {
  const auth = { queryId: queryId(), token: newQueryToken() };
  const records = new Map<string, Buffer>();
  const open = listener.open(auth, (r) => {
    if (r.kind === 'batch') records.set(r.batchId.toHex(), Buffer.concat(r.records));
  });
  const ends = new Map<string, Frame>();
  let failure = '';
  const sock = net.connect({ host, port });
  const decoder = new FrameDecoder();
  sock.on('data', (c: Buffer) => {
    try {
      for (const f of decoder.push(c)) {
        if ((f.kind === 'eob' || f.kind === 'bbn') && f.auth?.queryId === auth.queryId) ends.set(f.batchId.toHex(), f);
        if (f.kind === 'error') failure = `error ${f.code}: ${f.message}`;
      }
    } catch (e) {
      failure = String(e);
    }
  });
  sock.on('error', (e) => (failure ||= String(e)));
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  const q: HdQuery = {
    queryId: auth.queryId,
    dataset: DATASET,
    batchIds: ids.map((b) => b.toHex()),
    subQueries: [],
    targets: [],
    verifyHash: true,
    queryQos: 8,
    returnAddress: { host: '127.0.0.1', port: listenPort },
    token: auth.token,
  };
  sock.write(encodeFrame({ kind: 'hello', version: 1, role: 'scc', datasetId: DATASET, recordSize: RECORD_SIZE }));
  sock.write(encodeFrame({ kind: 'query', queryId: auth.queryId, token: auth.token, json: serializeHdQuery(q) }));
  const deadline = Date.now() + timeoutMs;
  let done = false;
  void closed.then(() => (done = true));
  // Every batch ended on the control connection, and each eob's records at the listener.
  const complete = (): boolean => ids.every((b) => {
    const e = ends.get(b.toHex());
    return e !== undefined && (e.kind === 'bbn' || records.has(b.toHex()));
  });
  while (!complete() && !done && !failure && Date.now() < deadline) await sleep(10);
  sock.destroy();
  open.close();
  const out = new Map<string, ReplicaAnswer>();
  for (const b of ids) {
    const h = b.toHex();
    const e = ends.get(h);
    const r = records.get(h);
    if (e?.kind === 'bbn') out.set(h, { kind: 'bbn', code: parseBbnReason(e.reason).code, reason: e.reason });
    else if (e?.kind === 'eob' && r) out.set(h, { kind: 'records', records: r });
    else out.set(h, { kind: 'none', why: failure || (done ? 'the node closed the connection' : `no answer within ${timeoutMs} ms`) });
  }
  return out;
}

/** How one query through the SCC went. */
export interface QueryOutcome {
  /** dispatched: the SCC took it; failed: the dispatch call failed (SCC down, no replica, ...). */
  readonly status: 'complete' | 'partial' | 'failed';
  /** Batches delivered whole whose rows were exactly what the filter selects from the records sent. */
  readonly rightBatches: number;
  /** Batches delivered whose rows were anything else: never allowed. */
  readonly wrong: string[];
  /** Batches reported failed (bbn / error) or missing, or not answered before the deadline. */
  readonly unanswered: number;
  readonly rows: number;
  readonly ms: number;
  readonly error?: string;
}

/**
 * One query through the SCC's dispatch over `batches` (hex id → the records sent), with `shape`'s
 * filters; waits up to `timeoutMs` for every batch to end, then cancels what is left.
 */
export async function dispatchQuery(
  client: QueryDispatchClient,
  listener: ResultListener,
  listenPort: number,
  batches: ReadonlyMap<string, Buffer>,
  shape: QueryShape,
  opts: { timeoutMs?: number; verifyHash?: boolean; mergeBatches?: boolean } = {},
): Promise<QueryOutcome> {
  const t0 = performance.now();
  const timeoutMs = opts.timeoutMs ?? 5000;
  const auth = { queryId: queryId(), token: newQueryToken() };
  const got = new Map<string, Buffer>();
  const open = listener.open(auth, (r) => {
    if (r.kind === 'batch') got.set(r.batchId.toHex(), Buffer.concat(r.records));
  });
  const q: HdQuery = {
    queryId: auth.queryId,
    dataset: DATASET,
    batchIds: [...batches.keys()],
    subQueries: shape.subQueries,
    targets: [],
    verifyHash: opts.verifyHash ?? false,
    queryQos: 1,
    returnAddress: { host: '127.0.0.1', port: listenPort },
    token: auth.token,
    // Merged results: the rows of several batches come under one of them, ended together (eobs).
    ...(opts.mergeBatches === true && { mergeBatches: true }),
  };
  let missing = 0;
  let error: string | undefined;
  try {
    const reply = await client.dispatch(q);
    missing = reply.missingBatchIds.length;
    const want = batches.size - missing;
    const deadline = Date.now() + timeoutMs;
    while (open.completed.size + open.batchErrors().length < want && Date.now() < deadline) await sleep(5);
    if (open.completed.size + open.batchErrors().length < want) {
      error = `not every batch ended within ${timeoutMs} ms`;
      await client.cancelQuery(auth.queryId, auth.token).catch(() => undefined);
    }
  } catch (e) {
    error = e instanceof DispatchError ? `dispatch: ${e.message}` : String(e);
  }
  open.close();
  const wrong: string[] = [];
  let right = 0;
  let rows = 0;
  if (opts.mergeBatches === true) {
    // A batch's rows may arrive under another: the ended batches' rows, as a whole, must be exactly theirs.
    const recordsOf = (bufs: Iterable<Buffer>): string[] => [...bufs].flatMap((b) => Array.from({ length: b.length / RECORD_SIZE }, (_, i) => b.subarray(i * RECORD_SIZE, (i + 1) * RECORD_SIZE).toString('hex'))).sort();
    const gotRows = recordsOf(got.values());
    const wantRows = recordsOf([...got.keys()].map((h) => expected(batches.get(h) ?? Buffer.alloc(0), shape)));
    rows = gotRows.length;
    if (gotRows.length === wantRows.length && gotRows.every((r, i) => r === wantRows[i])) right = got.size;
    else wrong.push(`${got.size} merged batches: ${gotRows.length} rows, ${wantRows.length} expected (${shape.name})`);
  } else {
    for (const [h, recs] of got) {
      const sent = batches.get(h);
      const want = sent ? expected(sent, shape) : undefined;
      rows += recs.length / RECORD_SIZE;
      if (want && recs.equals(want)) right++;
      else wrong.push(`batch ${h.slice(0, 16)}…: ${recs.length / RECORD_SIZE} rows, ${want ? want.length / RECORD_SIZE : 'none'} expected (${shape.name})`);
    }
  }
  const unanswered = batches.size - got.size;
  const failed = error?.startsWith('dispatch') === true;
  return { status: failed ? 'failed' : unanswered === 0 ? 'complete' : 'partial', rightBatches: right, wrong, unanswered, rows, ms: performance.now() - t0, ...(error !== undefined && { error }) };
}
