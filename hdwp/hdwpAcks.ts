/**
 * The acknowledgements an HdwpClient (hdwp/hdwpClient.ts) waits for: the server's eob / bbn echoes and
 * its refusals of single batches, matched to the calls waiting on them by batch id.
 */
import type { BatchID } from '../engine-rs/batchId';
import type { Frame } from '../engine-rs/hdwpFrame';
import type { HdwpStreamError } from './hdwpStreamError';

/** Refusals of batches nobody waits on yet, kept so a later `sendEob` learns of them. */
const MAX_REMEMBERED_REFUSALS = 1024;

interface AckWaiter {
  readonly kind: 'eob' | 'bbn';
  resolve(frame: Frame): void;
  reject(err: Error): void;
}

/** Calls waiting for the server's answer about a batch, oldest first per batch. */
export class AckWaiters {
  private readonly waiters = new Map<string, AckWaiter[]>();
  private readonly refusals = new Map<string, HdwpStreamError>();

  /** Resolves with the server's echo of `kind` for `batchId`; rejects with its refusal of the batch (even one that came first). */
  waitFor(kind: 'eob' | 'bbn', batchId: BatchID): Promise<Frame> {
    const key = batchId.toHex();
    const refused = this.refusals.get(key);
    if (refused) {
      this.refusals.delete(key);
      return Promise.reject(refused);
    }
    return new Promise<Frame>((resolve, reject) => {
      const list = this.waiters.get(key) ?? [];
      list.push({ kind, resolve, reject });
      this.waiters.set(key, list);
    });
  }

  /** The server echoed `f`: the oldest waiter of its kind for its batch resolves with it. */
  acknowledge(f: Frame & { kind: 'eob' | 'bbn' }): void {
    this.settle(f.batchId, f.kind, (w) => w.resolve(f));
  }

  /** The server refused one batch: its oldest waiter rejects with `err`, or a later `waitFor` will. */
  refuse(batchId: BatchID, err: HdwpStreamError): void {
    if (this.settle(batchId, undefined, (w) => w.reject(err))) return;
    this.refusals.set(batchId.toHex(), err);
    if (this.refusals.size > MAX_REMEMBERED_REFUSALS) this.refusals.delete(this.refusals.keys().next().value as string);
  }

  /** The stream failed: every waiter rejects with `err`. */
  rejectAll(err: Error): void {
    for (const list of this.waiters.values()) for (const w of list) w.reject(err);
    this.waiters.clear();
  }

  /** Settles the oldest waiter for `batchId` (of `kind`, or any kind); false when none waits. */
  private settle(batchId: BatchID, kind: 'eob' | 'bbn' | undefined, act: (w: AckWaiter) => void): boolean {
    const key = batchId.toHex();
    const list = this.waiters.get(key);
    const i = list ? list.findIndex((w) => kind === undefined || w.kind === kind) : -1;
    if (!list || i < 0) return false;
    const [w] = list.splice(i, 1);
    if (list.length === 0) this.waiters.delete(key);
    act(w);
    return true;
  }
}
