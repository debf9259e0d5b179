/**
 * TLS sessions remembered per destination, so the next connection to the same listener resumes
 * its session instead of a full handshake: no certificate exchange and no RSA private-key
 * operation on either side (about 5 ms with RSA-2048 keys on our machine, 12 ms with RSA-4096).
 * For connections opened once per query — a Storage Node's result stream to a client listening
 * with mutual TLS, the SCC's notices — that handshake was most of a small query's time.
 *
 * A resumed session carries the certificates of the handshake that made it: the listener does not
 * check them against its revocation list again. Sessions live as long as the server's ticket
 * lifetime (Node's default: 300 s), which bounds how long a revoked certificate can still resume.
 * The key includes the certificate presented, so a renewed certificate starts a fresh handshake.
 */
import { BoundedMap } from './boundedMap';
import tls from 'node:tls';

/** Default destinations remembered. */
const DEFAULT_MAX_SESSIONS = 256;

/** Remembered TLS sessions by destination; see the module doc. */
export class TlsSessionCache {
  private readonly sessions: BoundedMap<string, Buffer>;
  private counts = { resumed: 0, full: 0 };

  /** @param maxSessions destinations remembered at most (the least recently stored dropped first) */
  constructor(maxSessions = DEFAULT_MAX_SESSIONS) {
    this.sessions = new BoundedMap(maxSessions);
  }

  /** Handshakes so far that resumed a session, and full ones. */
  get stats(): { resumed: number; full: number; sessions: number } {
    return { ...this.counts, sessions: this.sessions.size };
  }

  /** `tls.connect` to `options.host:port`, resuming a session remembered for that destination and certificate. */
  connect(options: tls.ConnectionOptions & { host: string; port: number }): tls.TLSSocket {
    const key = `${options.host}|${options.port}|${certKey(options.cert)}`;
    const session = this.sessions.get(key);
    const socket = tls.connect({ ...options, ...(session && { session }) });
    socket.once('secureConnect', () => {
      if (socket.isSessionReused()) this.counts.resumed++;
      else this.counts.full++;
    });
    // TLS 1.3 sends tickets after the handshake, possibly more than one: keep the latest.
    socket.on('session', (s: Buffer) => void this.sessions.set(key, s));
    return socket;
  }
}

/** A stable text of the certificate a TLS client presents (for keys of cached connections and sessions); '' for none. */
export function certKey(cert: tls.ConnectionOptions['cert']): string {
  if (cert === undefined) return '';
  if (typeof cert === 'string') return cert;
  if (Buffer.isBuffer(cert)) return cert.toString('latin1');
  return JSON.stringify(Array.isArray(cert) ? cert.map((c) => (typeof c === 'string' ? c : Buffer.from(c as Uint8Array).toString('latin1'))) : String(cert));
}
