/**
 * A small HTTPS JSON client for control-plane calls (registration, renewal, policy pushes, topology
 * reads): verifies the server by a CA bundle, its name and, when asked, its certificate's role (a
 * node calling the DMS expects `dms`, the DMS calling a Proxy `proxy`: any certificate of the same
 * CA is not enough), optionally presents a client certificate, and bounds every call by a timeout.
 * Answers come back with their status; only transport failures throw.
 */
import https from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { peerRoleProblem } from './peerRole';

/** TLS material of a call. */
export interface ClientTls {
  /** CA bundle the server's certificate must chain to. */
  readonly ca: string | readonly string[];
  /** Client certificate and key for mutual TLS. */
  readonly cert?: string;
  readonly key?: string;
  /** Revocation list checked against the server's certificate. */
  readonly crl?: string;
  /** Name the server's certificate must carry (default: the URL's host). */
  readonly servername?: string;
  /** Roles (the certificate's OU) the server's certificate may have; absent: not checked. */
  readonly roles?: readonly string[];
}

/** The role the DMS's own certificate carries (OU=dms): what every node's calls to the DMS expect. */
export const DMS_PEER_ROLES: readonly string[] = ['dms'];

/** An answer. */
export interface JsonAnswer {
  readonly status: number;
  /** Parsed JSON, or the text when the body is not JSON. */
  readonly body: unknown;
}

/** A request could not be made or answered (connection refused, TLS refused, timeout). */
export class TransportError extends Error {
  override readonly name = 'TransportError';
}

/** Sends `method url` with an optional JSON body; resolves with the status and parsed body. */
export function requestJson(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, tls: ClientTls, body?: unknown, opts: { timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<JsonAnswer> {
  const u = new URL(url);
  if (u.protocol !== 'https:') return Promise.reject(new TransportError(`${url}: only https:// URLs are used on the control plane`));
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        method,
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port === '' ? 443 : Number(u.port),
        path: `${u.pathname}${u.search}`,
        ca: tls.ca as string | string[],
        cert: tls.cert,
        key: tls.key,
        crl: tls.crl,
        servername: tls.servername && !/^[\d.]+$|:/.test(tls.servername) ? tls.servername : undefined,
        ...((tls.servername || tls.roles) && {
          checkServerIdentity: (host: string, cert: PeerCertificate) => checkServerIdentity(tls.servername ?? host, cert) ?? (tls.roles ? peerRoleProblem(cert, tls.roles) : undefined),
        }),
        agent: false,
        headers: {
          accept: 'application/json',
          ...(payload && { 'content-type': 'application/json', 'content-length': String(payload.length) }),
          ...opts.headers,
        },
        timeout: opts.timeoutMs ?? 10_000,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            // Not JSON (a PEM route); the text is the body.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', (err) => reject(new TransportError(`${method} ${url}: ${err.message}`)));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs ?? 10_000} ms`)));
    req.on('error', (err) => reject(new TransportError(`${method} ${url}: ${err.message}`)));
    req.end(payload);
  });
}
