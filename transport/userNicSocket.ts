/**
 * One TCP connection of a user-space NIC (transport/userSpaceNic.ts) as a Node stream, so the
 * HDWP server and client, and TLS over them, treat it as they treat a kernel socket.
 *
 * Flow control both ways: a write's callback runs once the NIC's TCP stack has taken its bytes
 * (as a kernel socket's does once the kernel has), so `write()` returning false and `drain`
 * behave as usual; when the reader stops taking data, the connection is paused on the NIC and its
 * receive window closes.
 */
import { Duplex } from 'node:stream';

/** What a socket asks of its NIC. */
export interface UserNicLink {
  write(id: number, bytes: Uint8Array): void;
  control(id: number, what: 'end' | 'abort' | 'pause' | 'resume'): void;
}

/** A connection reset or refused, with a kernel socket's error code. */
export class UserNicSocketError extends Error {
  override readonly name = 'UserNicSocketError';
  /** ECONNRESET or ECONNREFUSED, as a kernel socket reports them. */
  readonly code: 'ECONNRESET' | 'ECONNREFUSED';
  constructor(message: string, code: 'ECONNRESET' | 'ECONNREFUSED') {
    super(message);
    this.code = code;
  }
}

/** A TCP connection of a user-space NIC, as a Duplex with the parts of `net.Socket` HD uses. */
export class UserNicSocket extends Duplex {
  /** The peer's address and port (for an outgoing connection, the ones connected to). */
  remoteAddress: string | undefined;
  remotePort: number | undefined;
  /** True until an outgoing connection is established. */
  connecting: boolean;
  private readonly unsent: { left: number; done: (err?: Error | null) => void }[] = [];
  private paused = false;
  private idleMs = 0;
  /** `end` was asked of the NIC. */
  private endSent = false;
  private idleTimer: NodeJS.Timeout | undefined;
  /** The connection is gone on the NIC (closed, reset, or aborted by us). */
  private gone = false;

  /** @internal made by the NIC for each connection */
  constructor(
    private readonly link: UserNicLink,
    /** The connection's id on its NIC. */
    readonly id: number,
    peer: { host: string; port: number },
    connecting: boolean,
  ) {
    super({ allowHalfOpen: false });
    this.remoteAddress = peer.host;
    this.remotePort = peer.port;
    this.connecting = connecting;
  }

  /** No Nagle delay to turn off: the NIC's stack sends what it is given at its next poll. */
  setNoDelay(): this {
    return this;
  }

  /** Keep-alives are always on in the NIC's stack (a silent peer is reset after 30 s). */
  setKeepAlive(): this {
    return this;
  }

  /**
   * As `net.Socket#setTimeout`: 'timeout' after `ms` without bytes in or out (0 turns it off);
   * the socket stays open.
   */
  setTimeout(ms: number, onTimeout?: () => void): this {
    if (onTimeout) this.once('timeout', onTimeout);
    this.idleMs = ms;
    this.touch();
    return this;
  }

  private touch(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = this.idleMs > 0 && !this.gone ? setTimeout(() => this.emit('timeout'), this.idleMs) : undefined;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.send(chunk, done);
  }

  override _writev(chunks: { chunk: Buffer }[], done: (err?: Error | null) => void): void {
    this.send(chunks.length === 1 ? chunks[0].chunk : Buffer.concat(chunks.map((c) => c.chunk)), done);
  }

  private send(bytes: Buffer, done: (err?: Error | null) => void): void {
    if (bytes.length === 0) return done();
    if (this.idleTimer) this.touch();
    this.link.write(this.id, bytes);
    this.unsent.push({ left: bytes.length, done });
  }

  override _final(done: (err?: Error | null) => void): void {
    if (!this.gone) this.link.control(this.id, 'end');
    this.endSent = true;
    done();
  }

  override _read(): void {
    if (this.paused && !this.gone) {
      this.paused = false;
      this.link.control(this.id, 'resume');
    }
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    clearTimeout(this.idleTimer);
    // A socket destroyed after its end was sent closes in order on the NIC (its last bytes may
    // still be on the way, and the peer's FIN to come); otherwise it is reset, as a kernel
    // socket destroyed with unsent data is.
    if (!this.gone && !(this.endSent && err === null)) this.link.control(this.id, 'abort');
    this.gone = true;
    // Writes the stack never took fail with the socket, as a kernel socket's do.
    for (const w of this.unsent.splice(0)) w.done(err ?? new UserNicSocketError('the connection was closed before this write was sent', 'ECONNRESET'));
    done(err);
  }

  /** @internal the NIC: the outgoing connection is established. */
  onConnected(): void {
    this.connecting = false;
    this.emit('connect');
  }

  /** @internal the NIC: bytes arrived. */
  onData(bytes: Buffer): void {
    if (this.idleTimer) this.touch();
    if (!this.push(bytes) && !this.paused && !this.gone) {
      this.paused = true;
      this.link.control(this.id, 'pause');
    }
  }

  /** @internal the NIC: the stack took `n` more bytes of the writes. */
  onSent(n: number): void {
    while (n > 0 && this.unsent.length > 0) {
      const w = this.unsent[0];
      const take = Math.min(n, w.left);
      w.left -= take;
      n -= take;
      if (w.left === 0) {
        this.unsent.shift();
        w.done();
      }
    }
  }

  /** @internal the NIC: the peer closed its side. */
  onEnded(): void {
    this.push(null);
  }

  /** @internal the NIC: the connection is gone; `error` when it did not close in order. */
  onClosed(error: string | undefined): void {
    this.gone = true;
    if (error !== undefined) {
      this.destroy(new UserNicSocketError(error, this.connecting ? 'ECONNREFUSED' : 'ECONNRESET'));
      return;
    }
    // Closed in order: nothing more comes or can be written. The socket goes once its reader has
    // seen the end, so 'end' comes before 'close' as on a kernel socket.
    this.push(null);
    if (this.readableEnded) this.destroy();
    else this.once('end', () => setImmediate(() => this.destroy()));
  }
}
