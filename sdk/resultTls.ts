/**
 * Mutual TLS on the query client's result listener (docs/control-plane.md, "Which links are mutual
 * TLS"): a client holding a DMS-CA certificate (hd_sql, or an SDK client given `dispatchTls`)
 * listens with it, asks for it in every query (`return_address.tls`), and accepts result streams
 * only from Storage Node and SCC certificates of the same CA. The query's token still has to
 * match: TLS says who is sending, the token which query it is for.
 */
import type tls from 'node:tls';
import { MtlsIdentity, peerIdentity, serverTlsOptions } from '../net/mtls';
import type { ControlTls } from './proxyClient';

/** Certificate roles that may open a result stream. */
const SENDERS: readonly string[] = ['storageNode', 'scc'];

/** TLS options of a result listener and its check of each verified sender. */
export interface ResultListenerTls {
  readonly tls: tls.TlsOptions;
  acceptPeer(socket: tls.TLSSocket): string | undefined;
}

/** The listener side for `material` (CA bundle, certificate, key); throws when they do not fit together. */
export function resultListenerTls(material: ControlTls): ResultListenerTls {
  if (!material.ca || !material.cert || !material.key) throw new Error('a mutual-TLS result listener needs the CA bundle, a certificate and its key (dispatchTls)');
  const id = new MtlsIdentity({ keyPem: material.key, certPem: material.cert, caPem: material.ca });
  return {
    tls: serverTlsOptions(id),
    acceptPeer(socket) {
      const peer = peerIdentity(socket);
      if (!peer) return `result stream from ${socket.remoteAddress ?? '?'}: no certificate we trust`;
      if (!SENDERS.includes(peer.role)) return `result stream from ${peer.role} '${peer.name}': only Storage Node and SCC certificates may send results`;
      return undefined;
    },
  };
}
