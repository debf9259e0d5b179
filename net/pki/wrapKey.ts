/**
 * PLATFORM_PKI_WRAP_KEY: the optional AES-256 key that encrypts persisted identity files (the CA's
 * private key, a node's key). Sealed files are AES-256-GCM with a fresh 96-bit IV per write and the
 * file's purpose as additional authenticated data, so a sealed file cannot be swapped for another.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../../lib/atomicFile';

const BEGIN = '-----BEGIN HD WRAPPED SECRET-----';
const END = '-----END HD WRAPPED SECRET-----';
const IV_LEN = 12;
const TAG_LEN = 16;

/** A problem with a wrapped file or the wrap key; the message names the setting or the file. */
export class WrapKeyError extends Error {
  override readonly name = 'WrapKeyError';
}

/**
 * Parses PLATFORM_PKI_WRAP_KEY: 32 bytes written as 64 hex digits or as base64 / base64url.
 * Empty means no wrapping. Anything else is refused with a message naming the setting.
 */
export function parseWrapKey(text: string | undefined, setting = 'PLATFORM_PKI_WRAP_KEY'): Buffer | undefined {
  const t = (text ?? '').trim();
  if (t === '') return undefined;
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === 32) return b;
  }
  throw new WrapKeyError(`${setting} must be a 256-bit AES key: 64 hex digits or 32 bytes in base64 (got ${t.length} characters)`);
}

/** True when `text` is a sealed file's content. */
export function isSealed(text: string): boolean {
  return text.trimStart().startsWith(BEGIN);
}

/** Seals `plain` with `key`; `purpose` is authenticated with it (e.g. `ca.key.pem`). */
export function seal(plain: string, key: Buffer, purpose: string): string {
  const iv = randomBytes(IV_LEN);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(purpose, 'utf8'));
  const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  const body = Buffer.concat([iv, c.getAuthTag(), ct]).toString('base64');
  return `${BEGIN}\n${body.replace(/(.{64})/g, '$1\n').trimEnd()}\n${END}\n`;
}

/** Opens a sealed text; throws {@link WrapKeyError} for a wrong key, another purpose or damage. */
export function unseal(sealed: string, key: Buffer, purpose: string, where = 'sealed file'): string {
  const m = new RegExp(`${BEGIN}([A-Za-z0-9+/=\\s]+)${END}`).exec(sealed);
  const raw = m ? Buffer.from(m[1].replace(/\s+/g, ''), 'base64') : Buffer.alloc(0);
  if (raw.length < IV_LEN + TAG_LEN) throw new WrapKeyError(`${where} is not a valid sealed file`);
  try {
    const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_LEN));
    d.setAAD(Buffer.from(purpose, 'utf8'));
    d.setAuthTag(raw.subarray(IV_LEN, IV_LEN + TAG_LEN));
    return Buffer.concat([d.update(raw.subarray(IV_LEN + TAG_LEN)), d.final()]).toString('utf8');
  } catch {
    throw new WrapKeyError(`cannot decrypt ${where} with PLATFORM_PKI_WRAP_KEY (wrong key or damaged file)`);
  }
}

/**
 * Reads a secret file: sealed files are opened with `key`; a sealed file without a key is an error
 * naming PLATFORM_PKI_WRAP_KEY. Returns the text and whether it was sealed.
 */
export async function readSecretFile(file: string, key: Buffer | undefined, purpose: string): Promise<{ text: string; sealed: boolean }> {
  const content = await readFile(file, 'utf8');
  if (!isSealed(content)) return { text: content, sealed: false };
  if (!key) throw new WrapKeyError(`${file} is encrypted but PLATFORM_PKI_WRAP_KEY is not set`);
  return { text: unseal(content, key, purpose, file), sealed: true };
}

/** Writes a secret file atomically (mode 0600), sealed when `key` is given. */
export async function writeSecretFile(file: string, text: string, key: Buffer | undefined, purpose: string): Promise<void> {
  await writeFileAtomic(file, key ? seal(text, key, purpose) : text, 0o600);
}
