/**
 * One port, plain HTTP and HTTPS: each connection is handed to the plain server, or — when its
 * first byte opens a TLS handshake (record type 0x16) — to the TLS server. So a node's observability
 * port keeps `/health` and `/metrics` plain for probes while serving routes that need the caller's
 * certificate (the Storage Node's batch filters) over mutual TLS on the same address.
 *
 * The TLS side gets a stream over the socket rather than the socket itself: a TLS server given a
 * net.Socket takes over its native handle, and the byte already read to decide would be lost.
 */
import type { Server as HttpServer } from 'node:http';
import type net from 'node:net';
import { Duplex } from 'node:stream';
import type { Server as TlsServer } from 'node:tls';

/** The first byte of a TLS handshake record. */
const TLS_HANDSHAKE = 0x16;

/** A duplex stream over `sock` that first yields `first` (the bytes read to sniff). */
function replaying(sock: net.Socket, first: Buffer): Duplex {
  const d = new Duplex({
    read() {
      sock.resume();
    },
    write(chunk: Buffer, encoding, cb) {
      sock.write(chunk, encoding, cb);
    },
    final(cb) {
      sock.end();
      cb();
    },
    destroy(err, cb) {
      sock.destroy(err ?? undefined);
      cb(err);
    },
  });
  d.push(first);
  sock.on('data', (c: Buffer) => {
    if (!d.push(c)) sock.pause();
  });
  sock.on('end', () => d.push(null));
  sock.on('error', (e) => d.destroy(e));
  sock.on('close', () => d.destroy());
  return d;
}

/**
 * Routes one accepted connection: to `secure()` when it starts a TLS handshake and a TLS server is
 * set (without one the connection is closed), else to `plain`.
 */
export function routeConnection(sock: net.Socket, plain: HttpServer, secure: () => TlsServer | undefined): void {
  sock.once('data', (first: Buffer) => {
    sock.pause();
    if (first[0] === TLS_HANDSHAKE) {
      const s = secure();
      if (!s) {
        sock.destroy();
        return;
      }
      s.emit('connection', replaying(sock, first));
      return;
    }
    sock.unshift(first);
    plain.emit('connection', sock);
    sock.resume();
  });
}
