/**
 * SCRAM-SHA-256 (RFC 5802 / RFC 7677) as PostgreSQL speaks it, server side: the verifier is derived
 * once from the password (PBKDF2 with a random salt, as PostgreSQL stores it), and each connection
 * runs one `ScramExchange`. Channel binding (SCRAM-SHA-256-PLUS, `tls-server-end-point`) is checked
 * when the exchange is given the connection's binding data (a TLS connection whose client chose
 * -PLUS); otherwise a client that demands it ('p=' gs2 flag) is refused. Malformed client messages are `ScramError`s of kind 'protocol'
 * (08P01); a wrong proof is kind 'auth' (28P01). Nothing in here throws anything else.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

/** The mechanism offered on every connection. */
export const SCRAM_SHA_256 = 'SCRAM-SHA-256';
/** With channel binding: offered on TLS connections. */
export const SCRAM_SHA_256_PLUS = 'SCRAM-SHA-256-PLUS';
/** The one channel binding type served (RFC 5929), the one libpq uses. */
export const TLS_SERVER_END_POINT = 'tls-server-end-point';
/** PostgreSQL's default iteration count (scram_iterations). */
export const SCRAM_ITERATIONS = 4096;

/** What the server keeps instead of the password (PostgreSQL's `rolpassword` for SCRAM). */
export interface ScramVerifier {
  readonly salt: Buffer;
  readonly iterations: number;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

/** A SCRAM message that cannot be accepted: 'protocol' → 08P01, 'auth' (wrong password) → 28P01. */
export class ScramError extends Error {
  override readonly name = 'ScramError';
  constructor(
    readonly kind: 'protocol' | 'auth',
    message: string,
  ) {
    super(message);
  }
}

const hmac = (key: Buffer, data: string | Buffer): Buffer => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();

/**
 * SASLprep (RFC 4013) as far as PostgreSQL's clients need it: non-ASCII spaces map to a space,
 * "mapped to nothing" characters go, the result is NFKC-normalised; a password with prohibited
 * characters is used as its raw bytes, which is what libpq and the PostgreSQL server both do.
 */
export function saslPrep(password: string): string {
  if (/^[\x20-\x7e]*$/.test(password)) return password;
  const mapped = password
    .replace(/[\u00a0\u1680\u2000-\u200b\u202f\u205f\u3000]/g, ' ')
    .replace(/[\u00ad\u034f\u1806\u180b-\u180d\u200c\u200d\u2060\ufe00-\ufe0f\ufeff]/g, '')
    .normalize('NFKC');
  // Prohibited output (controls, private use, surrogates, non-characters): fall back to raw bytes.
  if (/[\u0000-\u001f\u007f-\u009f\u06dd\u070f\u180e\u200e\u200f\u2028-\u202e\u206a-\u206f\ue000-\uf8ff\ufff9-\ufffd\ud800-\udfff]/.test(mapped)) return password;
  return mapped;
}

/** Derives the verifier of a password (PBKDF2-HMAC-SHA-256 over the SASLprep'd password). */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): ScramVerifier {
  const salted = pbkdf2Sync(Buffer.from(saslPrep(password), 'utf8'), salt, iterations, 32, 'sha256');
  return { salt, iterations, storedKey: sha256(hmac(salted, 'Client Key')), serverKey: hmac(salted, 'Server Key') };
}

/** Strict standard base64 (RFC 4648, padded); undefined when `s` is not that. */
function base64(s: string): Buffer | undefined {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return undefined;
  return Buffer.from(s, 'base64');
}

/** Splits `a=v,b=w` into attributes, checking each is one letter and '='. */
function attributes(msg: string, what: string): [string, string][] {
  return msg.split(',').map((part) => {
    if (!/^[A-Za-z]=/.test(part)) throw new ScramError('protocol', `malformed SCRAM ${what}: expected an attribute like "r=...", got ${JSON.stringify(part.slice(0, 20))}`);
    return [part[0] as string, part.slice(2)];
  });
}

/** Printable ASCII except ',' (RFC 5802's nonce alphabet). */
const NONCE = /^[\x21-\x2b\x2d-\x7e]+$/;

/** One connection's SCRAM-SHA-256 conversation. */
export class ScramExchange {
  private step: 'first' | 'final' | 'done' = 'first';
  private gs2Header = '';
  private clientFirstBare = '';
  private serverFirst = '';
  private nonce = '';

  /**
   * @param channelBinding the connection's `tls-server-end-point` data when the client chose
   * SCRAM-SHA-256-PLUS: then the GS2 header must name that binding and c= must carry it
   */
  constructor(
    private readonly verifier: ScramVerifier,
    private readonly serverNonce: string = randomBytes(18).toString('base64'),
    private readonly channelBinding?: Buffer,
  ) {}

