/**
 * A byte-level PostgreSQL client for tests of the wire door: frontend messages built by hand (so
 * they can be wrong on purpose) and backend messages read back whole, with ErrorResponse fields.
 */
import net from 'node:net';
import type { Test } from 'uvu';
import { PROTOCOL_3 } from '../../sql/pgwire/frontend';
import { PgServer } from '../../sql/pgwire/pgServer';
import { memoryEngine } from './support';

/** A backend message: its type byte and body. */
export interface BackendMessage {
  readonly type: string;
  readonly body: Buffer;
}

/** Where a door under test listens (set once the suite's `before` has run). */
export interface TestDoor {
  readonly port: number;
}

/**
 * hd_sql's wire door over memoryEngine(rows) on an ephemeral 127.0.0.1 port, listening for the
 * lifetime of suite `s` and closed (with its engine) after it. `password` turns on SCRAM.
 */
export function serveDoor(s: Test, rows: number, options: { readonly password?: string } = {}): TestDoor {
  const { engine, local } = memoryEngine(rows);
  const server = new PgServer(engine, { host: '127.0.0.1', port: 0, ...options });
  const door = { port: 0 };
  s.before(async () => {
    door.port = (await server.listen()).port;
  });
  s.after(async () => {
    await server.close();
    await local.close();
  });
  return door;
}

/** The startup message with these parameters. */
export function startupMessage(params: Record<string, string>): Buffer {
  const body = Buffer.concat([Buffer.alloc(4), ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`)), Buffer.from([0])]);
  body.writeInt32BE(PROTOCOL_3, 0);
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  return Buffer.concat([len, body]);
}

/** A typed frontend message (`length` overrides the length field, to lie about it). */
export function typedMessage(code: string, body: Buffer, length = body.length + 4): Buffer {
  const h = Buffer.alloc(5);
  h.write(code, 0, 'latin1');
  h.writeInt32BE(length, 1);
  return Buffer.concat([h, body]);
}

/** A SASLInitialResponse body: mechanism, then the data with its length (null: length -1). */
export function saslInitial(mechanism: string, data: Buffer | string | null): Buffer {
  const d = data === null ? null : Buffer.from(data);
  const len = Buffer.alloc(4);
  len.writeInt32BE(d === null ? -1 : d.length);
  return typedMessage('p', Buffer.concat([Buffer.from(`${mechanism}\0`), len, ...(d ? [d] : [])]));
}

/** A SASLResponse: the raw data. */
export function saslResponse(data: string | Buffer): Buffer {
  return typedMessage('p', Buffer.from(data));
}

/** The fields of an ErrorResponse / NoticeResponse body by their one-letter codes. */
export function errorFieldsOf(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at] as number);
    const end = body.indexOf(0, at + 1);
    out[code] = body.toString('utf8', at + 1, end);
    at = end + 1;
  }
  return out;
}

/** One connection to the door. */
export class RawSession {
  private buf = Buffer.alloc(0);
  private closed = false;
  private wake: (() => void) | undefined;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (b: Buffer) => {
      this.buf = Buffer.concat([this.buf, b]);
      this.wake?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    socket.on('error', () => undefined);
  }

  /** Connects to 127.0.0.1:port. */
  static open(port: number): Promise<RawSession> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(new RawSession(s)));
      s.once('error', reject);
    });
  }

  /** Writes bytes as they are. */
  send(...bufs: Buffer[]): void {
    if (!this.socket.destroyed) this.socket.write(Buffer.concat(bufs));
  }

  /** The next whole backend message, or 'closed' when the server closed first. */
  async next(): Promise<BackendMessage | 'closed'> {
    for (;;) {
      if (this.buf.length >= 5) {
        const len = this.buf.readInt32BE(1);
        if (this.buf.length >= 1 + len) {
          const m = { type: String.fromCharCode(this.buf[0] as number), body: this.buf.subarray(5, 1 + len) };
          this.buf = this.buf.subarray(1 + len);
          return m;
        }
      }
      if (this.closed) return 'closed';
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }

  /** Reads until a message of `type` (returned) or the close ('closed'). */
  async until(type: string): Promise<BackendMessage | 'closed'> {
    for (;;) {
      const m = await this.next();
      if (m === 'closed' || m.type === type) return m;
    }
  }

  /** Resolves once the server has closed the connection. */
  async closedByServer(): Promise<boolean> {
    while ((await this.next()) !== 'closed');
    return true;
  }

  /** Ends our side of the connection (the server then closes its side too). */
  finish(): void {
    this.socket.end();
  }

  /** Closes our side. */
  end(): void {
    this.socket.destroy();
  }
}
