/**
 * Mutual TLS for the SCC's gRPC QueryDispatch service (docs/control-plane.md, "Which links are
 * mutual TLS"): server credentials that require a client certificate from our CA (checked against
 * the revocation list) and follow the node's renewals without a restart, the role check of each
 * call, and the channel credentials of the callers (the Proxy, hd_sql, SDK clients).
 *
 * Why a subclass of `grpc.ServerCredentials`: `createSsl` fixes the material at bind time and has
 * no revocation list. grpc-js (1.10+) gives every credentials object a watcher list; the server
 * calls `setSecureContext` on its HTTP/2 listener whenever the credentials publish new context
 * options. So a renewed certificate or a new CRL reaches the next handshake with the listener left
 * open; connections already made keep what they were made with, as TLS does.
 */
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { MtlsIdentity, TlsMaterial } from './mtls';
import { peerRoleProblem } from './peerRole';

function contextOf(m: TlsMaterial): tls.SecureContextOptions {
  return { key: m.keyPem, cert: m.certPem, ca: m.caPem, ...(m.crlPem ? { crl: m.crlPem } : {}), minVersion: 'TLSv1.2' };
}

/**
 * Server credentials from a node identity: client certificates required and verified in the
 * handshake (our root, the CRL), the current material handed to the listener on every update.
 * Call {@link dispose} when the server is closed.
 */
export class IdentityServerCredentials extends grpc.ServerCredentials {
  private readonly onUpdate = (m: TlsMaterial): void => this.updateSecureContextOptions(contextOf(m));

  /** @param identity the node's TLS identity (renewed in place by its CertificateRenewer) */
  constructor(private readonly identity: MtlsIdentity) {
    super({ requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2' }, contextOf(identity.material));
    identity.on('update', this.onUpdate);
  }

  /** Stops following the identity. */
  dispose(): void {
    this.identity.off('update', this.onUpdate);
  }

  /** Two of these are the same only when they are the same object (each follows its own identity). */
  override _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }
}

/** What grpc-js tells a handler of the transport (the verified peer certificate). */
export type CallAuthContext = ReturnType<grpc.ServerUnaryCall<unknown, unknown>['getAuthContext']>;

/** The verified certificate of a call's peer: name (CN), role (OU), serial; undefined when none. */
export function callPeer(call: { getAuthContext(): CallAuthContext }): { name: string; role: string; serial: string } | undefined {
  const c = call.getAuthContext().sslPeerCertificate;
  if (!c?.subject) return undefined;
  const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
  return { name: one(c.subject.CN), role: one(c.subject.OU), serial: c.serialNumber.toLowerCase().replace(/^0+(?=.)/, '') };
}

/** The role a QueryDispatch server's certificate must carry: only SCCs serve it. */
export const DISPATCH_PEER_ROLES: readonly string[] = ['scc'];

/**
 * Channel credentials of a QueryDispatch caller: our certificate, the SCC verified against our
 * root and revocation list, its certificate's role checked (`roles`, default `scc`: a `client`
 * certificate of the same CA cannot pose as an SCC) and its name checked against `peerName` (the
 * SCC's node name) when given, else any name is accepted for the address. The material is read
 * once: a caller drops its channels when its identity renews (see GrpcSccDispatcher).
 */
export function dispatchCredentials(m: TlsMaterial, peerName?: string, roles: readonly string[] = DISPATCH_PEER_ROLES): grpc.ChannelCredentials {
  const ctx = tls.createSecureContext(contextOf(m));
  return grpc.credentials.createFromSecureContext(ctx, {
    checkServerIdentity: (_host, cert) => (peerName === undefined ? undefined : tls.checkServerIdentity(peerName, cert)) ?? peerRoleProblem(cert, roles),
  });
}
