/**
 * The SCC's command port (COMMAND_PORT, 6986): the REST side of the Control Plane. It serves the one
 * route the reference fixes for an SCC: `POST /v1/query/stop`, retired, answering 410 Gone and
 * naming the gRPC method `CancelQuery` of the query dispatch service that replaced it. Registered
 * with the DMS, the port is HTTPS with mutual TLS like the rest of the Control Plane: a client
 * without a certificate of the DMS-CA (unrevoked, unexpired) fails the handshake. Without a DMS it
 * is plain HTTP.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { peerIdentity, serverTlsOptions } from '../../net/mtls';
import type { NodeIdentity } from '../../net/nodeIdentity';

/** The body of the 410 answer. */
export const QUERY_STOP_GONE = {
  error: 'gone',
  message: 'POST /v1/query/stop was retired; cancel a query with the gRPC method CancelQuery of the query dispatch service',
  replacement: 'CancelQuery',
} as const;

/** The command HTTP server of one SCC. */
export class CommandApi {
  private server: Server | undefined;

  /** @param opts bind address and port (0: a free one); `tls`: the SCC's DMS identity (HTTPS, mutual TLS) */
  constructor(private readonly opts: { readonly host: string; readonly port: number; readonly tls?: NodeIdentity }) {}

  /** Whether the port is HTTPS with mutual TLS. */
  get mutualTls(): boolean {
    return this.opts.tls !== undefined;
  }

  /** Starts serving; resolves with the bound address. */
  listen(): Promise<{ host: string; port: number }> {
    if (this.server) return Promise.reject(new Error('CommandApi.listen called twice'));
    const id = this.opts.tls;
    const server: Server = id ? createHttpsServer(serverTlsOptions(id.identity), (req, res) => this.handle(req, res)) : createServer((req, res) => this.handle(req, res));
    if (id) {
      // Every handshake is verified (rejectUnauthorized): the identity records who came, and who was refused.
      server.on('secureConnection', (socket: TLSSocket) => {
        const peer = peerIdentity(socket);
        if (peer) id.peerAccepted(peer, 'command');
      });
      server.on('tlsClientError', (err: Error) => id.peerRefused(`command port: ${err.message}`));
    }
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, this.opts.host, () => {
        server.off('error', reject);
        const a = server.address() as AddressInfo;
        resolve({ host: a.address, port: a.port });
      });
    });
  }

  /** Stops serving and closes open connections. */
  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    // The body is not needed by any route; drain it so keep-alive connections stay usable.
    req.resume();
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/v1/query/stop') {
      if (req.method === 'POST') return send(res, 410, QUERY_STOP_GONE);
      return send(res, 405, { error: 'method not allowed', message: `${path} takes POST` }, { allow: 'POST' });
    }
    send(res, 404, { error: 'not found', message: `no route ${req.method ?? 'GET'} ${path}` });
  }
}

function send(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
