/**
 * Who is asking: the identity headers an authenticating ingress adds (X-Forwarded-Role,
 * X-Forwarded-Email), or, when the Proxy verifies JWTs itself (the embedded platform without an
 * ingress), the role and email claims of the bearer token. With JWT verification on, the forwarded
 * headers are ignored: anyone could send them.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { errors as joseErrors, jwtVerify } from 'jose';
import { HttpError } from '../http/errors';

/** The identity a policy is evaluated for. */
export interface Identity {
  readonly role: string;
  readonly email: string;
  /** Where it came from. */
  readonly via: 'headers' | 'jwt';
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

const MAX_HEADER = 256;

function header(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

/** Reads identities from requests. */
export class IdentityReader {
  private readonly key: KeyObject | undefined;

  /** @param jwt verify bearer tokens with these settings; undefined: trust the ingress's headers */
  constructor(private readonly jwt?: JwtSettings) {
    this.key = jwt ? createPublicKey(jwt.publicKeyPem) : undefined;
  }

  /** Whether identities come from verified JWTs. */
  get verifiesJwt(): boolean {
    return this.jwt !== undefined;
  }

  /** The request's identity, or 401 saying what is missing or wrong. */
  async read(h: IncomingHttpHeaders): Promise<Identity> {
    if (this.jwt && this.key) {
      const auth = header(h, 'authorization');
      const m = auth ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
      if (!m) throw new HttpError('unauthenticated', 'an Authorization: Bearer <JWT> header is required (this Proxy verifies JWTs itself)');
      let claims: Record<string, unknown>;
      try {
        claims = (await jwtVerify(m[1], this.key, { issuer: this.jwt.issuer, ...(this.jwt.audience ? { audience: this.jwt.audience } : {}), requiredClaims: ['exp'] })).payload as Record<string, unknown>;
      } catch (err) {
        const why = err instanceof joseErrors.JWTExpired ? 'it has expired' : err instanceof joseErrors.JWTClaimValidationFailed ? `claim ${err.claim} is wrong` : (err as Error).message;
        throw new HttpError('unauthenticated', `the bearer token was refused: ${why}`);
      }
      const role = claims[this.jwt.roleClaim];
      const email = claims[this.jwt.emailClaim];
      if (typeof role !== 'string' || role === '') throw new HttpError('unauthenticated', `the bearer token has no '${this.jwt.roleClaim}' claim (PROXY_JWT_ROLE_CLAIM)`);
      return { role, email: typeof email === 'string' ? email : '', via: 'jwt' };
    }
    const role = header(h, 'x-forwarded-role');
    const email = header(h, 'x-forwarded-email');
    if (!role || !email) throw new HttpError('unauthenticated', 'X-Forwarded-Role and X-Forwarded-Email are required (an authenticating ingress adds them)');
    if (role.length > MAX_HEADER || email.length > MAX_HEADER) throw new HttpError('invalid_request', `identity headers are limited to ${MAX_HEADER} characters`);
    return { role, email, via: 'headers' };
  }
}
