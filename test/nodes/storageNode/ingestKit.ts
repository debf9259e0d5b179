/**
 * What the Storage Node ingest tests share: the 40-byte `ticks` records they send, their closing
 * hash (sha256 chains of 16-record blocks), and the pipeline file the nodes run.
 */
import path from 'node:path';
import { HashChain, type BatchID } from '../../../engine-rs/index';

/** Record size of the `ticks` dataset. */
export const R = 40;
/** The dataset the tests ingest. */
export const DS = 'ticks';
/** The Storage Node pipeline file. */
export const yaml = path.resolve(__dirname, '../../../pipelines/storage-node.yaml');

/** `n` records whose bytes follow from `seed`. */
export function records(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n * R);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + seed * 3) & 0xff;
  return b;
}

/** The closing hash of `data` as batch `id` (sha256, 16-record blocks). */
export async function closing(id: BatchID, data: Buffer): Promise<Buffer> {
  const c = new HashChain(id, { recordSize: R, blockSize: 16, algorithm: 'sha256' });
  await c.update(data);
  return c.finish().closingHash;
}
