/**
 * What the door-security tests share: a self-signed certificate (openssl), a users file, hd_sql as
 * a real process (`hd run pipelines/sql.yaml`) with no reachable upstream (statements that read no
 * dataset still run, which is all a test of the doors needs), an HTTPS request helper, a Flight
 * client over TLS with metadata, and the ADBC driver.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { newBearerToken, scramSecret } from '../../sql/doorUsers';
import { flightServiceDefinition } from '../../sql/flight/flightServer';
import { cmdDescriptor, dec, ticket } from '../sql/flightClient';
import { flowsSchemaJson } from '../sql/flowsFixture';
import { startHd, type HdProcess } from '../support/hdProcess';

export const ROOT = path.resolve(__dirname, '../..');

/** A self-signed certificate for 127.0.0.1 and localhost (ECDSA P-256, one day). */
export function selfSignedCert(dir: string): { cert: string; key: string; pem: string } {
  const cert = path.join(dir, 'tls.cert.pem');
  const key = path.join(dir, 'tls.key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
  return { cert, key, pem: readFileSync(cert, 'utf8') };
}

/** A test user: name, password (or none), bearer token, role and email. */
export interface TestUser {
  readonly name: string;
  readonly password?: string;
  readonly token: string;
  readonly role: string;
  readonly email: string;
}

/** Writes HD_SQL_USERS_FILE for `users`; returns its path. */
export function writeUsersFile(dir: string, users: readonly TestUser[]): string {
  const file = path.join(dir, 'users.json');
  const entries = users.map((u) => ({ name: u.name, ...(u.password !== undefined && { scram_sha_256: scramSecret(u.password) }), token_sha256: createHash('sha256').update(u.token).digest('hex'), role: u.role, email: u.email }));
  writeFileSync(file, JSON.stringify({ users: entries }, null, 2), { mode: 0o600 });
  return file;
}

/** A fresh bearer token. */
export const freshToken = (): string => newBearerToken().token;

/** The schema directory hd_sql reads (the flows dataset). */
export function schemaDir(dir: string): string {
  const d = path.join(dir, 'schemas');
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'flows.json'), flowsSchemaJson);
  return d;
}

/** hd_sql with `env` over the flows schema, reading from an SCC that is not there. */
export function startSql(dir: string, env: Record<string, string>): HdProcess {
  return startHd(['run', 'pipelines/sql.yaml', '--quiet'], {
    HD_SQL_SCC_TARGETS: '127.0.0.1:9:9',
    HD_SQL_SCHEMA_DIR: schemaDir(dir),
    PLATFORM_DATA_RETURN_HOST: '127.0.0.1',
    PLATFORM_DATA_RETURN_PORT: '0',
    OBSERVABILITY_PORT: '-1',
    HD_SQL_THREADS: '1',
    ...env,
  });
}

/** An HTTP(S) request answered whole (headers may be anything, to attack the door). */
export function request(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string; ca?: string }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(url);
  const options = { host: u.hostname, port: u.port, path: u.pathname, method: opts.method ?? 'GET', headers: opts.headers ?? {}, agent: false, ...(opts.ca && { ca: opts.ca, servername: 'localhost' }) };
  return new Promise((resolve, reject) => {
    const onResponse = (res: http.IncomingMessage): void => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    };
    const req = u.protocol === 'https:' ? https.request(options, onResponse) : http.request(options, onResponse);
    req.on('error', reject);
    req.end(opts.body);
  });
}


/** A query POST with `auth` as its Authorization header (undefined: none). */
export function queryOver(base: string, ca: string | undefined, sql: string, auth?: string, host?: string): ReturnType<typeof request> {
  return request(`${base}/v1/query`, { method: 'POST', ...(ca !== undefined && { ca }), headers: { 'content-type': 'application/json', ...(auth !== undefined && { authorization: auth }), ...(host !== undefined && { host }) }, body: JSON.stringify({ sql }) });
}

/** `Basic` credentials. */
export const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

const Client = grpc.makeGenericClientConstructor(flightServiceDefinition, 'FlightService');
type Raw = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

/** A gRPC status as the client sees it. */
export type Status = { code: number; details: string };

/** A Flight client to `address` (TLS when `ca` is given), its calls carrying `authorization`. */
export function flightClient(address: string, ca?: string): Raw {
  const creds = ca ? grpc.credentials.createSsl(Buffer.from(ca)) : grpc.credentials.createInsecure();
  return new Client(address, creds, ca ? { 'grpc.ssl_target_name_override': 'localhost' } : {}) as unknown as Raw;
}

/** Handshake with an authorization header: the response headers' authorization, or the error. */
export function handshake(c: Raw, authorization?: string): Promise<{ token?: string; err?: Status }> {
  const md = new grpc.Metadata();
  if (authorization !== undefined) md.set('authorization', authorization);
  const call = (c.Handshake as (m: grpc.Metadata) => grpc.ClientDuplexStream<Buffer, Buffer>).call(c, md);
  return new Promise((resolve) => {
    let token: string | undefined;
    call.on('metadata', (m: grpc.Metadata) => (token = m.get('authorization')[0] as string | undefined));
    call.on('data', () => undefined);
    call.on('error', (e: Status) => resolve({ err: e }));
    call.on('end', () => resolve(token !== undefined ? { token } : {}));
    call.end();
  });
}

/** A unary call with an authorization header. */
export function unaryWith(c: Raw, name: 'GetFlightInfo', req: Buffer, authorization?: string): Promise<{ ok?: Buffer; err?: Status }> {
  const md = new grpc.Metadata();
  if (authorization !== undefined) md.set('authorization', authorization);
  return new Promise((resolve) => {
    (c[name] as (r: Buffer, m: grpc.Metadata, cb: (e: Status | null, v?: Buffer) => void) => void).call(c, req, md, (e, v) => resolve(e ? { err: e } : { ok: v as Buffer }));
  });
}

/** Runs ADBC's Flight SQL driver (scripts/flightsql-client.sh) with `steps` and database options. */
export function adbc(python: string, uri: string, steps: unknown[], dbKwargs: Record<string, string>): Promise<{ rows?: unknown[][]; error?: { status: string; message: string } }[]> {
  return new Promise((resolve, reject) => {
    const c = spawn(python, [path.join(ROOT, 'test/sql/clients/flightsql_client.py'), uri, JSON.stringify(dbKwargs)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.once('error', reject);
    c.once('exit', (code: number | null) => (code === 0 ? resolve(JSON.parse(out) as { rows?: unknown[][] }[]) : reject(new Error(`flightsql_client.py exited ${code}: ${err}`))));
    c.stdin.end(JSON.stringify(steps));
  });
}

/** GetFlightInfo then DoGet of its ticket, both with `authorization`: the error, if any. */
export async function runFlightStatement(c: Raw, cmd: Buffer, authorization: string): Promise<Status | undefined> {
  const info = await unaryWith(c, 'GetFlightInfo', cmdDescriptor(cmd), authorization);
  if (info.err) return info.err;
  const fi = dec<{ endpoint: { ticket: { ticket: Uint8Array } }[] }>('arrow.flight.protocol.FlightInfo', info.ok as Buffer);
  const md = new grpc.Metadata();
  md.set('authorization', authorization);
  const call = (c.DoGet as (r: Buffer, m: grpc.Metadata) => grpc.ClientReadableStream<Buffer>).call(c, ticket(fi.endpoint[0]?.ticket.ticket ?? new Uint8Array()), md);
  return new Promise((resolve) => {
    call.on('data', () => undefined);
    call.on('error', (e: Status) => resolve(e));
    call.on('end', () => resolve(undefined));
  });
}