  /**
   * The client-first-message (SASLInitialResponse data) → the server-first-message
   * (AuthenticationSASLContinue data). @throws ScramError
   */
  first(data: Buffer): string {
    if (this.step !== 'first') throw new ScramError('protocol', 'SCRAM client-first-message received twice');
    this.step = 'final';
    const msg = utf8(data, 'client-first-message');
    // gs2-header: cbind-flag "," [authzid] ","
    const m = /^([^,]*),([^,]*),/.exec(msg);
    if (!m) throw new ScramError('protocol', 'malformed SCRAM client-first-message: it must start with a GS2 header like "n,,"');
    const flag = m[1] as string;
    if (this.channelBinding !== undefined && flag !== `p=${TLS_SERVER_END_POINT}`) {
      throw new ScramError('protocol', `${SCRAM_SHA_256_PLUS} was chosen, so the GS2 header must be "p=${TLS_SERVER_END_POINT}", got ${JSON.stringify(flag.slice(0, 40))}`);
    }
    if (this.channelBinding === undefined && flag.startsWith('p=')) throw new ScramError('protocol', 'SCRAM channel binding was requested, but this server offers none (no TLS): connect with channel_binding=disable or prefer');
    if (this.channelBinding === undefined && flag !== 'n' && flag !== 'y') throw new ScramError('protocol', `malformed SCRAM GS2 header: channel binding flag ${JSON.stringify(flag)} must be "n", "y" or "p=..."`);
    if (m[2] !== '') throw new ScramError('protocol', 'SCRAM authorization identity (a=) is not supported; leave it empty');
    this.gs2Header = m[0];
    this.clientFirstBare = msg.slice(m[0].length);
    const attrs = attributes(this.clientFirstBare, 'client-first-message');
    if (attrs[0]?.[0] === 'm') throw new ScramError('protocol', 'SCRAM mandatory extensions (m=) are not supported');
    // The user name (n=) is ignored, as PostgreSQL does: the startup message's user is the one checked.
    if (attrs[0]?.[0] !== 'n' || attrs[1]?.[0] !== 'r') throw new ScramError('protocol', 'malformed SCRAM client-first-message: expected "n=<user>,r=<nonce>"');
    const clientNonce = attrs[1][1];
    if (!NONCE.test(clientNonce)) throw new ScramError('protocol', 'malformed SCRAM client nonce: it must be non-empty printable ASCII without ","');
    this.nonce = clientNonce + this.serverNonce;
    this.serverFirst = `r=${this.nonce},s=${this.verifier.salt.toString('base64')},i=${this.verifier.iterations}`;
    return this.serverFirst;
  }

  /**
   * The client-final-message (SASLResponse data) → the server-final-message
   * (AuthenticationSASLFinal data), once the proof is right. @throws ScramError
   */
  final(data: Buffer): string {
    if (this.step !== 'final') throw new ScramError('protocol', this.step === 'first' ? 'SCRAM client-final-message before the client-first-message' : 'SCRAM client-final-message received twice');
    this.step = 'done';
    const msg = utf8(data, 'client-final-message');
    const attrs = attributes(msg, 'client-final-message');
    const [c, r] = attrs;
    const p = attrs[attrs.length - 1];
    if (c?.[0] !== 'c' || r?.[0] !== 'r' || p?.[0] !== 'p' || attrs.length < 3) throw new ScramError('protocol', 'malformed SCRAM client-final-message: expected "c=<binding>,r=<nonce>,...,p=<proof>"');
    const binding = base64(c[1]);
    if (binding === undefined) throw new ScramError('protocol', 'malformed SCRAM client-final-message: c= is not base64');
    const expected = this.channelBinding === undefined ? Buffer.from(this.gs2Header, 'latin1') : Buffer.concat([Buffer.from(this.gs2Header, 'latin1'), this.channelBinding]);
    if (!binding.equals(expected)) throw new ScramError('protocol', 'SCRAM channel binding (c=) does not match the GS2 header of the client-first-message');
    if (r[1] !== this.nonce) throw new ScramError('protocol', 'SCRAM nonce (r=) does not match the one this server sent (a replayed or foreign message?)');
    const proof = base64(p[1]);
    if (proof === undefined || proof.length !== 32) throw new ScramError('protocol', 'malformed SCRAM client-final-message: p= is not a base64 SHA-256 proof');
    const withoutProof = msg.slice(0, msg.length - p[1].length - 3);
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    const signature = hmac(this.verifier.storedKey, authMessage);
    const clientKey = Buffer.alloc(32);
    for (let i = 0; i < 32; i++) clientKey[i] = (proof[i] as number) ^ (signature[i] as number);
    if (!timingSafeEqual(sha256(clientKey), this.verifier.storedKey)) throw new ScramError('auth', 'wrong password');
    return `v=${hmac(this.verifier.serverKey, authMessage).toString('base64')}`;
  }
}

function utf8(data: Buffer, what: string): string {
  const s = data.toString('utf8');
  if (!Buffer.from(s, 'utf8').equals(data) || s.includes('\0')) throw new ScramError('protocol', `malformed SCRAM ${what}: not UTF-8 text`);
  return s;
}
