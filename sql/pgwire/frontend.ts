/**
 * PostgreSQL frontend (client → server) messages: a parser that keeps a cursor over partial input
 * and yields only whole messages (pg-protocol's shape). Every length is checked before it is
 * trusted; a malformed message is a PgProtocolError and the connection is closed by the server.
 */
import { ByteQueue } from './byteQueue';

/** Protocol version 3.0, the only one served. */
export const PROTOCOL_3 = 196608;
/** Codes of the untyped startup-phase requests. */
export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;
/** Largest message accepted (1 GiB is PostgreSQL's own limit; we keep statements far smaller). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/**
 * Largest message before the login is done (PostgreSQL's MAX_STARTUP_PACKET_LENGTH): the startup
 * packet always, and password / SASL messages until authentication completes. An unauthenticated
 * client cannot make the server buffer more.
 */
export const MAX_STARTUP_BYTES = 10_000;

/** A frontend message. */
export type FrontendMessage =
  | { readonly kind: 'startup'; readonly params: Readonly<Record<string, string>> }
  | { readonly kind: 'sslRequest' }
  | { readonly kind: 'gssencRequest' }
  | { readonly kind: 'cancelRequest'; readonly processId: number; readonly secretKey: number }
  /** 'p': PasswordMessage, SASLInitialResponse or SASLResponse; which one depends on the auth step. */
  | { readonly kind: 'authResponse'; readonly data: Buffer } // 'p'
  | { readonly kind: 'query'; readonly sql: string } // 'Q'
  | { readonly kind: 'parse'; readonly name: string; readonly sql: string; readonly paramTypes: readonly number[] } // 'P'
  | { readonly kind: 'bind'; readonly portal: string; readonly statement: string; readonly paramFormats: readonly number[]; readonly params: readonly (Buffer | null)[]; readonly resultFormats: readonly number[] } // 'B'
  | { readonly kind: 'describe'; readonly target: 'S' | 'P'; readonly name: string } // 'D'
  | { readonly kind: 'execute'; readonly portal: string; readonly maxRows: number } // 'E'
  | { readonly kind: 'close'; readonly target: 'S' | 'P'; readonly name: string } // 'C'
  | { readonly kind: 'sync' } // 'S'
  | { readonly kind: 'flush' } // 'H'
  | { readonly kind: 'terminate' } // 'X'
  | { readonly kind: 'copyFail' } // 'f', 'd', 'c' refused: no COPY FROM
  | { readonly kind: 'other'; readonly code: string };

/** Bytes that are not a valid frontend message. */
export class PgProtocolError extends Error {
  override readonly name = 'PgProtocolError';
}

/** A bounded reader over one message body. */
class Body {
  private at = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly what: string,
  ) {}
  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.at);
    this.at += 2;
    return v;
  }
  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  byte(): string {
    this.need(1);
    return String.fromCharCode(this.buf[this.at++] as number);
  }
  cstring(): string {
    const end = this.buf.indexOf(0, this.at);
    if (end < 0) throw new PgProtocolError(`${this.what}: a string is not NUL-terminated`);
    const s = this.buf.toString('utf8', this.at, end);
    this.at = end + 1;
    return s;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return Buffer.from(b);
  }
  /** Everything not yet read. */
  rest(): Buffer {
    const b = Buffer.from(this.buf.subarray(this.at));
    this.at = this.buf.length;
    return b;
  }
  /** Throws unless every byte was read. */
  end(): void {
    if (this.at !== this.buf.length) throw new PgProtocolError(`${this.what}: ${this.buf.length - this.at} bytes after the end of the message`);
  }
  count(): number {
    const n = this.int16();
    if (n < 0) throw new PgProtocolError(`${this.what}: negative count ${n}`);
    return n;
  }
  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new PgProtocolError(`${this.what}: message ends early`);
  }
}

