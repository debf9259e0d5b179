/**
 * SCRAM-SHA-256 on hd_sql's PostgreSQL wire door, byte by byte: the RFC 7677 example through the
 * server's exchange, a whole login over a socket (the server's signature checked), malformed and
 * replayed SASL messages (FATAL 08P01, connection closed, server unharmed), a wrong proof (28P01),
 * and random bytes into the startup/auth parsers and the live door (only protocol errors, never a
 * crash).
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mulberry32 } from '../../lib/mulberry32';
import { FrontendParser, parseSaslInitialResponse, PgProtocolError } from '../../sql/pgwire/frontend';
import { saslPrep, ScramError, ScramExchange, scramVerifier } from '../../sql/pgwire/scram';
import { errorFieldsOf, RawSession, saslInitial, saslResponse, serveDoor, startupMessage, typedMessage } from './pgRawSession';

const PASSWORD = 'pencil';

const randomBuffer = (rnd: () => number, max: number): Buffer => Buffer.from(Array.from({ length: Math.floor(rnd() * max) }, () => Math.floor(rnd() * 256)));

/** The client side of SCRAM-SHA-256, written from RFC 5802 independently of the server's code. */
function clientFinal(password: string, clientFirstBare: string, serverFirst: string, gs2 = 'n,,'): { message: string; serverSignature: string } {
  const attrs = Object.fromEntries(serverFirst.split(',').map((p) => [p[0], p.slice(2)]));
  const salted = pbkdf2Sync(password, Buffer.from(attrs.s as string, 'base64'), Number(attrs.i), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const withoutProof = `c=${Buffer.from(gs2).toString('base64')},r=${attrs.r as string}`;
  const auth = `${clientFirstBare},${serverFirst},${withoutProof}`;
  const sig = createHmac('sha256', storedKey).update(auth).digest();
  const proof = Buffer.from(clientKey.map((b, i) => b ^ (sig[i] as number)));
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return { message: `${withoutProof},p=${proof.toString('base64')}`, serverSignature: `v=${createHmac('sha256', serverKey).update(auth).digest('base64')}` };
}

const unit = suite('SCRAM-SHA-256 exchange');

unit('the RFC 7677 example: the server answers the client-first and accepts the proof with the RFC server signature', () => {
  const v = scramVerifier('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'), 4096);
  const ex = new ScramExchange(v, '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0');
  assert.is(ex.first(Buffer.from('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')), 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096');
  assert.is(
    ex.final(Buffer.from('c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=')),
    'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
  );
});

unit('malformed client messages are protocol errors; a wrong proof is an auth error; steps out of order are refused', () => {
  const v = scramVerifier(PASSWORD);
  const kindOf = (f: () => unknown): string => {
    try {
      f();
      return 'none';
    } catch (e) {
      assert.instance(e, ScramError);
      return `${(e as ScramError).kind}: ${(e as ScramError).message}`;
    }
  };
  const first = (s: string | Buffer): string => kindOf(() => new ScramExchange(v).first(Buffer.from(s)));
  assert.match(first(''), /^protocol: .*GS2 header/);
  assert.match(first('n,,'), /^protocol: malformed SCRAM client-first/);
  assert.match(first('p=tls-server-end-point,,n=,r=abc'), /^protocol: .*channel binding was requested/);
  assert.match(first('x,,n=,r=abc'), /^protocol: .*flag "x"/);
  assert.match(first('n,a=admin,n=,r=abc'), /^protocol: .*authorization identity/);
  assert.match(first('n,,m=ext,n=,r=abc'), /^protocol: .*mandatory extensions/);
  assert.match(first('n,,r=abc,n=u'), /^protocol: .*expected "n=<user>,r=<nonce>"/);
  assert.match(first('n,,n=,r='), /^protocol: .*client nonce/);
  assert.match(first('n,,n=,r=a b'), /^protocol: .*client nonce/);
  assert.match(first(Buffer.from([0x6e, 0x2c, 0x2c, 0x6e, 0x3d, 0xff, 0x2c, 0x72, 0x3d, 0x61])), /^protocol: .*not UTF-8/);
  assert.is(first('y,,n=,r=abc'), 'none');

  const started = (): { ex: ScramExchange; nonce: string } => {
    const ex = new ScramExchange(v);
    const sf = ex.first(Buffer.from('n,,n=,r=clientnonce'));
    return { ex, nonce: (/^r=([^,]+)/.exec(sf) as RegExpExecArray)[1] as string };
  };
  const final = (make: (nonce: string) => string): string => {
    const { ex, nonce } = started();
    return kindOf(() => ex.final(Buffer.from(make(nonce))));
  };
  const proof = Buffer.alloc(32, 7).toString('base64');
  assert.match(final(() => ''), /^protocol: malformed SCRAM client-final/);
  assert.match(final((n) => `r=${n},c=biws,p=${proof}`), /^protocol: .*expected "c=<binding>/);
  assert.match(final((n) => `c=biws,r=${n}`), /^protocol: .*expected "c=<binding>/);
  assert.match(final((n) => `c=bi!s,r=${n},p=${proof}`), /^protocol: .*c= is not base64/);
  assert.match(final((n) => `c=eSws,r=${n},p=${proof}`), /^protocol: .*does not match the GS2 header/);
  assert.match(final(() => `c=biws,r=clientnonceFORGED,p=${proof}`), /^protocol: .*nonce .* does not match/);
  assert.match(final((n) => `c=biws,r=${n},p=not*base64`), /^protocol: .*p= is not a base64/);
  assert.match(final((n) => `c=biws,r=${n},p=${Buffer.alloc(16).toString('base64')}`), /^protocol: .*p= is not a base64 SHA-256 proof/);
  assert.match(final((n) => `c=biws,r=${n},p=${proof}`), /^auth: wrong password/);

  const { ex, nonce } = started();
  const ok = clientFinal(PASSWORD, 'n=,r=clientnonce', `r=${nonce},s=${v.salt.toString('base64')},i=${v.iterations}`);
  assert.is(ex.final(Buffer.from(ok.message)), ok.serverSignature);
  assert.match(kindOf(() => ex.final(Buffer.from(ok.message))), /^protocol: .*received twice/);
  assert.match(kindOf(() => new ScramExchange(v).final(Buffer.from(ok.message))), /^protocol: .*before the client-first/);
  assert.match(kindOf(() => ex.first(Buffer.from('n,,n=,r=x'))), /^protocol: .*received twice/);
});

unit('SASLprep: ASCII unchanged, non-ASCII spaces mapped, NFKC applied, prohibited characters leave the password raw', () => {
  assert.is(saslPrep('c0rrect horse'), 'c0rrect horse');
  assert.is(saslPrep('pass\u00a0word\u00ad'), 'pass word');
  assert.is(saslPrep('\u2168'), 'IX');
  assert.is(saslPrep('bell\u0007'), 'bell\u0007');
  // A non-ASCII password logs in with libpq's SASLprep'd form (checked against the same derivation).
  const v = scramVerifier('p\u00e4ss\u00a0w\u00f6rd');
  const ex = new ScramExchange(v);
  const sf = ex.first(Buffer.from('n,,n=,r=abc'));
  assert.ok(ex.final(Buffer.from(clientFinal('p\u00e4ss w\u00f6rd', 'n=,r=abc', sf).message)).startsWith('v='));
});

unit('fuzz: random and mutated bytes into the startup parser, SASLInitialResponse and the SCRAM steps raise only protocol errors', () => {
  const rnd = mulberry32(7677);
  const v = scramVerifier(PASSWORD, Buffer.alloc(16, 1), 4096);
  const only = (f: () => unknown, ok: (e: unknown) => boolean, what: string): void => {
    try {
      f();
    } catch (e) {
      if (!ok(e)) assert.unreachable(`${what}: threw ${String(e)}`);
    }
  };
  const isProtocol = (e: unknown): boolean => e instanceof PgProtocolError;
  const isScram = (e: unknown): boolean => e instanceof ScramError;
  const validFirst = Buffer.from('n,,n=,r=fuzznonce');
  const serverFirst = new ScramExchange(v, 'SRV').first(validFirst);
  const validFinal = Buffer.from(clientFinal(PASSWORD, 'n=,r=fuzznonce', serverFirst).message);
  const mutate = (b: Buffer): Buffer => {
    const m = Buffer.from(b);
    for (let k = 0; k < 1 + Math.floor(rnd() * 3); k++) if (m.length > 0) m[Math.floor(rnd() * m.length)] = Math.floor(rnd() * 256);
    return rnd() < 0.3 ? m.subarray(0, Math.floor(rnd() * m.length)) : m;
  };
  for (let i = 0; i < 3000; i++) {
    const bytes = randomBuffer(rnd, 64);
    only(() => new FrontendParser().push(bytes), isProtocol, `startup parser on ${bytes.toString('hex')}`);
    // A plausible length prefix, so the body parsers run on random bodies too.
    const framed = Buffer.concat([Buffer.from([0, 0, 0, bytes.length + 4]), bytes]);
    only(() => new FrontendParser().push(framed), isProtocol, `startup parser on ${framed.toString('hex')}`);
    const p = new FrontendParser();
    p.push(startupMessage({ user: 'u' }));
    only(() => p.push(typedMessage(String.fromCharCode(Math.floor(rnd() * 128)), bytes)), isProtocol, `typed parser on ${bytes.toString('hex')}`);
    only(() => parseSaslInitialResponse(bytes), isProtocol, `SASLInitialResponse on ${bytes.toString('hex')}`);
    only(() => new ScramExchange(v).first(bytes), isScram, `client-first ${bytes.toString('hex')}`);
    only(() => new ScramExchange(v).first(mutate(validFirst)), isScram, 'mutated client-first');
    const ex = new ScramExchange(v, 'SRV');
    ex.first(validFirst);
    const bad = rnd() < 0.5 ? bytes : mutate(validFinal);
    only(() => ex.final(bad), isScram, `client-final ${bad.toString('hex')}`);
  }
});

const door = suite('SCRAM-SHA-256 on the wire');
const server = serveDoor(door, 30, { password: PASSWORD });

/** Opens a session, sends the startup and expects AuthenticationSASL offering SCRAM-SHA-256 only. */
async function saslSession(): Promise<RawSession> {
  const s = await RawSession.open(server.port);
  s.send(startupMessage({ user: 'tester', database: 'hd' }));
  const m = await s.next();
  assert.ok(m !== 'closed' && m.type === 'R', 'an authentication request');
  assert.is((m as { body: Buffer }).body.readInt32BE(0), 10, 'AuthenticationSASL');
  assert.equal((m as { body: Buffer }).body.subarray(4).toString('latin1'), 'SCRAM-SHA-256\0\0');
  return s;
}

/** Sends the client-first; returns the server-first of AuthenticationSASLContinue. */
async function serverFirstOf(s: RawSession, clientFirst: string): Promise<string> {
  s.send(saslInitial('SCRAM-SHA-256', clientFirst));
  const m = await s.next();
  assert.ok(m !== 'closed' && m.type === 'R' && m.body.readInt32BE(0) === 11, 'AuthenticationSASLContinue');
  return (m as { body: Buffer }).body.subarray(4).toString('utf8');
}

/** The FATAL error the server ends with, after which it closes the connection. */
async function fatalOf(s: RawSession): Promise<Record<string, string>> {
  const m = await s.next();
  assert.ok(m !== 'closed' && m.type === 'E', `an ErrorResponse, got ${m === 'closed' ? 'the close' : m.type}`);
  const f = errorFieldsOf((m as { body: Buffer }).body);
  assert.is(f.S, 'FATAL');
  assert.ok(await s.closedByServer());
  return f;
}

/** A whole login; returns the client-final sent, for replays. */
async function login(password = PASSWORD): Promise<{ s: RawSession; final: string }> {
  const s = await saslSession();
  const sf = await serverFirstOf(s, 'n,,n=,r=wirenonce');
  const cf = clientFinal(password, 'n=,r=wirenonce', sf);
  s.send(saslResponse(cf.message));
  if (password !== PASSWORD) return { s, final: cf.message };
  const fin = await s.next();
  assert.ok(fin !== 'closed' && fin.type === 'R' && fin.body.readInt32BE(0) === 12, 'AuthenticationSASLFinal');
  assert.is((fin as { body: Buffer }).body.subarray(4).toString('utf8'), cf.serverSignature, 'the server proves it knows the password too');
  const ok = await s.next();
  assert.ok(ok !== 'closed' && ok.type === 'R' && ok.body.readInt32BE(0) === 0, 'AuthenticationOk');
  assert.ok((await s.until('Z')) !== 'closed');
  return { s, final: cf.message };
}

door('a whole login: SASL, SASLContinue (r, s, i), SASLFinal with the right server signature, then queries', async () => {
  const { s } = await login();
  s.send(typedMessage('Q', Buffer.from('SELECT 41 + 1 AS n\0')));
  const row = await s.until('D');
  assert.ok(row !== 'closed' && row.body.subarray(6).toString() === '42');
  s.end();
});

door('a wrong password: FATAL 28P01 with a hint, connection closed', async () => {
  const { s } = await login('pencil2');
  const f = await fatalOf(s);
  assert.is(f.C, '28P01');
  assert.is(f.M, 'password authentication failed for user "tester"');
  assert.match(f.H ?? '', /HD_SQL_PGWIRE_PASSWORD_FILE/);
});

door('malformed SASL messages: FATAL 08P01 naming the fault, connection closed, the server unharmed', async () => {
  const cases: [string, (s: RawSession) => Promise<void>, RegExp][] = [
    ['wrong mechanism', async (s) => s.send(saslInitial('SCRAM-SHA-1', 'n,,n=,r=abc')), /mechanism "SCRAM-SHA-1" is not offered/],
    ['PLUS mechanism', async (s) => s.send(saslInitial('SCRAM-SHA-256-PLUS', 'p=tls-server-end-point,,n=,r=abc')), /is not offered/],
    ['no initial data', async (s) => s.send(saslInitial('SCRAM-SHA-256', null)), /carries no SCRAM client-first-message/],
    ['data length past the end', async (s) => s.send(typedMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), Buffer.from([0, 0, 0, 50]), Buffer.from('n,,n=,r=abc')]))), /ends early/],
    ['bytes after the data', async (s) => s.send(typedMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), Buffer.from([0, 0, 0, 3]), Buffer.from('n,,XYZ')]))), /bytes after the end/],
    ['mechanism not NUL-terminated', async (s) => s.send(typedMessage('p', Buffer.from('SCRAM-SHA-256'))), /not NUL-terminated/],
    ['negative data length', async (s) => s.send(typedMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), Buffer.from([0xff, 0xff, 0xff, 0xf0])]))), /bad data length/],
    ['channel binding demanded', async (s) => s.send(saslInitial('SCRAM-SHA-256', 'p=tls-server-end-point,,n=,r=abc')), /channel binding was requested.*channel_binding=disable/],
    ['authorization identity', async (s) => s.send(saslInitial('SCRAM-SHA-256', 'n,a=root,n=,r=abc')), /authorization identity/],
    ['garbage client-first', async (s) => s.send(saslInitial('SCRAM-SHA-256', 'hello')), /GS2 header/],
    ['a query instead of a SASL response', async (s) => s.send(typedMessage('Q', Buffer.from('SELECT 1\0'))), /expected a SASL response.*got query/],
    ['a cut message length', async (s) => s.send(Buffer.from([0x70, 0, 0, 0, 1])), /length 1 is out of range/],
    [
      'bad nonce in the final',
      async (s) => {
        const sf = await serverFirstOf(s, 'n,,n=,r=abc');
        s.send(saslResponse(`c=biws,r=abcFORGED,${clientFinal(PASSWORD, 'n=,r=abc', sf).message.split(',')[2] as string}`));
      },
      /nonce \(r=\) does not match/,
    ],
    [
      'bad base64 proof',
      async (s) => {
        const sf = await serverFirstOf(s, 'n,,n=,r=abc');
        s.send(saslResponse(`c=biws,${sf.split(',')[0] as string},p=%%%%`));
      },
      /p= is not a base64/,
    ],
    [
      'bad base64 binding',
      async (s) => {
        const sf = await serverFirstOf(s, 'n,,n=,r=abc');
        s.send(saslResponse(`c=b,${sf.split(',')[0] as string},p=${Buffer.alloc(32).toString('base64')}`));
      },
      /c= is not base64/,
    ],
    [
      'a cut final',
      async (s) => {
        const sf = await serverFirstOf(s, 'n,,n=,r=abc');
        s.send(saslResponse(clientFinal(PASSWORD, 'n=,r=abc', sf).message.slice(0, 20)));
      },
      /malformed SCRAM client-final/,
    ],
  ];
  for (const [name, act, re] of cases) {
    const s = await saslSession();
    await act(s);
    const f = await fatalOf(s);
    assert.is(f.C, '08P01', name);
    assert.match(f.M ?? '', /^protocol violation: /, name);
    assert.match(f.M ?? '', re, `${name}: ${f.M}`);
  }
  const { s } = await login();
  s.end();
});

