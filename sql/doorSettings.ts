/**
 * The doors' security settings as hd_sql reads them at start (HD_SQL_USERS_FILE,
 * HD_SQL_PGWIRE_PASSWORD_FILE, HD_SQL_TLS_*, HD_SQL_IDENTITY, HD_SQL_HTTP_ALLOWED_HOSTS), turned
 * into a {@link DoorSecurity}; every fault names the variable. The certificate of the service's DMS
 * identity (HD_SQL_TLS_FROM_IDENTITY) joins once the identity runs ({@link withIdentityTls}).
 */
import path from 'node:path';
import type { DoorSecurity } from './doorSecurity';
import { DoorTls, type DoorTlsMaterial } from './doorTls';
import { DoorCredentials, readUsersFile } from './doorUsers';
import { parseAllowedHosts } from './hostAllowList';
import { readPasswordFile } from './serverSettings';

/** The settings, as the `sqlServer` stage has them (empty text: unset). */
export interface DoorSettingsText {
  readonly users_file: string;
  readonly pgwire_password_file: string;
  readonly tls_cert_file: string;
  readonly tls_key_file: string;
  readonly tls_from_identity: boolean;
  readonly tls_required: boolean;
  readonly identity: string;
  readonly http_allowed_hosts: string;
}

/** Reads the files the settings name; `hasIdentity`: the service has a DMS identity (HD_DMS_*). */
export function doorSecurityOf(c: DoorSettingsText, hasIdentity: boolean): DoorSecurity {
  if (c.users_file !== '' && c.pgwire_password_file !== '') {
    throw new Error('set HD_SQL_USERS_FILE (users, each with a password or token) or HD_SQL_PGWIRE_PASSWORD_FILE (one password, any user name), not both');
  }
  const credentials =
    c.users_file !== ''
      ? DoorCredentials.users(readUsersFile(path.resolve(c.users_file), 'HD_SQL_USERS_FILE'))
      : c.pgwire_password_file !== ''
        ? DoorCredentials.password(readPasswordFile(path.resolve(c.pgwire_password_file), 'HD_SQL_PGWIRE_PASSWORD_FILE'))
        : undefined;
  if ((c.tls_cert_file === '') !== (c.tls_key_file === '')) throw new Error('HD_SQL_TLS_CERT_FILE and HD_SQL_TLS_KEY_FILE go together: set both (the certificate chain and its key, PEM) or neither');
  if (c.tls_from_identity && c.tls_cert_file !== '') throw new Error('set HD_SQL_TLS_CERT_FILE/HD_SQL_TLS_KEY_FILE or HD_SQL_TLS_FROM_IDENTITY=true, not both');
  if (c.tls_from_identity && !hasIdentity) throw new Error('HD_SQL_TLS_FROM_IDENTITY=true serves the certificate the DMS issued to hd_sql: set HD_DMS_ENDPOINT, HD_DMS_CA_FILE, HD_DMS_CLIENT_CERT_FILE and HD_DMS_CLIENT_KEY_FILE');
  if (c.identity !== 'service' && c.identity !== 'user') throw new RangeError(`HD_SQL_IDENTITY must be "service" (the Proxy sees the service's identity) or "user" (each SQL user's role and email), got "${c.identity}"`);
  const tls = c.tls_cert_file !== '' ? DoorTls.fromFiles(path.resolve(c.tls_cert_file), path.resolve(c.tls_key_file)) : undefined;
  return {
    ...(credentials && { credentials }),
    ...(tls && { tls }),
    ...(c.tls_required && { tlsRequired: true }),
    identity: c.identity,
    httpAllowedHosts: parseAllowedHosts(c.http_allowed_hosts, 'HD_SQL_HTTP_ALLOWED_HOSTS'),
  };
}

/** The doors serving the service identity's certificate (renewals included) when HD_SQL_TLS_FROM_IDENTITY asks for it. */
export function withIdentityTls(sec: DoorSecurity, fromIdentity: boolean, material: DoorTlsMaterial | undefined): DoorSecurity {
  if (!fromIdentity || !material) return sec;
  return { ...sec, tls: new DoorTls(material, "the service's DMS-issued certificate (HD_SQL_TLS_FROM_IDENTITY; renewed without a restart)") };
}
