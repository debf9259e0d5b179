/**
 * The SCC's command port (COMMAND_PORT, 6986): the REST side of the Control Plane. Registration and
 * configuration come with the control plane issue; today it serves the one route the reference
 * fixes for an SCC: `POST /v1/query/stop`, retired, answering 410 Gone and naming the gRPC method
 * `CancelQuery` of the query dispatch service that replaced it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The body of the 410 answer. */
export const QUERY_STOP_GONE = {
  error: 'gone',
  message: 'POST /v1/query/stop was retired; cancel a query with the gRPC method CancelQuery of the query dispatch service',
  replacement: 'CancelQuery',
} as const;

/** The command HTTP server of one SCC. */
export class CommandApi {
  private server: Server | undefined;

  /** @param opts bind address and port (0: a free one) */
  constructor(private readonly opts: { readonly host: string; readonly port: number }) {}

  /** Starts serving; resolves with the bound address. */
  listen(): Promise<{ host: string; port: number }> {
    if (this.server) return Promise.reject(new Error('CommandApi.listen called twice'));
    const server = createServer((req, res) => this.handle(req, res));
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