door('a replayed client-final: refused on a new connection (its nonce is stale) and after the login', async () => {
  const { s, final } = await login();
  // The same final again on the logged-in connection: a protocol violation, not a second login.
  s.send(saslResponse(final));
  const f = await fatalOf(s);
  assert.is(f.C, '08P01');
  // On a new connection, after the same client-first: the server's nonce differs, so the old proof is worthless.
  const s2 = await saslSession();
  await serverFirstOf(s2, 'n,,n=,r=wirenonce');
  s2.send(saslResponse(final));
  const f2 = await fatalOf(s2);
  assert.is(f2.C, '08P01');
  assert.match(f2.M ?? '', /nonce .* does not match/);
});

door('fuzz on the live door: random bytes after the startup get 08P01 / 28P01 or nothing, never a crash', async () => {
  const rnd = mulberry32(5802);
  for (let i = 0; i < 40; i++) {
    const s = await saslSession();
    const bytes = randomBuffer(rnd, 80);
    // Half the cases look like SASL messages, so the SCRAM code sees the random bytes.
    s.send(i % 2 === 0 ? bytes : i % 4 === 1 ? saslInitial('SCRAM-SHA-256', bytes) : typedMessage('p', bytes));
    // Bytes that leave a message incomplete get no answer; ending our side makes the server close.
    s.finish();
    const m = await s.next();
    if (m !== 'closed') {
      if (m.type === 'R') assert.is(m.body.readInt32BE(0), 11, 'only a SASLContinue can follow random bytes that happened to parse');
      else {
        assert.is(m.type, 'E');
        assert.ok(['08P01', '28P01'].includes(errorFieldsOf(m.body).C ?? ''), `code ${errorFieldsOf(m.body).C}`);
      }
    }
    s.end();
  }
  const { s } = await login();
  s.end();
});

unit.run();
door.run();
