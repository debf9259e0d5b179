/**
 * Test stand-in for a Storage Node's query service (docs/query.md, "Storage Node scan and result
 * streams"), for SCC dispatch tests that must steer a node's behaviour batch by batch: it takes
 * query and cancel frames on a real HdwpServer (the control port), streams each batch's records to
 * the return address over a real HdwpClient with the query block, and echoes eob / bbn to the SCC.
 * The real node (pipelines/storage-node.yaml) is used by the end-to-end tests.
 */
import { BatchID } from '../../engine-rs/batchId';
import type { Frame, QueryAuth } from '../../engine-rs/hdwpFrame';
import { bbnReason } from '../../query/batchNotice';
import { parseHdQuery } from '../../query/hdQuery';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpServer, type HdwpConnection } from '../../hdwp/hdwpServer';

/** Record size the stand-ins stream. */
export const RS = 32;

/** What the stand-in does with a batch: send it, say it does not have it (bbn 13), or wait for `release()`. */
export type BatchPlan = 'deliver' | 'missing' | 'hold';

/** The records a stand-in sends for a batch: 3 records whose bytes derive from the batch id. */
export function batchRecords(hex: string): Buffer {
  const b = Buffer.alloc(3 * RS);
  for (let i = 0; i < b.length; i++) b[i] = (parseInt(hex.slice(-4), 16) + i) & 0xff;
  return b;
}

/** One query a stand-in received. */
export interface SeenQuery {
  readonly auth: QueryAuth;
  readonly batchIds: readonly string[];
  readonly qos: number;
  cancelled: boolean;
  /** Set once the stand-in is done with it (all answered, cancelled, dropped or refused by the listener). */
  done: boolean;
}

/** A stand-in Storage Node query service on a free loopback port. */
export class StandInQueryNode {
  /** Queries in arrival order. */
  readonly queries: SeenQuery[] = [];
  /** Batch → plan; unlisted batches are delivered. */
  plan: (hex: string) => BatchPlan = () => 'deliver';
  /** When set, the next query frame makes the node close its control connection without an answer (then it is cleared). */
  closeOnNextQuery = false;
  /** Close the control connection (a crash) after answering this many batches of a leg. */
  dropAfter: number | undefined;
  port = 0;
  private server: HdwpServer | undefined;
  private releaseHold: (() => void) | undefined;
  private held: Promise<void> = new Promise((r) => (this.releaseHold = r));
  private readonly running = new Set<string>();
  private readonly conns = new Set<HdwpConnection>();
  /** Control connections accepted so far. */
  accepted = 0;

  /** @param name the node's name in SN_TARGETS */
  constructor(readonly name: string) {}

  /** Starts listening on 127.0.0.1. */
  async start(): Promise<void> {
    this.server = new HdwpServer({
      role: 'storageNode',
      roles: ['scc'],
      acceptsQueries: true,
      host: '127.0.0.1',
      port: 0,
      onConnection: (conn) => {
        this.accepted++;
        this.conns.add(conn);
        return { onFrame: (f) => this.onFrame(conn, f), onClose: () => this.conns.delete(conn) };
      },
    });
    this.port = (await this.server.listen()).port;
  }

  /** Lets held batches go. */
  release(): void {
    this.releaseHold?.();
    this.held = new Promise((r) => (this.releaseHold = r));
  }

  /** Control connections open now. */
  get openConnections(): number {
    return this.conns.size;
  }

  /** Closes every control connection (as a node restart would), keeps listening. */
  dropConnections(): void {
    for (const c of this.conns) c.close();
  }

  /** Stops listening and closes every connection. */
  async stop(): Promise<void> {
    this.release();
    await this.server?.close();
  }

  private onFrame(conn: HdwpConnection, f: Frame): void {
    if (f.kind === 'cancel') {
      const q = this.queries.find((x) => x.auth.queryId === f.queryId && Buffer.from(x.auth.token).equals(Buffer.from(f.token)));
      if (q) q.cancelled = true;
      void conn.send({ kind: 'error', code: 4, message: `query ${f.queryId} cancelled`, auth: { queryId: f.queryId, token: f.token } });
      return;
    }
    if (f.kind !== 'query') return;
    if (this.closeOnNextQuery) {
      this.closeOnNextQuery = false;
      conn.close();
      return;
    }
    const auth: QueryAuth = { queryId: f.queryId, token: Buffer.from(f.token) };
    const key = `${f.queryId}:${Buffer.from(f.token).toString('hex')}`;
    // As the real node does: one query id and token runs once at a time.
    if (this.running.has(key)) {
      void conn.send({ kind: 'error', code: 11, message: `query_id: query ${f.queryId} is already running on this node`, auth });
      return;
    }
    const query = parseHdQuery(f.json);
    const seen: SeenQuery = { auth, batchIds: query.batchIds, qos: query.queryQos, cancelled: false, done: false };
    this.queries.push(seen);
    this.running.add(key);
    void this.serve(conn, seen, query.dataset, query.returnAddress)
      .catch(() => conn.close()) // the listener refused the stream (the query was closed there)
      .finally(() => {
        seen.done = true;
        this.running.delete(key);
      });
  }

  private async serve(conn: HdwpConnection, q: SeenQuery, dataset: string, to: { host: string; port: number }): Promise<void> {
    const client = await HdwpClient.connect({ host: to.host, port: to.port, role: 'storageNode', datasetId: dataset, recordSize: RS, auth: q.auth, acks: false });
    try {
      let answered = 0;
      for (const hex of q.batchIds) {
        const plan = this.plan(hex);
        if (plan === 'hold') await this.held;
        if (q.cancelled || conn.closed) return;
        const batchId = BatchID.fromHex(hex);
        if (plan === 'missing') {
          const reason = bbnReason(13, `batch ${hex.slice(0, 8)}… is not held by node '${this.name}'`);
          await client.sendBbn(batchId, reason);
          await conn.send({ kind: 'bbn', batchId, reason, auth: q.auth });
        } else {
          const data = batchRecords(hex);
          await client.sendRecords(batchId, data);
          if (this.dropAfter !== undefined && answered >= this.dropAfter) {
            // A crash mid-batch: the records went out, the eob never will.
            conn.close();
            return;
          }
          await client.sendEob(batchId, data.length / RS);
          await conn.send({ kind: 'eob', batchId, recordCount: data.length / RS, closingHash: new Uint8Array(0), auth: q.auth });
        }
        answered++;
      }
    } finally {
      await client.close();
    }
  }
}
