/**
 * What hd_sql's three doors (PostgreSQL wire, HTTP, Arrow Flight SQL) trust, in one place: the
 * credentials (sql/doorUsers.ts), TLS (sql/doorTls.ts), the HTTP door's Host allow-list, and whose
 * identity the Proxy sees (the service's, the reference's behaviour, or the SQL user's). Without a
 * credential the doors are open only on loopback, unless HD_SQL_ALLOW_UNAUTHENTICATED says so.
 */
import net from 'node:net';
import type { DoorTls } from './doorTls';
import type { DoorCredentials, DoorPrincipal } from './doorUsers';
import type { ListenAddress } from './serverSettings';
import type { SqlUserIdentity } from './sqlUser';

/** Settings shared by the doors. */
export interface DoorSecurity {
  /** Undefined: no credential is asked (allowed on loopback, or with HD_SQL_ALLOW_UNAUTHENTICATED). */
  readonly credentials?: DoorCredentials;
  /** Undefined: plaintext doors. With it HTTP and Flight SQL serve TLS only; the wire offers it (SSLRequest). */
  readonly tls?: DoorTls;
  /** HD_SQL_TLS_REQUIRED: a wire client that is not on loopback must use TLS. */
  readonly tlsRequired?: boolean;
  /** HD_SQL_IDENTITY: `service` (default, the reference) or `user` (the SQL user's role and email go to the Proxy). */
  readonly identity?: 'service' | 'user';
  /** HD_SQL_HTTP_ALLOWED_HOSTS: Host header names allowed beyond loopback and the listen address. */
  readonly httpAllowedHosts?: readonly string[];
}

/** Whether an address or name is this machine's loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (net.isIPv4(h)) return h.startsWith('127.');
  if (net.isIPv6(h)) return h === '::1' || /^::ffff:127\./.test(h);
  return false;
}

/**
 * Start-up checks of the doors' security, before anything listens: throws with what to set when a
 * door would be open beyond loopback or TLS is asked without a certificate; returns the warnings.
 */
export function checkDoorSecurity(sec: DoorSecurity, doors: readonly { readonly name: string; readonly variable: string; readonly at: ListenAddress }[], allowUnauthenticated: boolean): string[] {
  const warnings: string[] = [];
  const exposed = doors.filter((d) => !isLoopback(d.at.host));
  if (!sec.credentials) {
    if (exposed.length > 0 && !allowUnauthenticated) {
      throw new Error(
        `no credential is configured (HD_SQL_USERS_FILE or HD_SQL_PGWIRE_PASSWORD_FILE), and ${exposed.map((d) => `${d.variable}=${d.at.host}:${d.at.port}`).join(', ')} ${exposed.length === 1 ? 'is' : 'are'} not loopback: anyone who reaches ${exposed.length === 1 ? 'it' : 'them'} would read with the service's access. Set a credential, bind to 127.0.0.1, or set HD_SQL_ALLOW_UNAUTHENTICATED=true to serve without one`,
      );
    }
    if (doors.length > 0) {
      warnings.push(
        `WARNING: HD_SQL_PGWIRE_PASSWORD_FILE is not set (nor HD_SQL_USERS_FILE): the doors accept anyone who can reach them, without a password${exposed.length > 0 ? ` — including beyond loopback (${exposed.map((d) => d.name).join(', ')}; HD_SQL_ALLOW_UNAUTHENTICATED=true)` : ' (they listen on loopback only)'}`,
      );
    }
  }
  if (sec.tlsRequired && !sec.tls) throw new Error('HD_SQL_TLS_REQUIRED=true needs a certificate: set HD_SQL_TLS_CERT_FILE and HD_SQL_TLS_KEY_FILE, or give hd_sql its DMS identity (HD_DMS_*)');
  if (!sec.tls && sec.credentials && exposed.length > 0) {
    warnings.push(`WARNING: ${exposed.map((d) => d.name).join(', ')} listen beyond loopback without TLS: passwords (HTTP Basic, the Flight SQL handshake) and results cross the network in clear; set HD_SQL_TLS_CERT_FILE and HD_SQL_TLS_KEY_FILE`);
  }
  if (sec.identity === 'user') {
    if (sec.credentials?.kind !== 'users') throw new Error('HD_SQL_IDENTITY=user needs HD_SQL_USERS_FILE: each SQL user\'s role and email come from it');
    const lacking = sec.credentials.users.filter((u) => !u.role || !u.email).map((u) => u.name);
    if (lacking.length > 0) throw new Error(`HD_SQL_IDENTITY=user: every user of HD_SQL_USERS_FILE needs "role" and "email" (what the Proxy's policy sees); ${lacking.map((n) => `"${n}"`).join(', ')} lack${lacking.length === 1 ? 's' : ''} them`);
  }
  return warnings;
}

/** The identity a statement of `principal` runs with at the Proxy: the user's with HD_SQL_IDENTITY=user, else the service's (undefined). */
export function statementIdentity(sec: DoorSecurity, principal: DoorPrincipal | undefined): SqlUserIdentity | undefined {
  if (sec.identity !== 'user') return undefined;
  const u = principal?.user;
  // checkDoorSecurity made every user carry both; a statement without one is refused by the fetcher.
  return u?.role && u.email ? { name: u.name, role: u.role, email: u.email } : undefined;
}
