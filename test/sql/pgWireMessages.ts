/**
 * Frontend messages built by hand and backend messages decoded, for byte-level tests of the wire
 * door's protocol (test/sql/pgProtocol.test.ts): one round trip reads every message up to
 * ReadyForQuery, decoded into what a test asserts on.
 */
import { errorFieldsOf, RawSession, typedMessage, type BackendMessage } from './pgRawSession';

const i16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** Frontend messages. */
export const fe = {
  query: (sql: string): Buffer => typedMessage('Q', Buffer.from(`${sql}\0`)),
  parse: (name: string, sql: string, oids: readonly number[] = []): Buffer => typedMessage('P', Buffer.concat([Buffer.from(`${name}\0${sql}\0`), i16(oids.length), ...oids.map(i32)])),
  /** Bind with text parameters (null: NULL) and `formats` for the results. */
  bind: (portal: string, statement: string, params: readonly (string | null)[] = [], formats: readonly number[] = []): Buffer =>
    typedMessage('B', Buffer.concat([Buffer.from(`${portal}\0${statement}\0`), i16(0), i16(params.length), ...params.flatMap((p) => (p === null ? [i32(-1)] : [i32(Buffer.byteLength(p)), Buffer.from(p)])), i16(formats.length), ...formats.map(i16)])),
  describe: (target: 'S' | 'P', name: string): Buffer => typedMessage('D', Buffer.from(`${target}${name}\0`)),
  execute: (portal: string, maxRows = 0): Buffer => typedMessage('E', Buffer.concat([Buffer.from(`${portal}\0`), i32(maxRows)])),
  close: (target: 'S' | 'P', name: string): Buffer => typedMessage('C', Buffer.from(`${target}${name}\0`)),
  sync: (): Buffer => typedMessage('S', Buffer.alloc(0)),
};

/** A RowDescription field. */
export interface Field {
  readonly name: string;
  readonly oid: number;
  readonly size: number;
  readonly typmod: number;
  readonly format: number;
}

/** A decoded backend message. */
export type Msg =
  | { readonly type: 'T'; readonly fields: Field[] }
  | { readonly type: 'D'; readonly cells: (string | null)[] }
  | { readonly type: 'C'; readonly tag: string }
  | { readonly type: 'E' | 'N'; readonly f: Record<string, string> }
  | { readonly type: 'S'; readonly name: string; readonly value: string }
  | { readonly type: 'Z'; readonly status: string }
  | { readonly type: string };

/** Decodes one backend message. */
export function decode(m: BackendMessage): Msg {
  const b = m.body;
  switch (m.type) {
    case 'T': {
      const fields: Field[] = [];
      let at = 2;
      for (let i = 0; i < b.readInt16BE(0); i++) {
        const end = b.indexOf(0, at);
        const name = b.toString('utf8', at, end);
        at = end + 1 + 6;
        fields.push({ name, oid: b.readInt32BE(at), size: b.readInt16BE(at + 4), typmod: b.readInt32BE(at + 6), format: b.readInt16BE(at + 10) });
        at += 12;
      }
      return { type: 'T', fields };
    }
    case 'D': {
      const cells: (string | null)[] = [];
      let at = 2;
      for (let i = 0; i < b.readInt16BE(0); i++) {
        const len = b.readInt32BE(at);
        cells.push(len < 0 ? null : b.toString('utf8', at + 4, at + 4 + len));
        at += 4 + Math.max(0, len);
      }
      return { type: 'D', cells };
    }
    case 'C':
      return { type: 'C', tag: b.toString('utf8', 0, b.length - 1) };
    case 'E':
    case 'N':
      return { type: m.type, f: errorFieldsOf(b) };
    case 'S': {
      const end = b.indexOf(0);
      return { type: 'S', name: b.toString('utf8', 0, end), value: b.toString('utf8', end + 1, b.length - 1) };
    }
    case 'Z':
      return { type: 'Z', status: String.fromCharCode(b[0] as number) };
    default:
      return { type: m.type };
  }
}

/** Every message up to and including the next ReadyForQuery. @throws when the server closes first */
export async function untilReady(s: RawSession): Promise<Msg[]> {
  const out: Msg[] = [];
  for (;;) {
    const m = await s.next();
    if (m === 'closed') throw new Error(`the server closed the connection after ${JSON.stringify(out)}`);
    const d = decode(m);
    out.push(d);
    if (d.type === 'Z') return out;
  }
}

/** Sends `bufs` and reads up to ReadyForQuery. */
export async function roundTrip(s: RawSession, ...bufs: Buffer[]): Promise<Msg[]> {
  s.send(...bufs);
  return untilReady(s);
}

/** A compact view of a round trip: `T:a,b`, `D:1|x`, `C:SELECT 1`, `E:25P02`, `N:25P01`, `S:name=value`, `Z:T`, `s`, ... */
export function summary(msgs: readonly Msg[]): string[] {
  return msgs.map((m) => {
    if ('fields' in m) return `T:${m.fields.map((f) => f.name).join(',')}`;
    if ('cells' in m) return `D:${m.cells.map((c) => c ?? 'NULL').join('|')}`;
    if ('tag' in m) return `C:${m.tag}`;
    if ('f' in m) return `${m.type}:${m.f.C}`;
    if ('name' in m && 'value' in m) return `S:${m.name}=${m.value}`;
    if ('status' in m) return `Z:${m.status}`;
    return m.type;
  });
}
