/**
 * The HDWP ingest server of SCCs and Storage Nodes (docs/ingest-protocol.md): listens on TCP (TLS
 * once the control plane supplies certificates), and runs one {@link HdwpConnection} per accepted
 * socket. Connections are independent: one that breaks the protocol is closed alone.
 */
import net from 'node:net';
import tls from 'node:tls';
import { HDWP_DEFAULT_MAX_PAYLOAD, HDWP_MAX_PAYLOAD_CEILING } from '../engine-rs/hdwpFrame';
import type { HdwpRole } from '../engine-rs/hdwpFrame';
import { HdwpConnection, type ConnectionHandler, type ConnectionSettings } from './hdwpConnection';
import { HdwpStreamError, STREAM_ERROR_CODES } from './hdwpStreamError';
import { listenOnNic } from '../transport/processNic';
import type { UserNicListener } from '../transport/userSpaceNic';

export { HdwpConnection, recordsFrameCost } from './hdwpConnection';
export type { ConnectionHandler } from './hdwpConnection';

/** Default credit window: 8 MiB of records frames in flight per connection. */
export const DEFAULT_CREDIT_WINDOW = 8 * 1024 * 1024;
/** Smallest credit window a server may grant (room for a few frames of small records). */
export const MIN_CREDIT_WINDOW = 4096;
/** Default time a new connection has to send hello. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** The roles a server answers hello with: an SCC, a Storage Node, or a query client's result listener. */
export type HdwpServerRole = 'scc' | 'storageNode' | 'queryClient';

/** Which client roles each server role accepts by default. */
export const DEFAULT_ACCEPTED_ROLES: Readonly<Record<HdwpServerRole, readonly HdwpRole[]>> = {
  scc: ['ingestClient', 'ingester'],
  storageNode: ['scc'],
  // Result streams come from Storage Nodes, and from the SCC for batches it gives up on (docs/query.md).
  queryClient: ['storageNode', 'scc'],
};

/** Options of {@link HdwpServer}. */
export interface HdwpServerOptions {
  /** Address to bind; default `0.0.0.0`. */
  readonly host?: string;
  /** Port to bind; 0 picks a free one (see `listen()`'s result). */
  readonly port: number;
  /** The role this server answers hello with. */
  readonly role: HdwpServerRole;
  /** Client roles accepted; default {@link DEFAULT_ACCEPTED_ROLES} of `role`. */
  readonly roles?: readonly HdwpRole[];
  /** Records frame bytes a client may have in flight; default {@link DEFAULT_CREDIT_WINDOW}. */
  readonly creditWindow?: number;
  /** Largest frame payload accepted; default 16 MiB. */
  readonly maxPayload?: number;
  /** Time to receive hello, 0 for none; default {@link DEFAULT_HANDSHAKE_TIMEOUT_MS}. */
  readonly handshakeTimeoutMs?: number;
  /** Close connections with nothing in flight after this long without traffic; default 0 (never). */
  readonly idleTimeoutMs?: number;
  /** Hand query and cancel frames to the handler (a Storage Node's query listener); default false: they break the stream. */
  readonly acceptsQueries?: boolean;
  /**
   * Result streams may be reused (a result listener, docs/hdwp.md "Reused result streams"): the
   * hello reply carries the query block and a later hello starts the next query's results on the
   * same connection; default false (a second hello breaks the stream).
   */
  readonly rebind?: boolean;
  /** TLS server options; when given the server speaks TLS (certificates come from the control plane). */
  readonly tls?: tls.TlsOptions;
  /**
   * With `tls`: checks each verified peer before hello (its certificate's role, say); a returned
   * reason closes the socket at once (net/nodeLinks.ts).
   */
  readonly acceptPeer?: (socket: tls.TLSSocket) => string | undefined;
  /** With `tls`: told of every connection refused in the TLS handshake (no certificate of our CA, revoked, plain TCP). */
  readonly onTlsRefused?: (err: Error, socket: tls.TLSSocket) => void;
  /** Builds the handler of a connection whose hello is valid; throwing refuses it (see ConnectionSettings). */
  onConnection(conn: HdwpConnection): ConnectionHandler;
  /** Told of every connection that ends with an error (a broken peer, a timeout, shutdown), hello accepted or not. */
  onError?(conn: HdwpConnection, err: HdwpStreamError): void;
}

function checkInt(name: string, v: number, min: number, max: number): number {
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new RangeError(`${name} must be an integer ${min}..${max}, got ${v}`);
  return v;
}

/** The one place sockets come from, so TLS is a matter of options. */
function createListener(tlsOptions: tls.TlsOptions | undefined, onSocket: (s: net.Socket) => void): net.Server {
  return tlsOptions ? tls.createServer(tlsOptions, onSocket) : net.createServer(onSocket);
}

