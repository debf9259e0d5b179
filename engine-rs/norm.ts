/**
 * NORM multicast (NRL's libnorm, loaded at run time by the addon; docs/replication-norm.md): a
 * {@link NormSender} writing one ordered byte stream to a multicast group, and a
 * {@link NormReceiver} handing that stream's bytes to a callback. Loss is repaired by NORM (NACKs);
 * what a receiver loses beyond the sender's repair window is reported as a `break`.
 */
import { native, type NormHandle } from './native';

/** Where a NORM session meets. */
export interface NormSessionOptions {
  /** Multicast group (or unicast address). */
  readonly address: string;
  /** UDP port; the reference's is 6988. */
  readonly port: number;
  /** This node's id in the session, unique among its members (1..2^32-2). */
  readonly nodeId: number;
  /** Interface the group is joined and sent on; empty: the default route's. */
  readonly interface?: string;
  /** Receive this host's own multicast (several nodes on one host); default true. */
  readonly loopback?: boolean;
}

/** A sender's options. */
export interface NormSenderOptions extends NormSessionOptions {
  /** NORM segment (datagram payload) bytes: the HDWP MTU mode's (1200 Standard, 8500 Jumbo). */
  readonly segmentSize: number;
  /** Fixed transmit rate in bits/s; 0: NORM's congestion control. */
  readonly txRateBps: number;
  /** Bytes kept for repairs (a receiver further behind loses data: a `break`); default 64 MiB. */
  readonly bufferBytes?: number;
  /** Initial group round-trip estimate in seconds; default 0.01 (a LAN; NORM's own 0.5 s stalls each repair for seconds). */
  readonly grttEstimate?: number;
}

/** A receiver's options. */
export interface NormReceiverOptions extends NormSessionOptions {
  /** Repair buffer bytes per sender; default 8 MiB. */
  readonly bufferBytes?: number;
  /** Socket receive buffer bytes (the kernel may cap it); default 8 MiB. */
  readonly rxSocketBuffer?: number;
}

/** The NORM library's version, or throws a clear error saying to install libnorm1. */
export function normVersion(): string {
  return native.normVersion();
}

/** A NORM sender with one stream: {@link write} queues bytes, messages end with {@link endMessage}. */
export class NormSender {
  private readonly handle: NormHandle;
  private readonly queue: { buf: Buffer; active: boolean; done: () => void; fail: (err: Error) => void }[] = [];
  private closed = false;
  /** Bytes handed to NORM so far. */
  bytesSent = 0;
  /** Send errors NORM reported (e.g. no route to the group). */
  sendErrors = 0;

  /** Opens the session and its stream; throws (ERR_NORM) when libnorm is missing or the session cannot open. */
  constructor(readonly opts: NormSenderOptions) {
    this.handle = native.normSenderOpen(
      { ...opts, bufferBytes: opts.bufferBytes ?? 64 << 20, streamBytes: opts.bufferBytes ?? 64 << 20 },
      (kind) => {
        if (kind === 'vacancy') this.pump();
        else if (kind === 'send-error') this.sendErrors++;
      },
    );
  }

  /** Bytes waiting for room in NORM's stream buffer. */
  get queuedBytes(): number {
    return this.queue.reduce((n, q) => n + q.buf.length, 0);
  }

  /**
   * Writes one message (ended with an end-of-message mark, where a late or broken receiver
   * resumes): resolves once NORM has taken all of it, so awaiting it bounds what waits here.
   * `activeFlush`: the sender repeats flush commands after it, so receivers ask for a lost tail at
   * once (use it where the sender then waits for the receivers, e.g. after a batch's eob).
   */
  writeMessage(buf: Buffer, activeFlush = false): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the NORM sender is closed'));
    return new Promise<void>((done, fail) => {
      this.queue.push({ buf, active: activeFlush, done, fail });
      if (this.queue.length === 1) this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      const head = this.queue[0];
      const n = native.normWrite(this.handle, head.buf);
      this.bytesSent += n;
      if (n < head.buf.length) {
        head.buf = head.buf.subarray(n);
        return; // the rest when NORM reports vacancy
      }
      native.normEndMessage(this.handle, head.active);
      this.queue.shift();
      head.done();
    }
  }

  /** Stops the sender; writes still waiting fail. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    native.normClose(this.handle);
    for (const q of this.queue.splice(0)) q.fail(new Error('the NORM sender closed'));
  }
}

/** What a {@link NormReceiver} reports besides bytes. */
export type NormReceiverEvent = 'break' | 'sender' | 'aborted' | 'completed';

/** A NORM receiver: every byte of the session's stream, in order, to `onData`. */
export class NormReceiver {
  private readonly handle: NormHandle;
  private closed = false;
  /** Bytes received. */
  bytesReceived = 0;
  /** Times data was lost beyond repair. */
  breaks = 0;

  /** Joins the group; throws (ERR_NORM) when libnorm is missing or the session cannot open. */
  constructor(opts: NormReceiverOptions, onData: (bytes: Buffer) => void, onEvent: (e: NormReceiverEvent) => void = () => undefined) {
    this.handle = native.normReceiverOpen({ ...opts, bufferBytes: opts.bufferBytes ?? 8 << 20, rxSocketBuffer: opts.rxSocketBuffer ?? 8 << 20 }, (kind, data) => {
      if (this.closed) return;
      if (kind === 'data' && data) {
        this.bytesReceived += data.length;
        onData(data);
      } else if (kind === 'break' || kind === 'sender' || kind === 'aborted' || kind === 'completed') {
        if (kind === 'break') this.breaks++;
        onEvent(kind);
      }
    });
  }

  /** Leaves the group and stops. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    native.normClose(this.handle);
  }
}
