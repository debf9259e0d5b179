/**
 * The password of `hd up`'s SQL doors (HD_SQL_PGWIRE_PASSWORD_FILE: any user name, that password,
 * on the PostgreSQL wire, HTTP Basic and the Flight SQL handshake): made once per data directory
 * (24 random bytes, base64url, mode 0600) and kept across restarts, so a client configured once
 * (PGPASSWORD, ~/.pgpass) keeps working. The ready message prints it with the connection examples.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The user name the examples use (any name is accepted with this password). */
export const SQL_USER = 'hd';

/** `<dataDir>/sql/password`. */
export function sqlPasswordFile(dataDir: string): string {
  return path.join(dataDir, 'sql', 'password');
}

/** Writes a fresh password to {@link sqlPasswordFile} unless one is there; returns the password. */
export function ensureSqlPassword(dataDir: string): string {
  const file = sqlPasswordFile(dataDir);
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    // base64url: no character a shell, a URL (curl -u) or ~/.pgpass would need to escape.
    writeFileSync(file, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  }
  return readSqlPassword(dataDir);
}

/** The password of an earlier start (the first line of the file). */
export function readSqlPassword(dataDir: string): string {
  return (readFileSync(sqlPasswordFile(dataDir), 'utf8').split(/\r?\n/)[0] ?? '').trim();
}
