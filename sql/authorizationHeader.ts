/**
 * The `Authorization` header of the HTTP door and of Flight SQL calls: `Basic` (RFC 7617; padded
 * base64 or, as Arrow Flight's Go client sends it, unpadded) or `Bearer` (RFC 6750), read strictly
 * and checked against the door credentials. Anything malformed is a plain refusal with a reason,
 * never an exception.
 */
import { MAX_CREDENTIAL_CHARS, type DoorCredentials, type DoorPrincipal } from './doorUsers';

/** A parsed Authorization header. */
export type Authorization =
  | { readonly scheme: 'basic'; readonly user: string; readonly password: string }
  | { readonly scheme: 'bearer'; readonly token: string }
  | { readonly scheme: 'invalid'; readonly why: string };

/** Longer headers are refused without being decoded. */
const MAX_HEADER_CHARS = 4 * MAX_CREDENTIAL_CHARS;

/** Reads one Authorization header value. */
export function parseAuthorization(value: string): Authorization {
  if (value.length > MAX_HEADER_CHARS) return { scheme: 'invalid', why: `the Authorization header is longer than ${MAX_HEADER_CHARS} characters` };
  const m = /^([A-Za-z]+) +(\S+) *$/.exec(value);
  if (!m) return { scheme: 'invalid', why: 'the Authorization header must be "Basic <base64 user:password>" or "Bearer <token>"' };
  const scheme = (m[1] as string).toLowerCase();
  const arg = m[2] as string;
  if (scheme === 'bearer') return /^[A-Za-z0-9\-._~+/]+=*$/.test(arg) ? { scheme: 'bearer', token: arg } : { scheme: 'invalid', why: 'the bearer token has characters RFC 6750 does not allow' };
  if (scheme !== 'basic') return { scheme: 'invalid', why: `the Authorization scheme "${m[1]}" is not accepted; use Basic or Bearer` };
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(arg) || arg.replace(/=+$/, '').length % 4 === 1 || (arg.includes('=') && arg.length % 4 !== 0)) return { scheme: 'invalid', why: 'the Basic credentials are not base64' };
  const bytes = Buffer.from(arg, 'base64');
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes) || /[\u0000-\u001f\u007f]/.test(text)) return { scheme: 'invalid', why: 'the Basic credentials are not UTF-8 text' };
  const colon = text.indexOf(':');
  if (colon < 0) return { scheme: 'invalid', why: 'the Basic credentials must be user:password' };
  return { scheme: 'basic', user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** Who an Authorization header stands for, or why it does not stand for anyone. */
export function authenticate(credentials: DoorCredentials, header: string | undefined): { principal: DoorPrincipal } | { refused: string } {
  if (header === undefined || header === '') return { refused: 'credentials are required: Authorization: Basic (user and password) or Bearer (a token of the users file)' };
  const a = parseAuthorization(header);
  if (a.scheme === 'invalid') return { refused: a.why };
  if (a.scheme === 'basic') {
    const p = credentials.checkPassword(a.user, a.password);
    return p ? { principal: p } : { refused: `password authentication failed for user "${a.user.slice(0, 128)}"` };
  }
  const p = credentials.checkToken(a.token);
  return p ? { principal: p } : { refused: 'the bearer token is not one of the users file' };
}
