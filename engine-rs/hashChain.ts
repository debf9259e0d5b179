import { BatchID } from './batchId';
import { native, type ChainHandle } from './native';

/** Hash algorithms of the ingest hash chain (HASH_ALGORITHM). */
export type HashAlgorithmName = 'sha512' | 'sha256' | 'blake3';

/** Every algorithm the chain accepts, the default first. */
export const HASH_ALGORITHMS: readonly HashAlgorithmName[] = ['sha512', 'sha256', 'blake3'];

/** Default record hashes per chain block (HASH_CHAIN_BLOCK_SIZE). */
export const DEFAULT_HASH_CHAIN_BLOCK_SIZE = 64;

/** Default record size the chain splits at (RECORD_SIZE). */
export const DEFAULT_HASH_RECORD_SIZE = 150;

/** Settings of one chain; every node of an instance must use the same ones. */
export interface HashChainOptions {
  /** Default `sha512`. */
  readonly algorithm?: HashAlgorithmName;
  /** Bytes per hashed record; default 150. */
  readonly recordSize?: number;
  /** Record hashes per block; default 64. */
  readonly blockSize?: number;
  /** Also compute the sender's batch digest of the same bytes (`HashChainResult.digest`); default false. */
  readonly withDigest?: boolean;
}

/** What a finished chain yields. */
export interface HashChainResult {
  /** The batch's closing hash (the last block hash; the hash of the batch id when empty). */
  readonly closingHash: Buffer;
  /** Blocks chained. */
  readonly blocks: number;
  /** Records hashed, a short final one included. */
  readonly records: number;
  /** Length of a short final record (0: every record was whole). */
  readonly tailBytes: number;
  /** Every block hash in order, one digest length each. */
  readonly blockHashes: Buffer;
  /** With `withDigest`: the batch digest of the same bytes (see {@link BatchDigest}). */
  readonly digest?: Buffer;
}

/**
 * Sets how many threads hash records in this process (HASH_THREADS; 0: one per core the process
 * may use) and returns the count now in force. Record hashes are independent, so an update of
 * many whole records has them hashed on this pool while its own thread chains the block hashes in
 * order (the same result as one thread). One pool serves every chain of the process: the SCC's,
 * the segment writer's, recovery's and `verify_hash`'s. 1: every chain hashes on its own thread.
 * Throws a RangeError-like coded error (ERR_RANGE) outside 0..1024.
 *
 * @example
 * setHashThreads(0); // one per core, the default
 */
export function setHashThreads(threads: number): number {
  return native.setHashThreads(threads);
}

/** Threads hashing records in this process (one per core until {@link setHashThreads}). */
export function hashThreads(): number {
  return native.hashThreads();
}

/** Type guard for algorithm names from configuration. */
export function isHashAlgorithm(name: string): name is HashAlgorithmName {
  return (HASH_ALGORITHMS as readonly string[]).includes(name);
}

/**
 * The hash chain of one batch (docs/segment.md, "Hash chain"), computed natively off the event
 * loop: each `update` hashes its chunk on libuv's thread pool while JavaScript keeps going.
 * Chunks may have any size (records may span chunks) and are hashed in the order `update` was
 * called, even when several are in flight. Call `finish` once every update has settled.
 *
 * @example
 * const chain = new HashChain(batchId, { algorithm: 'sha512' });
 * await chain.update(records);
 * const { closingHash } = chain.finish();
 */
export class HashChain {
  private readonly handle: ChainHandle;
  private inFlight = 0;
  private done = false;
  /** The algorithm in use. */
  readonly algorithm: HashAlgorithmName;

  /** Starts the chain of `batchId`. Throws on an unknown algorithm or sizes out of range. */
  constructor(batchId: BatchID | Uint8Array, options: HashChainOptions = {}) {
    this.algorithm = options.algorithm ?? 'sha512';
    if (!isHashAlgorithm(this.algorithm)) throw new RangeError(`unknown hash algorithm ${String(this.algorithm)}`);
    const id = batchId instanceof BatchID ? batchId.bytes : batchId;
    this.handle = native.chainNew(
      this.algorithm,
      options.recordSize ?? DEFAULT_HASH_RECORD_SIZE,
      options.blockSize ?? DEFAULT_HASH_CHAIN_BLOCK_SIZE,
      id,
      options.withDigest === true,
    );
  }

  /** Updates not yet settled (a caller capping its hash queue can watch this). */
  get pending(): number {
    return this.inFlight;
  }

  /**
   * Hashes the next bytes of the batch. The bytes are copied before this returns, so the caller
   * may reuse `buf` at once.
   */
  async update(buf: Uint8Array): Promise<void> {
    if (this.done) throw new Error('HashChain.update after finish');
    this.inFlight++;
    try {
      await native.chainUpdate(this.handle, buf);
    } finally {
      this.inFlight--;
    }
  }

  /** Closes the batch. Throws if an update is still in flight or the chain is already finished. */
  finish(): HashChainResult {
    if (this.inFlight > 0) throw new Error(`HashChain.finish with ${this.inFlight} update(s) in flight; await them first`);
    if (this.done) throw new Error('HashChain.finish called twice');
    this.done = true;
    return native.chainFinish(this.handle);
  }
}

/**
 * The sender's batch digest (docs/hdwp.md, "eob"): BLAKE3-256 of every record byte of one batch in
 * the order sent, computed natively off the event loop (one native call per chunk, never per
 * record). It needs no settings, so a sender computes it without knowing the SCC's chain settings,
 * and it does not depend on how the records were split into calls or frames. Chunks are digested
 * in the order `update` was called, even when several are in flight.
 *
 * @example
 * const d = new BatchDigest();
 * void d.update(records);           // the bytes are copied at once
 * const digest = await d.finish();  // 32 bytes, once every update is digested
 */
export class BatchDigest {
  private readonly handle = native.digestNew();
  private readonly inFlight = new Set<Promise<void>>();
  private done = false;

  /** Feeds the next bytes; they are copied before this returns, so the caller may reuse `buf`. */
  update(buf: Uint8Array): Promise<void> {
    if (this.done) return Promise.reject(new Error('BatchDigest.update after finish'));
    const p: Promise<void> = native.chainUpdate(this.handle, buf).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    p.catch(() => undefined);
    return p;
  }

  /** The 32-byte digest of everything fed, once every update has been digested. Call once. */
  async finish(): Promise<Buffer> {
    if (this.done) throw new Error('BatchDigest.finish called twice');
    this.done = true;
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    return native.digestFinish(this.handle);
  }
}