function parseTyped(code: string, body: Body): FrontendMessage {
  switch (code) {
    case 'p':
      return { kind: 'authResponse', data: body.rest() };
    case 'Q':
      return { kind: 'query', sql: body.cstring() };
    case 'P': {
      const name = body.cstring();
      const sql = body.cstring();
      const n = body.count();
      const paramTypes = Array.from({ length: n }, () => body.int32());
      return { kind: 'parse', name, sql, paramTypes };
    }
    case 'B': {
      const portal = body.cstring();
      const statement = body.cstring();
      const paramFormats = Array.from({ length: body.count() }, () => body.int16());
      const params = Array.from({ length: body.count() }, () => {
        const len = body.int32();
        if (len < -1) throw new PgProtocolError(`Bind: bad parameter length ${len}`);
        return len === -1 ? null : body.bytes(len);
      });
      const resultFormats = Array.from({ length: body.count() }, () => body.int16());
      return { kind: 'bind', portal, statement, paramFormats, params, resultFormats };
    }
    case 'D':
    case 'C': {
      const t = body.byte();
      if (t !== 'S' && t !== 'P') throw new PgProtocolError(`${code === 'D' ? 'Describe' : 'Close'}: target must be 'S' or 'P', got ${JSON.stringify(t)}`);
      return { kind: code === 'D' ? 'describe' : 'close', target: t, name: body.cstring() };
    }
    case 'E':
      return { kind: 'execute', portal: body.cstring(), maxRows: body.int32() };
    case 'S':
      return { kind: 'sync' };
    case 'H':
      return { kind: 'flush' };
    case 'X':
      return { kind: 'terminate' };
    case 'f':
    case 'd':
    case 'c':
      return { kind: 'copyFail' };
    default:
      return { kind: 'other', code };
  }
}

/** Splits a byte stream into frontend messages; `startup` until the startup message is read. */
export class FrontendParser {
  /** Received bytes not yet parsed, as the chunks they came in (no concat per chunk: a slow drip stays linear). */
  private readonly queue = new ByteQueue();
  private startup = true;
  /**
   * Longest typed message accepted (the server lowers it to {@link MAX_STARTUP_BYTES} until the
   * login is done). A message whose length says more is refused as soon as its length is read,
   * before any of its body is buffered. Startup-phase packets are always capped at
   * {@link MAX_STARTUP_BYTES}, whatever this says.
   */
  maxMessageBytes = MAX_MESSAGE_BYTES;

  /** Bytes received that do not yet make a whole message. */
  get pending(): number {
    return this.queue.length;
  }

  /** Adds bytes and returns the whole messages they complete. @throws PgProtocolError */
  push(chunk: Buffer): FrontendMessage[] {
    this.queue.push(chunk);
    const out: FrontendMessage[] = [];
    for (;;) {
      const head = this.startup ? 4 : 5;
      if (this.queue.length < head) break;
      const len = this.queue.int32At(head - 4);
      checkLength(len, this.startup ? MAX_STARTUP_BYTES : this.maxMessageBytes, this.startup);
      const total = head - 4 + len;
      if (this.queue.length < total) break;
      const code = this.startup ? '' : String.fromCharCode(this.queue.byteAt(0));
      this.queue.take(head);
      const body = this.queue.take(total - head);
      if (this.startup) {
        const m = parseStartup(body);
        if (m.kind === 'startup' || m.kind === 'cancelRequest') this.startup = false;
        out.push(m);
      } else {
        out.push(parseTyped(code, new Body(body, code)));
      }
    }
    return out;
  }
}

/**
 * Refuses a message length below the smallest message (8 for a startup packet: length and code; 4
 * for a typed one: the length itself) or above `max`. @throws PgProtocolError
 */
export function checkLength(len: number, max: number, startup: boolean): void {
  const min = startup ? 8 : 4;
  if (len < min || len > max) {
    const phase = startup ? 'startup packet' : 'message';
    throw new PgProtocolError(`${phase} length ${len} is out of range (${min}..${max}${max < MAX_MESSAGE_BYTES ? ' before the login is done' : ''})`);
  }
}

function parseStartup(body: Buffer): FrontendMessage {
  const b = new Body(body, 'startup');
  const code = b.int32();
  if (code === SSL_REQUEST) return { kind: 'sslRequest' };
  if (code === GSSENC_REQUEST) return { kind: 'gssencRequest' };
  if (code === CANCEL_REQUEST) return { kind: 'cancelRequest', processId: b.int32(), secretKey: b.int32() };
  if (code !== PROTOCOL_3) throw new PgProtocolError(`unsupported protocol ${code >> 16}.${code & 0xffff}: only 3.0 is served`);
  const params: Record<string, string> = {};
  for (;;) {
    const k = b.cstring();
    if (k === '') break;
    params[k] = b.cstring();
  }
  return { kind: 'startup', params };
}

/** A SASLInitialResponse: the mechanism chosen and its first message (null: none sent). */
export interface SaslInitialResponse {
  readonly mechanism: string;
  readonly data: Buffer | null;
}

/** Reads the body of a 'p' message sent as SASLInitialResponse. @throws PgProtocolError */
export function parseSaslInitialResponse(data: Buffer): SaslInitialResponse {
  const b = new Body(data, 'SASLInitialResponse');
  const mechanism = b.cstring();
  const len = b.int32();
  if (len < -1) throw new PgProtocolError(`SASLInitialResponse: bad data length ${len}`);
  const out = len === -1 ? null : b.bytes(len);
  b.end();
  return { mechanism, data: out };
}
