/** PostgreSQL backend (server → client) messages, serialized. */

/** A field of RowDescription. */
export interface PgField {
  readonly name: string;
  readonly typeOid: number;
  readonly typeSize: number;
  /** atttypmod: `numeric(p,s)` as `(p << 16 | s) + 4`; -1 for none. */
  readonly typeModifier: number;
  readonly format: 0 | 1;
}

/** Fields of an ErrorResponse / NoticeResponse. */
export interface PgErrorFields {
  readonly severity: 'ERROR' | 'FATAL' | 'NOTICE' | 'WARNING';
  readonly code: string;
  readonly message: string;
  readonly position?: number;
  readonly detail?: string;
  readonly hint?: string;
}

function msg(code: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(code, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const cstr = (s: string): Buffer => Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]);
const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const i16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};

/** The backend messages the server sends. */
export const backend = {
  authOk: (): Buffer => msg('R', i32(0)),
  /** AuthenticationSASL: the mechanisms offered, an empty name last. */
  authSasl: (mechanisms: readonly string[]): Buffer => msg('R', Buffer.concat([i32(10), ...mechanisms.map(cstr), Buffer.from([0])])),
  authSaslContinue: (data: string): Buffer => msg('R', Buffer.concat([i32(11), Buffer.from(data, 'utf8')])),
  authSaslFinal: (data: string): Buffer => msg('R', Buffer.concat([i32(12), Buffer.from(data, 'utf8')])),
  parameterStatus: (k: string, v: string): Buffer => msg('S', Buffer.concat([cstr(k), cstr(v)])),
  backendKeyData: (pid: number, secret: number): Buffer => msg('K', Buffer.concat([i32(pid), i32(secret)])),
  readyForQuery: (status: 'I' | 'T' | 'E' = 'I'): Buffer => msg('Z', Buffer.from(status, 'latin1')),
  rowDescription: (fields: readonly PgField[]): Buffer =>
    msg('T', Buffer.concat([i16(fields.length), ...fields.flatMap((f) => [cstr(f.name), i32(0), i16(0), i32(f.typeOid), i16(f.typeSize), i32(f.typeModifier), i16(f.format)])])),
  dataRow: (values: readonly (Buffer | null)[]): Buffer => msg('D', Buffer.concat([i16(values.length), ...values.flatMap((v) => (v === null ? [i32(-1)] : [i32(v.length), v]))])),
  commandComplete: (tag: string): Buffer => msg('C', cstr(tag)),
  emptyQuery: (): Buffer => msg('I', Buffer.alloc(0)),
  parseComplete: (): Buffer => msg('1', Buffer.alloc(0)),
  bindComplete: (): Buffer => msg('2', Buffer.alloc(0)),
  closeComplete: (): Buffer => msg('3', Buffer.alloc(0)),
  noData: (): Buffer => msg('n', Buffer.alloc(0)),
  portalSuspended: (): Buffer => msg('s', Buffer.alloc(0)),
  parameterDescription: (oids: readonly number[]): Buffer => msg('t', Buffer.concat([i16(oids.length), ...oids.map(i32)])),
  copyOutResponse: (columns: number): Buffer => msg('H', Buffer.concat([Buffer.from([0]), i16(columns), ...Array.from({ length: columns }, () => i16(0))])),
  copyData: (data: Buffer): Buffer => msg('d', data),
  copyDone: (): Buffer => msg('c', Buffer.alloc(0)),
  error: (f: PgErrorFields): Buffer => msg('E', fields(f)),
  notice: (f: PgErrorFields): Buffer => msg('N', fields(f)),
};

function fields(f: PgErrorFields): Buffer {
  const parts: Buffer[] = [Buffer.from('S'), cstr(f.severity), Buffer.from('V'), cstr(f.severity), Buffer.from('C'), cstr(f.code), Buffer.from('M'), cstr(f.message)];
  if (f.position !== undefined) parts.push(Buffer.from('P'), cstr(String(f.position)));
  if (f.detail) parts.push(Buffer.from('D'), cstr(f.detail));
  if (f.hint) parts.push(Buffer.from('H'), cstr(f.hint));
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}
