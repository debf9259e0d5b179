/**
 * Client-certificate sign-in to the WebUX (docs/webux.md, "Sign-in"). Port 3000 asks every browser
 * for a client certificate but requires none (TLS `requestCert`, not `rejectUnauthorized`), so
 * the login secret keeps working without one. A certificate DMS-CA issued to an administrator
 * (OU `admin`), known to the DMS and not revoked, is exchanged for a session by
 * `POST /ui/session/certificate`; anything else — a node's certificate, a revoked one, one from
 * another CA or expired — is refused naming why, and `GET /ui/certificate` tells the sign-in page
 * beforehand what the browser presented and whether it would be taken.
 *
 * The certificate only signs in: on this port `/v1/*` still needs the session and its CSRF token
 * (a browser presents its certificate to any page that makes it call here, so the certificate
 * alone must open nothing). A session opened with a certificate ends once that certificate is
 * revoked.
 */
import type { TLSSocket } from 'node:tls';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors';
import { normalizeSerial } from '../../../net/pki/x509';
import { ADMIN_ROLE, type DmsContext } from '../context';

/** What the browser's connection presented, and whether it signs in. */
export interface CertificateVerdict {
  readonly presented: boolean;
  /** The certificate's subject CN and OU (its node name and role), serial and expiry, when presented. */
  readonly subject?: { readonly cn: string; readonly ou: string };
  readonly issuer?: string;
  readonly serial?: string;
  readonly not_after?: string;
  /** Whether it signs in; when not, `reason` says why and `status` is the HTTP status of the refusal. */
  readonly accepted: boolean;
  readonly reason?: string;
  readonly status?: 401 | 403;
}

const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

const SECRET_HINT = 'or sign in with the login secret';

/** Judges the client certificate of `req`'s TLS connection. */
export function certificateVerdict(req: FastifyRequest, ctx: DmsContext): CertificateVerdict {
  const socket = req.raw.socket as TLSSocket;
  const c = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined;
  if (!c || !c.subject || Object.keys(c).length === 0) {
    return { presented: false, accepted: false, status: 401, reason: `the browser presented no client certificate; import an administrator certificate issued by this DMS's CA into the browser (docs/webux.md, "Sign-in"), ${SECRET_HINT}` };
  }
  const subject = { cn: one(c.subject.CN), ou: one(c.subject.OU) };
  const seen = { presented: true, subject, issuer: one(c.issuer?.CN) || one(c.issuer?.O), serial: normalizeSerial(c.serialNumber), not_after: new Date(c.valid_to).toISOString() };
  const refuse = (status: 401 | 403, reason: string): CertificateVerdict => ({ ...seen, accepted: false, status, reason });
  if (!socket.authorized) {
    const why = String(socket.authorizationError ?? 'not verified');
    if (why === 'CERT_HAS_EXPIRED') return refuse(401, `the certificate of '${subject.cn}' expired at ${seen.not_after}; ${SECRET_HINT}`);
    return refuse(401, `the certificate of '${subject.cn}' was not issued by this DMS's CA (issuer '${seen.issuer}', ${why}); only DMS-CA certificates sign in, ${SECRET_HINT}`);
  }
  const rec = ctx.store.get().certificates[seen.serial];
  if (rec?.revoked_at) return refuse(403, `the certificate ${seen.serial} of '${subject.cn}' was revoked at ${rec.revoked_at} (${rec.reason ?? 'no reason given'}); ${SECRET_HINT}`);
  if (subject.ou !== ADMIN_ROLE) return refuse(403, `the certificate of '${subject.cn}' is a ${subject.ou || 'role-less'} certificate: only an administrator certificate (OU=${ADMIN_ROLE}) signs in to the WebUX; ${SECRET_HINT}`);
  if (!rec) return refuse(403, `the administrator certificate ${seen.serial} is not in this DMS's records (GET /v1/admin/certificates lists them); ${SECRET_HINT}`);
  return { ...seen, accepted: true };
}

/**
 * The verdict, or the refusal as an error: 401 without a certificate or with one from another CA
 * or expired, 403 for a node's, a revoked or an unknown one.
 */
export function requireAdminCertificate(req: FastifyRequest, ctx: DmsContext): CertificateVerdict & { subject: { cn: string; ou: string }; serial: string } {
  const v = certificateVerdict(req, ctx);
  if (!v.accepted || !v.subject || !v.serial) throw new HttpError(v.status === 403 ? 'forbidden' : 'unauthenticated', `certificate sign-in refused: ${v.reason ?? 'no certificate'}`);
  return v as CertificateVerdict & { subject: { cn: string; ou: string }; serial: string };
}

/** Whether the certificate a session was opened with has been revoked since. */
export function revokedSince(serial: string | undefined, ctx: DmsContext): boolean {
  return serial !== undefined && ctx.store.get().certificates[serial]?.revoked_at !== undefined;
}
