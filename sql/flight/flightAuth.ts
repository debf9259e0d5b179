/**
 * Authentication of the Arrow Flight SQL door, as ADBC's Flight SQL driver (and Arrow Flight's
 * clients) speak it: `Handshake` with `authorization: Basic <user:password>` in its metadata is
 * answered with `authorization: Bearer <session token>` in the response headers; every other call
 * carries `authorization: Bearer` (that session token, or a users-file token) — or Basic again —
 * and is refused with Unauthenticated otherwise. Session tokens live in this process's memory
 * (looked up by their SHA-256, never stored as given) for {@link SESSION_TTL_MS}.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { BoundedMap } from '../../lib/boundedMap';
import { authenticate, parseAuthorization } from '../authorizationHeader';
import type { DoorCredentials, DoorPrincipal } from '../doorUsers';

/** How long a handshake's session token is good for (a client handshakes again after it). */
export const SESSION_TTL_MS = 12 * 3600 * 1000;
/** Session tokens kept at most; beyond, the oldest is dropped (its client handshakes again). */
const MAX_SESSIONS = 100_000;

/** A refusal as a gRPC status. */
export function unauthenticated(why: string): Partial<grpc.StatusObject> {
  return { code: grpc.status.UNAUTHENTICATED, details: `${why} (hd_sql Flight SQL: handshake with Basic user:password, then send the bearer token it returns)` };
}

/** The door's sessions and checks. */
export class FlightAuth {
  private readonly sessions = new BoundedMap<string, { principal: DoorPrincipal; expires: number }>(MAX_SESSIONS);

  /** @param credentials undefined: every call is let in (an open door, on loopback) */
  constructor(private readonly credentials: DoorCredentials | undefined) {}

  /** Whether calls need credentials. */
  get required(): boolean {
    return this.credentials !== undefined;
  }

  /**
   * The handshake: a principal and the bearer token to hand back, or why not. A Bearer that is
   * already valid is accepted as is (a client re-handshaking with its token).
   */
  handshake(metadata: grpc.Metadata): { principal: DoorPrincipal; token: string } | { refused: string } {
    if (!this.credentials) return { refused: 'no credentials are configured' };
    const header = single(metadata);
    if (header === undefined) return { refused: 'the handshake carries no authorization header' };
    const a = parseAuthorization(header);
    if (a.scheme === 'bearer') {
      const p = this.bearer(a.token);
      return p ? { principal: p, token: a.token } : { refused: 'the bearer token is not valid (expired, from another server, or not in the users file)' };
    }
    const r = authenticate(this.credentials, header);
    if ('refused' in r) return r;
    const token = randomBytes(32).toString('base64url');
    this.sessions.set(digest(token), { principal: r.principal, expires: Date.now() + SESSION_TTL_MS });
    return { principal: r.principal, token };
  }

  /** Who a call is from (its authorization header), or why it is refused. Open door: an anonymous principal. */
  check(metadata: grpc.Metadata): { principal: DoorPrincipal | undefined } | { refused: string } {
    if (!this.credentials) return { principal: undefined };
    const header = single(metadata);
    if (header === undefined) return { refused: 'credentials are required: no authorization header' };
    const a = parseAuthorization(header);
    if (a.scheme === 'bearer') {
      const p = this.bearer(a.token);
      return p ? { principal: p } : { refused: 'the bearer token is not valid (expired, from another server, or not in the users file)' };
    }
    const r = authenticate(this.credentials, header);
    return 'refused' in r ? r : { principal: r.principal };
  }

  /** A session token, then a users-file token. */
  private bearer(token: string): DoorPrincipal | undefined {
    const key = digest(token);
    const s = this.sessions.get(key);
    if (s && s.expires > Date.now()) return s.principal;
    if (s) this.sessions.delete(key);
    return this.credentials?.checkToken(token);
  }
}

const digest = (token: string): string => createHash('sha256').update(token).digest('base64');

/** The one authorization header of a call; two of them count as none (which to believe?). */
function single(metadata: grpc.Metadata): string | undefined {
  const v = metadata.get('authorization');
  return v.length === 1 && typeof v[0] === 'string' ? v[0] : undefined;
}
