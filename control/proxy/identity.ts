/**
 * Who is asking (docs/proxy.md, "Identity"). The identity headers X-Forwarded-Role and
 * X-Forwarded-Email are an authenticating ingress's statement about its client, so the Proxy takes
 * them only from a caller that proves it is such an ingress:
 *
 * - a client certificate of DMS-CA (verified in the TLS handshake, against the revocation list)
 *   whose role (OU) is one of `ingressRoles` (PROXY_INGRESS_ROLES; default `ingress`, and
 *   `sqlServer`: hd_sql forwards its service identity), or
 * - the shared ingress secret in `X-HD-Ingress-Secret` (PROXY_INGRESS_SECRET_FILE), compared in
 *   constant time.
 *
 * When the Proxy verifies JWTs itself (PROXY_JWT_*), `Authorization: Bearer <JWT>` is an identity
 * of its own: signature, issuer, audience and expiry checked with jose, role and email taken from
 * its claims. Anything else — forwarded headers from a caller without one of those proofs — is 401
 * (no proof) or 403 (a certificate of a role that may not assert identities): whoever can reach
 * the port could otherwise claim `admin`.
 */
import { createHash, createPublicKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { errors as joseErrors, jwtVerify } from 'jose';
import { HttpError } from '../http/errors';

/** The identity a policy is evaluated for. */
export interface Identity {
  readonly role: string;
  readonly email: string;
  /**
   * Where it came from: a verified bearer token, or forwarded headers from an ingress proven by
   * its certificate (`ingress-certificate`) or by the shared secret (`ingress-secret`).
   */
  readonly via: 'jwt' | 'ingress-certificate' | 'ingress-secret';
}

/** JWT verification settings (PROXY_JWT_*). */
export interface JwtSettings {
  readonly issuer: string;
  /** The issuer's public key (PEM). */
  readonly publicKeyPem: string;
  /** Expected `aud`; empty: not checked. */
  readonly audience: string;
  /** Claims holding the role and the email; defaults `role`, `email`. */
  readonly roleClaim: string;
  readonly emailClaim: string;
}

/** Who may assert identities with X-Forwarded-Role / X-Forwarded-Email (docs/proxy.md, "Identity"). */
export interface IngressSettings {
  /** Certificate roles (OU) of DMS-CA client certificates trusted as ingress (PROXY_INGRESS_ROLES). */
  readonly roles: readonly string[];
  /** The shared ingress secret (PROXY_INGRESS_SECRET_FILE's text, trimmed); absent: none accepted. */
  readonly secret?: string;
}

/** Default PROXY_INGRESS_ROLES: an authenticating ingress, and hd_sql (it forwards its service identity). */
export const DEFAULT_INGRESS_ROLES: readonly string[] = ['ingress', 'sqlServer'];
/** The header carrying the shared ingress secret. */
export const INGRESS_SECRET_HEADER = 'x-hd-ingress-secret';
/** The shortest shared secret accepted (characters). */
export const MIN_INGRESS_SECRET = 16;

/** The verified client certificate of the connection (net/mtls.ts `peerIdentity`), if any. */
export interface PeerCertificate {
  readonly name: string;
  readonly role: string;
}

const MAX_HEADER = 256;

function header(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

/** SHA-256 of the text: both sides of the comparison get the same length, so timingSafeEqual applies. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Reads identities from requests. */
export class IdentityReader {
  private readonly key: KeyObject | undefined;
  private readonly secret: Buffer | undefined;
  private readonly roles: readonly string[];

  /**
   * @param jwt verify bearer tokens with these settings; undefined: no bearer tokens
   * @param ingress who may send forwarded identity headers (default: certificates of {@link DEFAULT_INGRESS_ROLES}, no secret)
   */
  constructor(
    private readonly jwt?: JwtSettings,
    ingress: IngressSettings = { roles: DEFAULT_INGRESS_ROLES },
  ) {
    this.key = jwt ? createPublicKey(jwt.publicKeyPem) : undefined;
    if (ingress.secret !== undefined && ingress.secret.length < MIN_INGRESS_SECRET) throw new Error(`the ingress secret (PROXY_INGRESS_SECRET_FILE) must be at least ${MIN_INGRESS_SECRET} characters`);
    this.secret = ingress.secret === undefined ? undefined : digest(ingress.secret);
    this.roles = ingress.roles;
  }

  /** Whether identities may come from verified JWTs. */
  get verifiesJwt(): boolean {
    return this.jwt !== undefined;
  }

  /** What proves an ingress, for messages. */
  private ingressProofs(): string {
    const proofs = [`a DMS-CA client certificate of role ${this.roles.length > 0 ? this.roles.join(' or ') : '(none configured)'} (PROXY_INGRESS_ROLES)`];
    if (this.secret) proofs.push(`the shared secret in X-HD-Ingress-Secret (PROXY_INGRESS_SECRET_FILE)`);
    return proofs.join(' or ');
  }

  /**
   * The request's identity, or 401 / 403 saying what is missing or wrong.
   *
   * @param h the request's headers
   * @param peer the connection's verified DMS-CA client certificate, if it presented one
   */
  async read(h: IncomingHttpHeaders, peer?: PeerCertificate): Promise<Identity> {
    const auth = header(h, 'authorization');
    const bearer = auth ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
    if (this.jwt && this.key && bearer) return this.fromJwt(bearer[1] as string, this.jwt, this.key);
    const role = header(h, 'x-forwarded-role');
    const email = header(h, 'x-forwarded-email');
    const jwtHint = this.jwt ? 'an Authorization: Bearer <JWT> header (this Proxy verifies JWTs), or ' : '';
    if (role === undefined && email === undefined) {
      throw new HttpError('unauthenticated', `no identity: send ${jwtHint}X-Forwarded-Role and X-Forwarded-Email from an authenticating ingress, which proves itself with ${this.ingressProofs()}`);
    }
    const via = this.ingress(h, peer);
    if (!role || !email) throw new HttpError('unauthenticated', 'X-Forwarded-Role and X-Forwarded-Email are both required (an authenticating ingress adds them)');
    if (role.length > MAX_HEADER || email.length > MAX_HEADER) throw new HttpError('invalid_request', `identity headers are limited to ${MAX_HEADER} characters`);
    return { role, email, via };
  }

  /** How the caller proved it is an ingress; throws 401 / 403 when it did not. */
  private ingress(h: IncomingHttpHeaders, peer: PeerCertificate | undefined): Identity['via'] {
    const sent = header(h, INGRESS_SECRET_HEADER);
    if (sent !== undefined) {
      // Compared whatever the certificate says: a wrong secret is always refused, and never timed.
      const ok = this.secret !== undefined && timingSafeEqual(digest(sent), this.secret);
      if (!ok) throw new HttpError('unauthenticated', this.secret ? 'the ingress secret (X-HD-Ingress-Secret) is wrong' : 'this Proxy accepts no ingress secret (PROXY_INGRESS_SECRET_FILE is not set)');
      return 'ingress-secret';
    }
    if (peer && this.roles.includes(peer.role)) return 'ingress-certificate';
    if (peer) {
      throw new HttpError('forbidden', `X-Forwarded-Role / X-Forwarded-Email are taken only from an authenticating ingress; '${peer.name}' holds a ${peer.role} certificate, and only ${this.roles.join(', ') || 'no'} certificates may assert identities (PROXY_INGRESS_ROLES)`);
    }
    throw new HttpError('unauthenticated', `X-Forwarded-Role / X-Forwarded-Email are taken only from an authenticating ingress, which proves itself with ${this.ingressProofs()}; this caller presented none`);
  }

  private async fromJwt(token: string, jwt: JwtSettings, key: KeyObject): Promise<Identity> {
    let claims: Record<string, unknown>;
    try {
      claims = (await jwtVerify(token, key, { issuer: jwt.issuer, ...(jwt.audience ? { audience: jwt.audience } : {}), requiredClaims: ['exp'] })).payload as Record<string, unknown>;
    } catch (err) {
      const why = err instanceof joseErrors.JWTExpired ? 'it has expired' : err instanceof joseErrors.JWTClaimValidationFailed ? `claim ${err.claim} is wrong` : (err as Error).message;
      throw new HttpError('unauthenticated', `the bearer token was refused: ${why}`);
    }
    const role = claims[jwt.roleClaim];
    const email = claims[jwt.emailClaim];
    if (typeof role !== 'string' || role === '') throw new HttpError('unauthenticated', `the bearer token has no '${jwt.roleClaim}' claim (PROXY_JWT_ROLE_CLAIM)`);
    return { role, email: typeof email === 'string' ? email : '', via: 'jwt' };
  }
}
