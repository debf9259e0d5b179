/**
 * The role check of a verified TLS server, as clients make it (docs/control-plane.md, "Which links
 * are mutual TLS"). DMS-CA writes a certificate's role into its subject's OU (`O=HD, OU=<role>,
 * CN=<name>`), and every certificate of the instance chains to the same root: the chain and the
 * name alone would let any registered `client` whose name matches stand in for the DMS, an SCC or
 * the Proxy. So a client also checks that the server's certificate carries a role it expects, in
 * the same `checkServerIdentity` hook as the name (a mismatch fails the handshake).
 */
import type { PeerCertificate } from 'node:tls';

/** The role (OU) of a certificate's subject; empty when it has none. */
export function certificateRole(cert: Pick<PeerCertificate, 'subject'>): string {
  const ou = cert.subject?.OU as string | string[] | undefined;
  return Array.isArray(ou) ? (ou[0] ?? '') : (ou ?? '');
}

/** Undefined when `cert`'s role is one of `roles`, else the error that fails the connection. */
export function peerRoleProblem(cert: Pick<PeerCertificate, 'subject'>, roles: readonly string[]): Error | undefined {
  const role = certificateRole(cert);
  if (roles.includes(role)) return undefined;
  const cn = cert.subject?.CN as string | string[] | undefined;
  const name = Array.isArray(cn) ? cn[0] : cn;
  const err = new Error(`the server's certificate ('${name ?? '?'}') is for a ${role || 'role-less'} certificate, not ${roles.join(' or ')}: refused (peer role check)`);
  (err as NodeJS.ErrnoException).code = 'ERR_TLS_PEER_ROLE';
  return err;
}
