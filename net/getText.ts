/**
 * One plain GET of a text answer from a node's HTTP(S) port, the way the Proxy's batch filters
 * (control/proxy/storageNodeFilters.ts) and the SCC's window resolution (nodes/scc/queryWindow.ts)
 * ask the Storage Nodes' observability routes: over https when TLS options are given (the caller's
 * agent, identity and server check), else plain http, under the caller's abort signal. The answer
 * comes back with its status whatever it is; only transport failures reject.
 */
import http from 'node:http';
import https from 'node:https';

/** Where the request goes: a host (a name, an IPv4 or a bare IPv6 address) and a port. */
export interface TextTarget {
  readonly host: string;
  readonly port: number;
}

/** An answer: the HTTP status (0 when none was read) and the body as UTF-8 text. */
export interface TextAnswer {
  readonly status: number;
  readonly text: string;
}

/** `GET <pathAndQuery>` on `target` as text, under `signal`: https with `tls`, else plain http. */
export function getText(target: TextTarget, pathAndQuery: string, signal: AbortSignal, tls?: https.RequestOptions): Promise<TextAnswer> {
  return new Promise((resolve, reject) => {
    const done = (res: http.IncomingMessage): void => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    };
    const common = { host: target.host, port: target.port, path: pathAndQuery, method: 'GET', signal };
    const req = tls ? https.request({ ...common, ...tls }, done) : http.request(common, done);
    req.on('error', reject);
    req.end();
  });
}
