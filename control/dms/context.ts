/**
 * What every DMS route handler works with: the store, the CA, the settings, and who is calling
 * (the verified client certificate of the TLS connection, if any).
 */
import type { TLSSocket } from 'node:tls';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors';
import type { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { normalizeSerial } from '../../net/pki/x509';
import type { Store } from '../store/jsonFileStore';
import type { K8sTokenVerifier } from './credentials';
import type { DmsSettings } from './settings';
import type { DmsState } from './state';
import type { LimitsInEffect } from './webux/communityLimits';
import type { LogLevel } from '../../lib/logging';

/** The OU of administrator certificates (issued to the data directory on first start). */
export const ADMIN_ROLE = 'admin';
/** The OU of the DMS's own certificate (it calls Proxies with it). */
export const DMS_ROLE = 'dms';

/** Shared state of the DMS's handlers. */
export interface DmsContext {
  readonly store: Store<DmsState>;
  readonly ca: CertificateAuthority;
  readonly settings: DmsSettings;
  readonly k8s?: K8sTokenVerifier;
  /** The current signed revocation list (PEM). */
  crlPem(): string;
  /** Re-signs the revocation list after a revocation. */
  refreshCrl(): Promise<void>;
  /** Pushes the stored policy to every Proxy that lacks it; resolves with each result. */
  pushPolicy(): Promise<{ proxy: string; result: 'installed' | 'failed'; message?: string }[]>;
  /** The license limits in effect now (the imported license's, else the community limits; webux/communityLimits.ts). */
  limitsInEffect(): LimitsInEffect;
  /**
   * Logs a line at the level the caller states (docs/observability.md, "Logs"). DMS-Core's call
   * sites all state one; a line without (the WebUX's, not yet converted) gets the guessed level.
   */
  log(message: string, level?: LogLevel): void;
}

/** Set by the WebUX (control/dms/webux/webuxServer.ts) on requests of a signed-in administrator session. */
export const SESSION_PEER: unique symbol = Symbol('hd.dms.sessionPeer');

/** A caller authenticated by a client certificate from our CA. */
export interface Peer {
  readonly name: string;
  readonly role: string;
  readonly serial: string;
  readonly notAfter: Date;
}

/**
 * The caller's certificate when TLS verified it against our CA; undefined without one. A revoked
 * certificate is an error (the TLS layer does not know the DMS's latest revocations).
 */
export function peerOf(req: FastifyRequest, ctx: DmsContext): Peer | undefined {
  const session = (req as unknown as { [SESSION_PEER]?: Peer })[SESSION_PEER];
  if (session) return session;
  const socket = req.raw.socket as TLSSocket;
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return undefined;
  const c = socket.getPeerCertificate();
  if (!c || !c.subject) return undefined;
  const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
  const serial = normalizeSerial(c.serialNumber);
  const rec = ctx.store.get().certificates[serial];
  if (rec?.revoked_at) throw new HttpError('unauthenticated', `client certificate ${serial} was revoked at ${rec.revoked_at}`);
  return { name: one(c.subject.CN), role: one(c.subject.OU), serial, notAfter: new Date(c.valid_to) };
}

/** The caller's certificate, or 401 naming what is missing. */
export function requirePeer(req: FastifyRequest, ctx: DmsContext): Peer {
  const p = peerOf(req, ctx);
  if (!p) throw new HttpError('unauthenticated', `${req.method} ${req.url.split('?')[0]} needs a client certificate issued by DMS-CA (mutual TLS)`);
  return p;
}

/** The caller, who must hold one of `roles`; 401 without a certificate, 403 with another role. */
export function requireRole(req: FastifyRequest, ctx: DmsContext, roles: readonly string[]): Peer {
  const p = requirePeer(req, ctx);
  if (!roles.includes(p.role)) throw new HttpError('forbidden', `${req.method} ${req.url.split('?')[0]} is for ${roles.join(' or ')} certificates; '${p.name}' holds a ${p.role || 'role-less'} certificate`);
  return p;
}