/**
 * Accepts HDWP ingest streams. Each connection must open with hello from an accepted role; the
 * server answers with its own hello and the initial credit, then passes records / eob / bbn frames
 * to the handler `onConnection` returned, in order and one at a time.
 *
 * @example
 * const server = new HdwpServer({ port: 6987, role: 'storageNode', onConnection: (conn) => ({
 *   onFrame: async (frame) => { await store(frame); if (frame.kind === 'eob') await conn.send(frame); },
 * }) });
 * const { port } = await server.listen();
 */
export class HdwpServer {
  private readonly settings: ConnectionSettings;
  private readonly server: net.Server;
  private readonly open = new Set<HdwpConnection>();
  private nextId = 1;
  private closing: Promise<void> | undefined;
  private nicListener: UserNicListener | undefined;

  /** Validates the options; nothing listens until {@link listen}. */
  constructor(private readonly opts: HdwpServerOptions) {
    checkInt('port', opts.port, 0, 65535);
    const roles = opts.roles ?? DEFAULT_ACCEPTED_ROLES[opts.role];
    if (!roles) throw new RangeError(`role must be 'scc', 'storageNode' or 'queryClient', got ${String(opts.role)}`);
    this.settings = {
      role: opts.role,
      roles,
      creditWindow: checkInt('creditWindow', opts.creditWindow ?? DEFAULT_CREDIT_WINDOW, MIN_CREDIT_WINDOW, Number.MAX_SAFE_INTEGER),
      maxPayload: checkInt('maxPayload', opts.maxPayload ?? HDWP_DEFAULT_MAX_PAYLOAD, 1, HDWP_MAX_PAYLOAD_CEILING),
      handshakeTimeoutMs: checkInt('handshakeTimeoutMs', opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, 0, 2 ** 31 - 1),
      idleTimeoutMs: checkInt('idleTimeoutMs', opts.idleTimeoutMs ?? 0, 0, 2 ** 31 - 1),
      acceptsQueries: opts.acceptsQueries ?? false,
      rebind: opts.rebind ?? false,
      onConnection: opts.onConnection,
      onError: opts.onError,
    };
    this.server = createListener(opts.tls, (socket) => this.accept(socket));
    const refused = opts.onTlsRefused;
    if (opts.tls && refused) this.server.on('tlsClientError', (err: Error, socket: tls.TLSSocket) => refused(err, socket));
  }

  /**
   * Replaces the TLS material (a renewed certificate) of a TLS server: new connections use it,
   * open ones keep theirs. Throws on a plain server.
   */
  setSecureContext(options: tls.SecureContextOptions): void {
    if (!(this.server instanceof tls.Server)) throw new Error('setSecureContext: this server does not use TLS');
    this.server.setSecureContext(options);
  }

  /** Open connections. */
  get connections(): number {
    return this.open.size;
  }

  /**
   * Starts listening; resolves with the bound address (the real port when `port` was 0). On the
   * address of this process's user-space NIC, it listens there (transport/processNic.ts): the
   * NIC's connections go through the same TLS and HDWP as the kernel's.
   */
  listen(): Promise<{ host: string; port: number }> {
    // 'connection' is how a net.Server (or a tls.Server, which runs the handshake) takes a socket.
    try {
      this.nicListener = listenOnNic(this.opts.host, this.opts.port, (s) => this.server.emit('connection', s));
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (this.nicListener) return Promise.resolve({ host: this.nicListener.host, port: this.opts.port });
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.opts.port, this.opts.host ?? '0.0.0.0', () => {
        this.server.off('error', onError);
        const a = this.server.address() as net.AddressInfo;
        resolve({ host: a.address, port: a.port });
      });
    });
  }

  /**
   * Stops accepting, sends every open connection error 9 (shutting down) and closes it, and
   * resolves once every socket is closed. Frames not yet handled are dropped: their batches stay
   * open for the batch timeout to settle.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.nicListener?.close();
      const stopped = new Promise<void>((r) => (this.server.listening ? this.server.close(() => r()) : r()));
      const err = new HdwpStreamError('ERR_HDWP_CLOSED', `${this.settings.role} is shutting down`, { frameCode: STREAM_ERROR_CODES.shuttingDown });
      const done = [...this.open].map((c) => {
        c.close(err);
        return c.done;
      });
      void Promise.all([stopped, ...done]).then(() => resolve());
    });
    return this.closing;
  }

  private accept(socket: net.Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    if (this.opts.acceptPeer && socket instanceof tls.TLSSocket && this.opts.acceptPeer(socket) !== undefined) {
      socket.destroy();
      return;
    }
    const conn = new HdwpConnection(this.nextId++, socket, this.settings);
    this.open.add(conn);
    void conn.done.then(() => this.open.delete(conn));
  }
}
