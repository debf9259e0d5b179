/**
 * The HTTP door's side of the doors' limits (sql/doorLimits.ts): connections past
 * HD_SQL_MAX_CONNECTIONS answer 503 `too_many_connections` (with `Connection: close`) to every
 * request, and a request's headers must arrive within HD_SQL_LOGIN_TIMEOUT_MS (Node's
 * headersTimeout, checked on Node's connection-checking interval).
 */
import type net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ConnectionGate, type DoorLimits } from './doorLimits';

/**
 * Counts the connections of `app` (over TLS: those that finished the handshake) against
 * `limits.maxConnections`; registers the onRequest hook that refuses the requests of those beyond
 * it. Call before the door's other hooks so a refused connection costs no authentication.
 */
export function limitHttpConnections(app: FastifyInstance, limits: DoorLimits, overTls: boolean, log?: (line: string) => void): ConnectionGate {
  const gate = new ConnectionGate(limits.maxConnections, 'HTTP');
  const refused = new WeakSet<net.Socket>();
  app.server.on(overTls ? 'secureConnection' : 'connection', (socket: net.Socket) => {
    const release = gate.admit();
    if (release) {
      socket.once('close', release);
      return;
    }
    refused.add(socket);
    // A refused connection that sends no request is not kept waiting for one.
    socket.setTimeout(limits.loginTimeoutMs, () => socket.destroy());
  });
  app.server.headersTimeout = limits.loginTimeoutMs;
  if (app.server.requestTimeout > 0 && app.server.requestTimeout < limits.loginTimeoutMs) app.server.requestTimeout = limits.loginTimeoutMs;
  app.addHook('onRequest', async (req, reply) => {
    if (!refused.has(req.raw.socket)) return;
    log?.(`HTTP: refused ${req.method} ${req.url.slice(0, 100)} from ${req.ip}: ${gate.max} connections open (HD_SQL_MAX_CONNECTIONS)`);
    return reply.code(503).header('connection', 'close').header('retry-after', '1').send({ error: { code: 'too_many_connections', sqlstate: '53300', message: gate.refusal() } });
  });
  return gate;
}
