/**
 * Helpers of the HDWP transport tests: a server on a free loopback port, a raw socket peer that
 * writes hand-made bytes and records what comes back, and small waiting tools. Real sockets only.
 */
import net from 'node:net';
import { BatchID, FrameDecoder, encodeFrame, generateBatchIdNumber } from '../../index';
import type { Frame, HdwpRole } from '../../index';
import { HdwpServer, type ConnectionHandler, type HdwpConnection, type HdwpServerOptions } from '../../hdwp/hdwpServer';

/** A batch id per small number. */
export const batch = (n: number): BatchID => generateBatchIdNumber(n);

/** Records of `size` bytes, `count` of them, with recognisable bytes. */
export function recordsOf(size: number, count: number, seed = 0): Buffer {
  const b = Buffer.alloc(size * count);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + seed) & 0xff;
  return b;
}

/** Resolves once `cond()` holds, checking after each turn of the event loop (no time limits here: uvu's run ends a hung test). */
export async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 1));
}

/** A promise opened from outside. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** What a test server's connections did. */
export interface Seen {
  conns: HdwpConnection[];
  frames: Map<number, Frame[]>;
  closes: Map<number, Error | undefined>;
}

/** Starts a server on 127.0.0.1 port 0; `handle` (default: keep frames, ack eob/bbn by echo) runs per frame. */
export async function startServer(
  opts: Partial<Omit<HdwpServerOptions, 'onConnection'>> & { handle?: (conn: HdwpConnection, f: Frame) => Promise<void> | void } = {},
): Promise<{ server: HdwpServer; port: number; seen: Seen }> {
  const seen: Seen = { conns: [], frames: new Map(), closes: new Map() };
  const echo = (conn: HdwpConnection, f: Frame): Promise<void> | void => (f.kind === 'eob' || f.kind === 'bbn' ? conn.send(f) : undefined);
  const handle = opts.handle ?? echo;
  const server = new HdwpServer({
    role: 'storageNode',
    ...opts,
    host: '127.0.0.1',
    port: 0,
    onConnection: (conn): ConnectionHandler => {
      seen.conns.push(conn);
      const frames: Frame[] = [];
      seen.frames.set(conn.id, frames);
      return {
        onFrame: (f) => {
          frames.push(f);
          return handle(conn, f);
        },
        onClose: (err) => seen.closes.set(conn.id, err),
      };
    },
  });
  const { port } = await server.listen();
  return { server, port, seen };
}

/** A hello frame's bytes. */
export function helloBytes(role: HdwpRole, datasetId: string, recordSize: number): Buffer {
  return encodeFrame({ kind: 'hello', version: 1, role, datasetId, recordSize });
}

/** A socket writing raw bytes and decoding what the server answers. */
export class RawPeer {
  readonly frames: Frame[] = [];
  readonly closed: Promise<void>;
  private readonly decoder = new FrameDecoder();

  private constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (c: Buffer) => this.frames.push(...this.decoder.push(c)));
    socket.on('error', () => undefined);
    this.closed = new Promise((r) => socket.once('close', () => r()));
  }

  /** Connects to the test server. */
  static connect(port: number): Promise<RawPeer> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => resolve(new RawPeer(s)));
      s.once('error', reject);
    });
  }

  /** Writes bytes and waits until they left. */
  write(b: Buffer): Promise<void> {
    return new Promise((r) => this.socket.write(b, () => r()));
  }

  /** The first frame of `kind`, waiting for it. */
  async next(kind: Frame['kind']): Promise<Frame> {
    await until(() => this.frames.some((f) => f.kind === kind) || this.socket.destroyed);
    const f = this.frames.find((x) => x.kind === kind);
    if (!f) throw new Error(`connection closed without a ${kind} frame; got ${this.frames.map((x) => x.kind).join(', ')}`);
    return f;
  }

  /** Waits for the error frame and the close that must follow it. */
  async errorAndClose(): Promise<{ code: number; message: string }> {
    await this.closed;
    const f = this.frames.find((x) => x.kind === 'error');
    if (!f || f.kind !== 'error') throw new Error(`closed without an error frame; got ${this.frames.map((x) => x.kind).join(', ') || 'nothing'}`);
    return { code: f.code, message: f.message };
  }
}
