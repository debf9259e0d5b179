/**
 * Copies one durable batch from a peer replica (cold-boot synchronisation, coldBootSync.ts): the
 * peer's whole segment is downloaded to `<batch>.hdseg.partial` on a device of this node — the name
 * crash recovery deletes, so a copy cut by a kill is never indexed and is simply copied again — then
 * fsynced, its hash chain recomputed over every record (engine-rs `verifySegment`), its header
 * checked against what was asked for and this node's chain settings, its closing hash and record
 * count against the peer's index, and only then renamed to `<batch>.hdseg` and the directory
 * fsynced, as a commit of the node's own does.
 */
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { segmentFileName, SegmentReader, verifySegment, type BatchID, type HashAlgorithmName } from '../../engine-rs/index';
import type { BatchEntry } from './batchIndex';
import type { StorageDevice } from './devices';
import type { PeerLink } from './peerLink';

/** What the peer's index says of the batch (`GET /v1/batches?dataset=`). */
export interface PeerBatch {
  readonly dataset: string;
  readonly batchId: BatchID;
  readonly records: number;
  readonly closingHash: Buffer;
}

/** This node's chain settings a copied segment must have (the SCC's: HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE). */
export interface ChainSettings {
  readonly algorithm: HashAlgorithmName;
  readonly blockSize: number;
}

/** A copied segment failed its checks: nothing was installed. */
export class BatchCopyError extends Error {
  override readonly name = 'BatchCopyError';
}

/** Downloads, verifies and commits `b` from `link` onto `device`; returns its index entry. */
export async function copyBatch(link: PeerLink, b: PeerBatch, device: StorageDevice, chain: ChainSettings): Promise<BatchEntry> {
  const dir = device.datasetDir(b.dataset);
  await mkdir(dir, { recursive: true });
  const final = path.join(dir, segmentFileName(b.batchId));
  const partial = `${final}.partial`;
  const id = `batch ${b.batchId.toHex()} of '${b.dataset}' from ${link.peer.name}`;
  // A partial left by an earlier, interrupted copy (recovery deletes them at start; this is belt and braces).
  await rm(partial, { force: true });
  try {
    const q = new URLSearchParams({ dataset: b.dataset, batch_id: b.batchId.toHex() });
    await link.download(`/v1/segment?${q.toString()}`, partial);
    await fsyncFile(partial);
    const v = await verifySegment(partial);
    if (!v.ok) throw new BatchCopyError(`${id} does not verify: ${v.code}: ${v.message}`);
    const r = await SegmentReader.open(partial);
    if (r.datasetId !== b.dataset || r.batchId.toHex() !== b.batchId.toHex()) throw new BatchCopyError(`${id}: the segment holds batch ${r.batchId.toHex()} of '${r.datasetId}'`);
    if (r.algorithm !== chain.algorithm || r.blockSize !== chain.blockSize) {
      throw new BatchCopyError(`${id} is chained with ${r.algorithm} in blocks of ${r.blockSize}; this node uses ${chain.algorithm} in blocks of ${chain.blockSize} (HASH_ALGORITHM, HASH_CHAIN_BLOCK_SIZE must match)`);
    }
    if (v.records !== b.records || !v.closingHash.equals(b.closingHash)) {
      throw new BatchCopyError(`${id}: the segment holds ${v.records} records closing ${v.closingHash.toString('hex').slice(0, 16)}…; the peer's index says ${b.records} closing ${b.closingHash.toString('hex').slice(0, 16)}…`);
    }
    await rename(partial, final);
    await fsyncFile(dir);
    const { size } = await stat(final);
    return { dataset: b.dataset, batchId: b.batchId, path: final, device: device.name, records: v.records, bytes: size, closingHash: v.closingHash };
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
}

async function fsyncFile(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
