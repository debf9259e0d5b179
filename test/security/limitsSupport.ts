/**
 * What the resource-limit tests share: a raw PostgreSQL wire connection that can stop reading (a
 * slow reader), Flight SQL calls with an authorization header, a QueryDispatch server that accepts
 * reads and never delivers a batch (a read that waits for the Storage Nodes), and /metrics values.
 */
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { queryDispatchService, type DispatchReply } from '../../query/dispatch/dispatchService';
import { CANCEL_REQUEST } from '../../sql/pgwire/frontend';
import { errorFieldsOf, type BackendMessage } from '../sql/pgRawSession';
import type { Status } from './doorSupport';

/** A raw connection to the wire door: bytes out, whole backend messages in; `pause` stops reading. */
export class PgSocket {
  private chunks: Buffer[] = [];
  private held = 0;
  private closed = false;
  private wake: (() => void) | undefined;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (b: Buffer) => {
      this.chunks.push(b);
      this.held += b.length;
      this.wake?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    socket.on('error', () => undefined);
  }

  /** Connects to 127.0.0.1:port. */
  static open(port: number): Promise<PgSocket> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(new PgSocket(s)));
      s.once('error', reject);
    });
  }

  /** Writes bytes as they are (false once the connection is gone). */
  send(b: Buffer): boolean {
    if (this.socket.destroyed || !this.socket.writable) return false;
    this.socket.write(b);
    return true;
  }

  /** The next whole backend message, or 'closed'. */
  async next(): Promise<BackendMessage | 'closed'> {
    for (;;) {
      if (this.held >= 5) {
        const buf = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
        this.chunks = [buf];
        const len = buf.readInt32BE(1);
        if (buf.length >= 1 + len) {
          const m = { type: String.fromCharCode(buf[0] as number), body: buf.subarray(5, 1 + len) };
          const rest = buf.subarray(1 + len);
          this.chunks = rest.length > 0 ? [rest] : [];
          this.held = rest.length;
          return m;
        }
      }
      if (this.closed) return 'closed';
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }

  /** Reads until a message of one of `types` (returned) or the close. */
  async until(...types: string[]): Promise<BackendMessage | 'closed'> {
    for (;;) {
      const m = await this.next();
      if (m === 'closed' || types.includes(m.type)) return m;
    }
  }

  /**
   * The ErrorResponse fields of the next 'E', or undefined when the connection closed without one
   * (or none came within `guardMs`: the connection is then dropped, so a test of the code before
   * the fix ends instead of hanging).
   */
  async error(guardMs = 30_000): Promise<Record<string, string> | undefined> {
    const guard = setTimeout(() => this.socket.destroy(), guardMs);
    try {
      const m = await this.until('E');
      return m === 'closed' ? undefined : errorFieldsOf(m.body);
    } finally {
      clearTimeout(guard);
    }
  }

  /**
   * True once the server has closed the connection; false if it is still open after `guardMs` (a
   * guard so a test of the code before the fix ends, not a bound on how fast the close comes).
   */
  async closedBy(guardMs: number): Promise<boolean> {
    const guard = setTimeout(() => this.wake?.(), guardMs);
    const end = Date.now() + guardMs;
    try {
      for (;;) {
        if (this.closed) return true;
        if (Date.now() >= end) return false;
        await new Promise<void>((r) => (this.wake = r));
        this.wake = undefined;
        this.chunks = [];
        this.held = 0;
      }
    } finally {
      clearTimeout(guard);
    }
  }

  /** Stops reading (the kernel buffers fill, then the server's socket backs up). */
  pause(): void {
    this.socket.pause();
  }

  /** Reads again. */
  resume(): void {
    this.socket.resume();
  }

  end(): void {
    this.socket.destroy();
  }
}

/** The CancelRequest packet for a backend's process id and secret key. */
export function cancelRequest(pid: number, secret: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeInt32BE(16, 0);
  b.writeInt32BE(CANCEL_REQUEST, 4);
  b.writeInt32BE(pid, 8);
  b.writeInt32BE(secret, 12);
  return b;
}

/** Sends a CancelRequest on a connection of its own and waits until the server has closed it. */
export async function sendCancel(port: number, pid: number, secret: number): Promise<void> {
  const s = await PgSocket.open(port);
  s.send(cancelRequest(pid, secret));
  await s.closedBy(30_000);
}

/** A metric's value from a /metrics text (undefined when absent). */
export async function metric(port: number, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** A QueryDispatch server that accepts every read (one batch announced) and never delivers it; records cancels. */
export class SilentScc {
  readonly queries: number[] = [];
  readonly cancels: number[] = [];
  private readonly server = new grpc.Server();
  port = 0;

  async start(): Promise<this> {
    this.server.addService(queryDispatchService, {
      dispatch: (call: grpc.ServerUnaryCall<{ queryJson: string }, DispatchReply>, cb: grpc.sendUnaryData<DispatchReply>) => {
        const q = JSON.parse(call.request.queryJson) as { query_id: number; batch_ids: string[] };
        this.queries.push(q.query_id);
        cb(null, { queryId: q.query_id, batches: q.batch_ids.length, nodes: ['sn-silent'], missingBatchIds: [] });
      },
      cancelQuery: (call: grpc.ServerUnaryCall<{ queryId: number; token: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.cancels.push(call.request.queryId);
        cb(null, { cancelled: true, nodes: 1 });
      },
    });
    this.port = await new Promise<number>((resolve, reject) => this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    return this;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.tryShutdown(() => r()));
  }
}

type Raw = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

const withAuth = (authorization: string): grpc.Metadata => {
  const md = new grpc.Metadata();
  md.set('authorization', authorization);
  return md;
};

/** A server-streaming call (DoAction) with `authorization`: its messages, or the error. */
export function streamWith(c: Raw, name: 'DoAction', req: Buffer, authorization: string): Promise<{ messages: Buffer[]; err?: Status }> {
  const call = (c[name] as (r: Buffer, m: grpc.Metadata) => grpc.ClientReadableStream<Buffer>).call(c, req, withAuth(authorization));
  return new Promise((resolve) => {
    const messages: Buffer[] = [];
    call.on('data', (b: Buffer) => messages.push(b));
    call.on('error', (e: Status) => resolve({ messages, err: e }));
    call.on('end', () => resolve({ messages }));
  });
}

/** DoPut with `authorization`: writes `reqs`, half-closes; the answers or the error. */
export function putWith(c: Raw, reqs: Buffer[], authorization: string): Promise<{ messages: Buffer[]; err?: Status }> {
  const call = (c['DoPut'] as (m: grpc.Metadata) => grpc.ClientDuplexStream<Buffer, Buffer>).call(c, withAuth(authorization));
  const done = new Promise<{ messages: Buffer[]; err?: Status }>((resolve) => {
    const messages: Buffer[] = [];
    call.on('data', (b: Buffer) => messages.push(b));
    call.on('error', (e: Status) => resolve({ messages, err: e }));
    call.on('end', () => resolve({ messages }));
  });
  for (const r of reqs) call.write(r);
  call.end();
  return done;
}
