/**
 * Test helper: a stand-in Storage Node on a real HdwpServer socket (used where the real Storage
 * Node pipeline would make a unit test slow; the integration tests use the real one).
 */
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import type { Frame } from '../../../engine-rs/hdwpFrame';
import { batchKey } from '../../../nodes/scc/catchUpLog';
import type { SnTarget } from '../../../nodes/scc/settings';
import { HdwpServer, type HdwpConnection } from '../../../hdwp/hdwpServer';
import { batchErrorFrame } from '../../../hdwp/hdwpStreamError';

/** Record size the fake nodes' tests use. */
export const RS = 16;

/**
 * A stand-in Storage Node over a real HdwpServer: keeps batches in memory across restarts (its
 * "disk"), commits on eob and echoes it, discards on bbn and echoes it, refuses a bbn for a
 * committed batch and answers a repeated eob idempotently — the behaviour docs/storage-node.md gives.
 */
export class FakeSn {
  /**
   * @param recordSize bytes per record
   * @param host address the node listens on (and its target names)
   */
  constructor(
    readonly recordSize = RS,
    readonly host = '127.0.0.1',
  ) {}

  readonly open = new Map<string, Buffer[]>();
  readonly durable = new Map<string, Buffer>();
  /** While set, eob answers wait for it. */
  holdEobs: Promise<void> | undefined;
  eobsSeen = 0;
  server: HdwpServer | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = new HdwpServer({ role: 'storageNode', host: this.host, port: this.port, onConnection: (conn) => ({ onFrame: (f) => this.frame(conn, f) }) });
    this.port = (await this.server.listen()).port;
  }
  async kill(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
  }
  target(name: string): SnTarget {
    return { name, host: this.host, controlPort: 1, prodPort: this.port };
  }
  batch(n: number, dataset = 'ds'): Buffer | undefined {
    return this.durable.get(batchKey(dataset, generateBatchIdNumber(n)));
  }
  private async frame(conn: HdwpConnection, f: Frame): Promise<void> {
    if (f.kind === 'records') {
      const k = batchKey(conn.hello.datasetId, f.batchId);
      if (this.durable.has(k)) return;
      this.open.set(k, [...(this.open.get(k) ?? []), Buffer.from(f.payload)]);
    } else if (f.kind === 'eob') {
      this.eobsSeen++;
      const k = batchKey(conn.hello.datasetId, f.batchId);
      if (this.holdEobs) await this.holdEobs;
      if (!this.durable.has(k)) {
        const data = Buffer.concat(this.open.get(k) ?? []);
        this.open.delete(k);
        if (data.length !== f.recordCount * this.recordSize) return conn.send(batchErrorFrame(f.batchId, 10, `eob says ${f.recordCount} records, ${data.length / this.recordSize} arrived`));
        this.durable.set(k, data);
      }
      return conn.send(f);
    } else if (f.kind === 'bbn') {
      const k = batchKey(conn.hello.datasetId, f.batchId);
      if (this.durable.has(k)) return conn.send(batchErrorFrame(f.batchId, 10, 'already durable here'));
      this.open.delete(k);
      return conn.send(f);
    }
  }
}

