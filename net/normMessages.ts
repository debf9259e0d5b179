/**
 * The replication byte stream on NORM (docs/replication-norm.md): the SCC writes, once for every
 * Storage Node, the HDWP frames it would send each replica on its TCP stream (records, eob, bbn),
 * each group of one dataset's frames as one NORM message:
 *
 *   u32 length of what follows | u8 dataset id length | dataset id (UTF-8) | HDWP frames
 *
 * A TCP stream names its dataset once in hello; the multicast stream carries every dataset, so
 * each message names its own. Each message ends with a NORM end-of-message mark, where a receiver
 * that joined late or lost data beyond repair resumes ({@link NormMessageReader.reset}).
 */
import { FrameDecoder } from '../engine-rs/hdwpDecoder';
import { HDWP_MAX_DATASET_ID_LEN, type Frame } from '../engine-rs/hdwpFrame';

/** Largest message accepted (a records message holds at most one pipeline chunk of frames). */
export const NORM_MAX_MESSAGE = 64 << 20;

/** One message: a dataset's frames in order. */
export interface NormMessage {
  readonly dataset: string;
  readonly frames: Frame[];
}

/** Wraps `frames` (encoded HDWP frames, one or more) of `dataset` as one message. */
export function encodeNormMessage(dataset: string, frames: Buffer): Buffer {
  const ds = Buffer.from(dataset, 'utf8');
  if (ds.length === 0 || ds.length > HDWP_MAX_DATASET_ID_LEN) throw new RangeError(`dataset id must be 1..${HDWP_MAX_DATASET_ID_LEN} bytes, got ${ds.length}`);
  const head = Buffer.allocUnsafe(5 + ds.length);
  head.writeUInt32BE(1 + ds.length + frames.length, 0);
  head.writeUInt8(ds.length, 4);
  ds.copy(head, 5);
  return Buffer.concat([head, frames]);
}

/** Splits the received byte stream back into messages and decodes their frames. */
export class NormMessageReader {
  private pending: Buffer = Buffer.alloc(0);

  /** Adds received bytes; returns the messages they complete. Throws on a malformed message (a bug or a foreign sender on the group). */
  push(chunk: Buffer): NormMessage[] {
    let buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: NormMessage[] = [];
    while (buf.length >= 4) {
      const len = buf.readUInt32BE(0);
      if (len < 2 || len > NORM_MAX_MESSAGE) throw new RangeError(`NORM replication message of ${len} bytes (1..${NORM_MAX_MESSAGE}): not an HD replication stream`);
      if (buf.length < 4 + len) break;
      const body = buf.subarray(4, 4 + len);
      const dsLen = body.readUInt8(0);
      if (dsLen === 0 || 1 + dsLen > len) throw new RangeError(`NORM replication message with a bad dataset id length ${dsLen}`);
      const dataset = body.subarray(1, 1 + dsLen).toString('utf8');
      const decoder = new FrameDecoder({ maxPayload: NORM_MAX_MESSAGE });
      const frames = decoder.push(body.subarray(1 + dsLen));
      if (decoder.buffered !== 0) throw new RangeError(`NORM replication message for '${dataset}' ends inside a frame`);
      out.push({ dataset, frames });
      buf = buf.subarray(4 + len);
    }
    this.pending = Buffer.from(buf);
    return out;
  }

  /** Drops a partial message: after a break the stream resumes at the next message start. */
  reset(): void {
    this.pending = Buffer.alloc(0);
  }
}
