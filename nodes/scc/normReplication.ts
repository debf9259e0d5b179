/**
 * The SCC's side of NORM replication (docs/replication-norm.md): each batch's records, eob and bbn
 * written once, as HDWP frames, into one NORM stream on a multicast group (UDP 6988 by default),
 * instead of once per replica on its TCP stream. The replica set (replicas.ts) still sends each
 * replica its eob / bbn over TCP and counts its durable acknowledgement there; a replica that
 * missed records on the group answers that eob with a batch mismatch and gets the batch over TCP.
 */
import type { BatchID } from '../../engine-rs/batchId';
import { encodeFrame, encodeRecords } from '../../engine-rs/hdwp';
import { NormSender, normVersion } from '../../engine-rs/norm';
import { encodeNormMessage } from '../../net/normMessages';

/** `replication: norm` settings of the SCC. */
export interface NormReplicationOptions {
  /** Multicast group the Storage Nodes join (NORM_GROUP). */
  readonly group: string;
  /** UDP port (NORM_PORT, the reference's 6988). */
  readonly port: number;
  /** Interface sent on (NORM_INTERFACE); empty: the default route's. */
  readonly interface: string;
  /** NORM segment bytes: the HDWP MTU mode's datagram size (1200 Standard, 8500 Jumbo). */
  readonly segmentSize: number;
  /** Fixed send rate in bits/s (NORM_TX_RATE); 0: NORM's congestion control. */
  readonly txRateBps: number;
  /** Repair window bytes; default 64 MiB. */
  readonly bufferBytes?: number;
}

/** Records bytes per records frame on the group (frames are cut at whole records). */
const FRAME_BYTES = 1 << 20;

/** The SCC's NORM stream: batches written once for every replica. */
export class NormReplication {
  private readonly sender: NormSender;
  /** Messages written (records, eob and bbn). */
  messages = 0;

  /** Opens the sender; throws with what to install when libnorm is missing. */
  constructor(readonly opts: NormReplicationOptions) {
    let version: string;
    try {
      version = normVersion();
    } catch (err) {
      throw new Error(`replication: norm: ${(err as Error).message}`);
    }
    this.sender = new NormSender({ address: opts.group, port: opts.port, nodeId: 1, interface: opts.interface, segmentSize: opts.segmentSize, txRateBps: opts.txRateBps, ...(opts.bufferBytes && { bufferBytes: opts.bufferBytes }) });
    this.version = version;
  }

  /** libnorm's version, for /health. */
  readonly version: string;

  /** Writes a records chunk of one batch; resolves once NORM took it (so the pipeline waits while NORM's buffer is full). */
  records(dataset: string, batchId: BatchID, recordSize: number, buf: Buffer): Promise<void> {
    this.messages++;
    return this.sender.writeMessage(encodeNormMessage(dataset, encodeRecords(batchId, recordSize, buf, { maxFrameBytes: FRAME_BYTES })));
  }

  /** Writes a batch's eob: the replicas' durable answers still come over TCP. */
  eob(dataset: string, batchId: BatchID, recordCount: number, closingHash?: Uint8Array): Promise<void> {
    this.messages++;
    return this.sender.writeMessage(encodeNormMessage(dataset, encodeFrame({ kind: 'eob', batchId, recordCount, closingHash: closingHash ?? new Uint8Array(0) })), true);
  }

  /** Writes a batch's bbn. */
  bbn(dataset: string, batchId: BatchID, reason: string): Promise<void> {
    this.messages++;
    return this.sender.writeMessage(encodeNormMessage(dataset, encodeFrame({ kind: 'bbn', batchId, reason })), true);
  }

  /** The replication part of /health. */
  health(): Record<string, unknown> {
    return {
      mode: 'norm',
      library: `libnorm ${this.version}`,
      group: `${this.opts.group}:${this.opts.port}`,
      interface: this.opts.interface || '(default route)',
      segment_size: this.opts.segmentSize,
      tx_rate_bps: this.opts.txRateBps,
      bytes_sent: this.sender.bytesSent,
      messages: this.messages,
      queued_bytes: this.sender.queuedBytes,
      send_errors: this.sender.sendErrors,
    };
  }

  /** Stops the sender. */
  close(): void {
    this.sender.close();
  }
}
