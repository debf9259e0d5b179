/**
 * Who may use hd_sql's doors: one credential configuration for the PostgreSQL wire, HTTP and Arrow
 * Flight SQL. Either the single password of HD_SQL_PGWIRE_PASSWORD_FILE (any user name, that
 * password: what the reference's wire password always meant) or the users of HD_SQL_USERS_FILE,
 * each with a SCRAM-SHA-256 secret (PostgreSQL's `rolpassword` format: never the password itself)
 * and/or the SHA-256 of a bearer token, and the role / email the Proxy sees for them
 * (HD_SQL_IDENTITY=user). Every check compares in constant time; an unknown user costs the same as
 * a known one, so the doors do not tell which names exist.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BoundedMap } from '../lib/boundedMap';
import { saslPrep, SCRAM_ITERATIONS, scramVerifier, type ScramVerifier } from './pgwire/scram';

/** One user of the users file, as the doors need it. */
export interface DoorUser {
  readonly name: string;
  /** SCRAM-SHA-256 secret: the password checks (SCRAM, Basic, the Flight handshake). */
  readonly scram?: ScramVerifier;
  /** SHA-256 of the user's bearer token (HTTP Bearer, Flight SQL authorization header). */
  readonly tokenSha256?: Buffer;
  /** What the Proxy sees for this user with HD_SQL_IDENTITY=user. */
  readonly role?: string;
  readonly email?: string;
}

/** Who a door let in: the user name (as the client spelled it) and, from the users file, the user. */
export interface DoorPrincipal {
  readonly name: string;
  /** Undefined with the single password file (no users). */
  readonly user?: DoorUser;
}

/** The longest user name, password or token the doors read (anything longer is refused unread). */
export const MAX_CREDENTIAL_CHARS = 1024;

const hmac = (key: Buffer, data: string | Buffer): Buffer => createHmac('sha256', key).update(data).digest();
const sha256 = (data: string | Buffer): Buffer => createHash('sha256').update(data).digest();

/**
 * The SCRAM-SHA-256 secret of a password in PostgreSQL's format
 * (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64), which the users file holds.
 */
export function scramSecret(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): string {
  const v = scramVerifier(password, salt, iterations);
  return `SCRAM-SHA-256$${v.iterations}:${v.salt.toString('base64')}$${v.storedKey.toString('base64')}:${v.serverKey.toString('base64')}`;
}

/** Parses a secret of {@link scramSecret}'s format; undefined when it is not one. */
export function parseScramSecret(text: string): ScramVerifier | undefined {
  const m = /^SCRAM-SHA-256\$(\d{1,7}):([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2}):([A-Za-z0-9+/]+={0,2})$/.exec(text);
  if (!m) return undefined;
  const iterations = Number(m[1]);
  const [salt, storedKey, serverKey] = [m[2], m[3], m[4]].map((s) => Buffer.from(s as string, 'base64')) as [Buffer, Buffer, Buffer];
  if (iterations < 1 || salt.length === 0 || storedKey.length !== 32 || serverKey.length !== 32) return undefined;
  return { salt, iterations, storedKey, serverKey };
}

/** The token a user presents as `Bearer`, and the `token_sha256` the users file keeps for it. */
export function newBearerToken(): { token: string; sha256: string } {
  const token = `hd_${randomBytes(32).toString('base64url')}`;
  return { token, sha256: sha256(token).toString('hex') };
}

const USER_KEYS = new Set(['name', 'scram_sha_256', 'token_sha256', 'role', 'email']);

/**
 * Reads HD_SQL_USERS_FILE: `{"users": [{"name", "scram_sha_256"?, "token_sha256"?, "role"?,
 * "email"?}]}`; every fault names the file, the entry and the field.
 */
export function readUsersFile(file: string, variable: string): DoorUser[] {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${variable}: cannot read ${file} as JSON: ${(err as Error).message}`);
  }
  const list = (doc as { users?: unknown } | null)?.users;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc) || !Array.isArray(list)) throw new Error(`${variable}: ${file} must be a JSON object {"users": [{"name": ..., "scram_sha_256": ...}, ...]}`);
  if (list.length === 0) throw new Error(`${variable}: ${file} names no user`);
  const names = new Set<string>();
  return list.map((e: unknown, i) => {
    const at = `${variable}: ${file}, user ${i + 1}`;
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw new Error(`${at} is not an object`);
    const o = e as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!USER_KEYS.has(k)) throw new Error(`${at}: unknown field "${k}" (fields: ${[...USER_KEYS].join(', ')})`);
    for (const k of USER_KEYS) if (o[k] !== undefined && typeof o[k] !== 'string') throw new Error(`${at}: "${k}" must be a string`);
    const name = o.name as string | undefined;
    if (!name || name.length > 128 || name.includes(':') || /[\u0000-\u001f]/.test(name)) throw new Error(`${at}: "name" must be 1 to 128 characters without ':' or control characters`);
    if (names.has(name)) throw new Error(`${at}: user "${name}" appears twice`);
    names.add(name);
    const scramText = o.scram_sha_256 as string | undefined;
    const scram = scramText === undefined ? undefined : parseScramSecret(scramText);
    if (scramText !== undefined && !scram) throw new Error(`${at} ("${name}"): "scram_sha_256" must be SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64; PostgreSQL's format, see docs/sql.md)`);
    const tokenHex = o.token_sha256 as string | undefined;
    if (tokenHex !== undefined && !/^[0-9a-f]{64}$/i.test(tokenHex)) throw new Error(`${at} ("${name}"): "token_sha256" must be 64 hex digits (the SHA-256 of the bearer token)`);
    if (!scram && tokenHex === undefined) throw new Error(`${at} ("${name}"): give "scram_sha_256" (a password) or "token_sha256" (a bearer token), or both`);
    for (const k of ['role', 'email'] as const) {
      const v = o[k] as string | undefined;
      // The Proxy takes identity headers of at most 256 characters.
      if (v !== undefined && (v === '' || v.length > 256)) throw new Error(`${at} ("${name}"): "${k}" must be 1 to 256 characters`);
    }
    return {
      name,
      ...(scram && { scram }),
      ...(tokenHex !== undefined && { tokenSha256: Buffer.from(tokenHex, 'hex') }),
      ...(o.role !== undefined && { role: o.role as string }),
      ...(o.email !== undefined && { email: o.email as string }),
    };
  });
}

