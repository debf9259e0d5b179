/**
 * TLS options of the node-to-node links (docs/control-plane.md, "Mutual TLS between nodes") made
 * from a {@link NodeIdentity}: servers require a client certificate from our CA (checked against the
 * revocation list) of an accepted role; clients check the server's certificate names the node they
 * meant to reach.
 */
import type tls from 'node:tls';
import type { NodeIdentity } from './nodeIdentity';
import { clientTlsOptions, peerIdentity, serverTlsOptions } from './mtls';

/** What a mutual-TLS listener needs: the TLS options and the check of each verified peer. */
export interface ServerLink {
  readonly tls: tls.TlsOptions;
  /** Undefined to accept the peer, else why it is refused (the socket is then closed before hello). */
  acceptPeer(socket: tls.TLSSocket): string | undefined;
  /** Told of a connection refused in the handshake (counted and logged on the node). */
  refused(err: Error, socket: tls.TLSSocket): void;
}

/**
 * Server side of a link: client certificates are required and verified in the handshake; a
 * verified peer of another role is refused. `port` names the port in logs and /health.
 */
export function serverLink(node: NodeIdentity, port: string, roles: readonly string[]): ServerLink {
  return {
    tls: serverTlsOptions(node.identity),
    acceptPeer(socket) {
      const peer = peerIdentity(socket);
      const from = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
      if (!peer) {
        const why = `${port} port: ${from} presented no certificate we trust (${String(socket.authorizationError ?? 'none')})`;
        node.peerRefused(why);
        return why;
      }
      if (!roles.includes(peer.role)) {
        const why = `${port} port: ${from} is ${peer.role} '${peer.name}'; only ${roles.join(', ')} certificates are accepted here`;
        node.peerRefused(why);
        return why;
      }
      node.peerAccepted(peer, port);
      return undefined;
    },
    refused(err, socket) {
      // A failed certificate check destroys the socket (its address is gone); the check's code says why.
      const from = socket.remoteAddress ? ` from ${socket.remoteAddress}:${socket.remotePort ?? '?'}` : '';
      const why = socket.authorizationError ? `certificate refused: ${String(socket.authorizationError)}` : ((err as { reason?: string }).reason ?? err.message);
      node.peerRefused(`${port} port: a connection${from} refused in the TLS handshake (${why})`);
    },
  };
}

/**
 * Client side of a link to node `peerName`: its certificate must name it and carry one of `roles`
 * (default `storageNode`: the SCC's replication and query legs are this module's only client links).
 */
export function clientLink(node: NodeIdentity, peerName: string, roles: readonly string[] = ['storageNode']): tls.ConnectionOptions {
  return clientTlsOptions(node.identity, peerName, roles);
}
