/**
 * The PostgreSQL wire door's side of the doors' limits (sql/doorLimits.ts): refusing a connection
 * past HD_SQL_MAX_CONNECTIONS with 53300, closing one not logged in within HD_SQL_LOGIN_TIMEOUT_MS,
 * and waiting while a slow reader's socket holds more than HD_SQL_SEND_BUFFER_BYTES.
 */
import type net from 'node:net';
import type { ConnectionGate } from '../doorLimits';
import { backend } from './backend';

/**
 * Counts `socket` at `gate`, uncounting it when it closes: true when admitted; else the socket is
 * sent FATAL 53300 too_many_connections (PostgreSQL's "sorry, too many clients already") and ended,
 * before anything it sends is read.
 */
export function admitConnection(socket: net.Socket, gate: ConnectionGate, log?: (line: string) => void): boolean {
  const release = gate.admit();
  if (release) {
    socket.once('close', release);
    return true;
  }
  log?.(`pgwire: refused a connection from ${socket.remoteAddress}: ${gate.max} open (HD_SQL_MAX_CONNECTIONS)`);
  socket.on('error', () => undefined);
  socket.end(backend.error({ severity: 'FATAL', code: '53300', message: gate.refusal() }));
  // A client that never reads must not keep the refused socket open.
  socket.setTimeout(5_000, () => socket.destroy());
  return false;
}

/**
 * Calls `expire` unless `cancel` (returned) is called within `ms`: the login deadline of one
 * connection. The timer does not keep the process alive.
 */
export function loginDeadline(ms: number, expire: () => void): () => void {
  const t = setTimeout(expire, ms);
  t.unref();
  return () => clearTimeout(t);
}

/**
 * Resolves once `socket` holds at most `highWater` bytes to send (at once when it already does), or
 * once it closes: the producer of a result awaits it between chunks, so a client that stops reading
 * stops the production instead of making the server queue the whole result.
 */
export function belowHighWater(socket: net.Socket, highWater: number): Promise<void> | undefined {
  if (socket.writableLength <= highWater || socket.destroyed) return undefined;
  return new Promise((resolve) => {
    const done = (): void => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}