/** The credentials every door checks against. */
export class DoorCredentials {
  /** A key of this process: unknown users get a mock SCRAM salt from it, and checked passwords are cached under it. */
  private readonly secret = randomBytes(32);
  /** Passwords already checked (keyed by an HMAC, never the password): a Basic request need not pay PBKDF2 each time. */
  private readonly checked = new BoundedMap<string, DoorPrincipal>(1024);
  private readonly byName: ReadonlyMap<string, DoorUser>;

  private constructor(
    /** `password`: HD_SQL_PGWIRE_PASSWORD_FILE, any user name; `users`: HD_SQL_USERS_FILE. */
    readonly kind: 'password' | 'users',
    private readonly passwordVerifier: ScramVerifier | undefined,
    readonly users: readonly DoorUser[],
  ) {
    this.byName = new Map(users.map((u) => [u.name, u]));
  }

  /** Any user name, this password (HD_SQL_PGWIRE_PASSWORD_FILE). */
  static password(password: string): DoorCredentials {
    return new DoorCredentials('password', scramVerifier(password), []);
  }

  /** The users of HD_SQL_USERS_FILE. */
  static users(users: readonly DoorUser[]): DoorCredentials {
    return new DoorCredentials('users', undefined, users);
  }

  /**
   * The SCRAM verifier to run a wire login of `user` against. An unknown user (or one with a token
   * only) gets a mock verifier no password matches, so the login fails the same way, at the same cost.
   */
  verifierFor(user: string): { verifier: ScramVerifier; principal: DoorPrincipal | undefined } {
    if (this.passwordVerifier) return { verifier: this.passwordVerifier, principal: { name: user } };
    const u = this.byName.get(user);
    if (u?.scram) return { verifier: u.scram, principal: { name: user, user: u } };
    return { verifier: this.mockVerifier(user), principal: undefined };
  }

  /** Checks a user name and password (HTTP Basic, the Flight SQL handshake). */
  checkPassword(user: string, password: string): DoorPrincipal | undefined {
    if (user.length > MAX_CREDENTIAL_CHARS || password.length > MAX_CREDENTIAL_CHARS) return undefined;
    const key = hmac(this.secret, Buffer.concat([Buffer.from(user, 'utf8'), Buffer.from([0]), Buffer.from(password, 'utf8')])).toString('base64');
    const hit = this.checked.get(key);
    if (hit) return hit;
    const { verifier, principal } = this.verifierFor(user);
    const salted = pbkdf2Sync(Buffer.from(saslPrep(password), 'utf8'), verifier.salt, verifier.iterations, 32, 'sha256');
    const ok = timingSafeEqual(sha256(hmac(salted, 'Client Key')), verifier.storedKey);
    if (!ok || !principal) return undefined;
    this.checked.set(key, principal);
    return principal;
  }

  /** The user whose bearer token this is (every user's digest is compared, in constant time). */
  checkToken(token: string): DoorPrincipal | undefined {
    if (token.length > MAX_CREDENTIAL_CHARS) return undefined;
    const digest = sha256(token);
    let found: DoorUser | undefined;
    for (const u of this.users) if (u.tokenSha256 && timingSafeEqual(u.tokenSha256, digest) && !found) found = u;
    return found ? { name: found.name, user: found } : undefined;
  }

  /** Whether some user has a bearer token. */
  get hasTokens(): boolean {
    return this.users.some((u) => u.tokenSha256);
  }

  private mockVerifier(user: string): ScramVerifier {
    const salt = hmac(this.secret, `salt:${user}`).subarray(0, 16);
    return { salt, iterations: SCRAM_ITERATIONS, storedKey: hmac(this.secret, `stored:${user}`), serverKey: hmac(this.secret, `server:${user}`) };
  }
}
