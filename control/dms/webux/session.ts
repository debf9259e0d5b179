/**
 * Sign-in to the WebUX (docs/webux.md, "Sign-in"): a one-time login secret, kept in the DMS data
 * directory (`admin/webux-login`, mode 0600) and printed by `hd up`, or minted by an administrator
 * certificate with `POST /v1/webux/login-secrets`, is exchanged once for a session; so is an
 * administrator's client certificate presented by the browser (certSignIn.ts). The session
 * travels in a cookie that is HttpOnly, Secure and SameSite=Strict; every request that changes
 * something must also carry the session's CSRF token in `X-CSRF-Token` (a page of another origin
 * can neither read the token nor set the header), and its Origin, when sent, must be the WebUX's.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import { writeFileAtomic } from '../../../lib/atomicFile';

/** The session cookie's name. */
export const SESSION_COOKIE = 'hd_webux_session';
/** The header that carries the CSRF token on every request that changes something. */
export const CSRF_HEADER = 'x-csrf-token';
/** How long a session lasts without being used: 8 hours. */
export const SESSION_IDLE_MS = 8 * 3600 * 1000;
/** How long a minted login secret is valid: 15 minutes (the one in the data directory waits until used). */
export const LOGIN_SECRET_TTL_MS = 15 * 60 * 1000;

/** A signed-in administrator's session. */
export interface Session {
  /** Who signed in (`admin` for the login secret, the certificate's CN when minted by one). */
  readonly who: string;
  /** The CSRF token the page sends back in {@link CSRF_HEADER}. */
  readonly csrf: string;
  readonly createdAt: number;
  lastUsed: number;
  /** The serial of the client certificate it was opened with (the session ends when it is revoked). */
  readonly serial?: string;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Compares two strings in constant time (for equal lengths). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The file holding the login secret `hd up` prints. */
export function loginSecretFile(dataDir: string): string {
  return path.join(dataDir, 'admin', 'webux-login');
}

/** Login secrets and sessions, in memory (a DMS restart signs everyone out and writes a fresh secret). */
export class SessionBook {
  /** Secret hash → expiry (ms; Infinity for the file's secret) and who it signs in. */
  private readonly secrets = new Map<string, { expires: number; who: string }>();
  /** Session id hash → session. */
  private readonly sessions = new Map<string, Session>();

  /** @param dataDir the DMS data directory (the login secret file goes to admin/ inside it) */
  constructor(private readonly dataDir: string) {}

  /** Writes a fresh one-time secret to {@link loginSecretFile}; resolves with it. */
  async writeFileSecret(): Promise<string> {
    for (const [h, s] of this.secrets) if (s.expires === Infinity) this.secrets.delete(h);
    const secret = randomBytes(24).toString('base64url');
    this.secrets.set(sha256(secret), { expires: Infinity, who: 'admin' });
    await writeFileAtomic(loginSecretFile(this.dataDir), `${secret}\n`, 0o600);
    return secret;
  }

  /** A one-time secret valid for {@link LOGIN_SECRET_TTL_MS}, signing in as `who`. */
  mintSecret(who: string, now = Date.now()): { secret: string; expiresAt: string } {
    for (const [h, s] of this.secrets) if (s.expires <= now) this.secrets.delete(h);
    const secret = randomBytes(24).toString('base64url');
    const expires = now + LOGIN_SECRET_TTL_MS;
    this.secrets.set(sha256(secret), { expires, who });
    return { secret, expiresAt: new Date(expires).toISOString() };
  }

  /**
   * Exchanges a login secret for a session (the secret is spent); undefined when the secret is
   * unknown, spent or expired. Spending the data directory's secret writes the next one there.
   */
  async signIn(secret: string, now = Date.now()): Promise<{ id: string; session: Session } | undefined> {
    const h = sha256(secret);
    const s = this.secrets.get(h);
    if (!s || s.expires <= now) return undefined;
    this.secrets.delete(h);
    if (s.expires === Infinity) await this.writeFileSecret();
    return this.open(s.who, undefined, now);
  }

  /** A new session for `who` (a verified credential: a spent secret, an administrator certificate's `serial`). */
  open(who: string, serial?: string, now = Date.now()): { id: string; session: Session } {
    const id = randomBytes(32).toString('base64url');
    const session: Session = { who, csrf: randomBytes(24).toString('base64url'), createdAt: now, lastUsed: now, ...(serial !== undefined && { serial }) };
    this.sessions.set(sha256(id), session);
    return { id, session };
  }

  /** The live session of cookie value `id`, touched; undefined when unknown or idle too long. */
  session(id: string | undefined, now = Date.now()): Session | undefined {
    if (!id) return undefined;
    const h = sha256(id);
    const s = this.sessions.get(h);
    if (!s) return undefined;
    if (now - s.lastUsed > SESSION_IDLE_MS) {
      this.sessions.delete(h);
      return undefined;
    }
    s.lastUsed = now;
    return s;
  }

  /** Ends the session of cookie value `id`. */
  signOut(id: string | undefined): void {
    if (id) this.sessions.delete(sha256(id));
  }
}

/** The value of cookie `name` in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie value for a session id (an empty id clears the cookie). */
export function sessionCookie(id: string): string {
  const base = `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; Secure; SameSite=Strict`;
  return id ? `${base}; Max-Age=${SESSION_IDLE_MS / 1000}` : `${base}; Max-Age=0`;
}
