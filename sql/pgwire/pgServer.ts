/**
 * hd_sql's PostgreSQL wire door: startup (SSLRequest → TLS when the doors have a certificate, else
 * 'N'), SCRAM-SHA-256 login (and SCRAM-SHA-256-PLUS over TLS) when credentials are set, simple query, the extended protocol (Parse/Bind/Describe/Execute/Sync/Close,
 * text and binary parameters and results), CancelRequest, `COPY (query) TO STDOUT`, notices, and
 * ErrorResponse with the reference's SQLSTATEs. It reports itself as PostgreSQL 16 so drivers work.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import type * as arrow from 'apache-arrow';
import type { SqlParam } from '../../local/localSqlSession';
import type { SqlEngine } from '../sqlEngine';
import { isLoopback, statementIdentity, type DoorSecurity } from '../doorSecurity';
import { socketEndPoint } from '../doorTls';
import { DoorCredentials, type DoorPrincipal } from '../doorUsers';
import { SqlError } from '../sqlError';
import { runAsSqlUser, type SqlUserIdentity } from '../sqlUser';
import { DataRowWriter } from './dataRows';
import { ConnectionGate, doorLimitsOf, type DoorLimits, type SendBacklog } from '../doorLimits';
import { admitConnection, belowHighWater, loginDeadline } from './pgLimits';
import { backend, type PgErrorFields } from './backend';
import { FrontendParser, MAX_MESSAGE_BYTES, MAX_STARTUP_BYTES, PgProtocolError, type FrontendMessage } from './frontend';
import { LOGIN_HINTS, SaslLogin } from './saslLogin';
import { EXTRA_SETTINGS, sessionAnswer, SessionSettings } from './sessionQueries';
import { COPY_TO_STDOUT, paramCount, SESSION_STATEMENT, tagOf } from './statementKinds';
import { PgBinaryError } from './pgBinary';
import { binaryOf, fieldsOf, paramOf, textOf } from './pgTypes';

/** What the server reports as server_version (drivers parse the leading number). */
export const SERVER_VERSION = '16.0 (hd_sql)';

/** Settings of the door. */
export interface PgServerOptions {
  readonly host: string;
  readonly port: number;
  /** The password of HD_SQL_PGWIRE_PASSWORD_FILE (any user name); ignored when `security` has credentials. */
  readonly password?: string;
  /** Credentials, TLS and identity of the doors (sql/doorSecurity.ts). */
  readonly security?: DoorSecurity;
  readonly log?: (line: string) => void;
  /** Connections, login time, prepared statements, send backlog (sql/doorLimits.ts); absent: the defaults. */
  readonly limits?: Partial<DoorLimits>;
  /** Where the send backlog of each connection is reported (/metrics). */
  readonly backlog?: SendBacklog;
}

interface Statement {
  readonly sql: string;
  readonly paramTypes: readonly number[];
}
interface Portal {
  readonly statement: Statement;
  readonly params: SqlParam[];
  readonly resultFormats: readonly number[];
  result?: Answer;
  sent: number;
}

/** What a statement answered: the engine's result, or a session question's (sessionQueries.ts). */
interface Answer {
  readonly table: arrow.Table;
  readonly notices: readonly string[];
}

function errorFields(err: unknown): PgErrorFields {
  if (err instanceof PgBinaryError) return { severity: 'ERROR', code: '22P03', message: `invalid binary parameter: ${err.message}` };
  if (err instanceof SqlError) return { severity: 'ERROR', code: err.codes.sqlstate, message: err.message, ...(err.position !== undefined ? { position: err.position } : {}) };
  return { severity: 'ERROR', code: 'XX000', message: err instanceof Error ? err.message : String(err) };
}

export { paramCount } from './statementKinds';

/** The PostgreSQL wire listener. */
export class PgServer {
  private server: net.Server | undefined;
  private readonly connections = new Map<number, PgConnection>();
  /** Derived once: what PostgreSQL would store for each password (the password itself is not kept per connection). */
  private readonly credentials: DoorCredentials | undefined;
  /** HD_SQL_MAX_CONNECTIONS: every connection counts, logged in or not. */
  private readonly gate: ConnectionGate;

  constructor(
    private readonly engine: SqlEngine,
    private readonly options: PgServerOptions,
  ) {
    this.gate = new ConnectionGate(doorLimitsOf(options.limits).maxConnections, 'PostgreSQL wire');
    this.credentials = options.security?.credentials ?? (options.password === undefined ? undefined : DoorCredentials.password(options.password));
  }

  /** Listens; resolves with the bound address. */
  async listen(): Promise<{ host: string; port: number }> {
    const server = net.createServer((socket) => {
      if (admitConnection(socket, this.gate, this.options.log)) new PgConnection(socket, this.engine, this.options, this.credentials, this.connections);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    const a = server.address() as net.AddressInfo;
    return { host: a.address, port: a.port };
  }

  /** Stops listening and closes every connection (their queries are cancelled). */
  async close(): Promise<void> {
    for (const c of this.connections.values()) c.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

class PgConnection {
  private readonly parser = new FrontendParser();
  private readonly pid = randomInt(1, 0x7fffffff);
  private readonly secret = randomInt(1, 0x7fffffff);
  private queue: Promise<void> = Promise.resolve();
  private state: 'startup' | 'login' | 'ready' | 'closed' = 'startup';
  private user = '';
  private login: SaslLogin | undefined;
  /** Who logged in (undefined on an open door) and the identity their statements read with. */
  private principal: DoorPrincipal | undefined;
  private identity: SqlUserIdentity | undefined;
  /** The socket the protocol runs over: the TCP one, or the TLS one after an SSLRequest. */
  private socket: net.Socket;
  private readonly onData = (chunk: Buffer): void => this.receive(chunk);
  private applicationName = '';
  private settings = new SessionSettings({});
  private readonly statements = new Map<string, Statement>();
  private readonly portals = new Map<string, Portal>();
  private skipToSync = false;
  private running: AbortController | undefined;
  private readonly limits: DoorLimits;
  /** Stops the login deadline (HD_SQL_LOGIN_TIMEOUT_MS) once the connection is ready. */
  private readonly loggedIn: () => void;

  constructor(
    private readonly tcp: net.Socket,
    private readonly engine: SqlEngine,
    private readonly options: PgServerOptions,
    private readonly credentials: DoorCredentials | undefined,
    private readonly registry: Map<number, PgConnection>,
  ) {
    this.socket = tcp;
    tcp.setNoDelay(true);
    // Until the login is done a message is at most a startup packet or a SASL message (PostgreSQL's 10 000 bytes).
    if (credentials) this.parser.maxMessageBytes = MAX_STARTUP_BYTES;
    this.limits = doorLimitsOf(options.limits);
    // PostgreSQL's authentication_timeout: startup, TLS handshake and login within HD_SQL_LOGIN_TIMEOUT_MS, or closed.
    this.loggedIn = loginDeadline(this.limits.loginTimeoutMs, () => this.loginExpired());
    const backlogOf = options.backlog?.add(() => this.socket.writableLength);
    tcp.on('data', this.onData);
    tcp.on('error', () => undefined);
    // Closing the connection cancels its query (the reference's only cancel; ours has CancelRequest too).
    tcp.on('close', () => {
      this.running?.abort();
      this.registry.delete(this.pid);
      this.loggedIn();
      backlogOf?.();
    });
  }

  private receive(chunk: Buffer): void {
    if (this.state === 'closed') return;
    let msgs: FrontendMessage[];
    try {
      msgs = this.parser.push(chunk);
    } catch (err) {
      const m = err instanceof PgProtocolError ? err.message : String(err);
      this.refuse('08P01', `protocol violation: ${m}`);
      return;
    }
    // Bytes sent in clear behind an SSLRequest would be read as if they had come over TLS (CVE-2021-23214).
    const ssl = msgs.findIndex((m) => m.kind === 'sslRequest');
    if (ssl >= 0 && (ssl !== msgs.length - 1 || this.parser.pending > 0)) {
      this.refuse('08P01', 'protocol violation: unencrypted data after SSLRequest');
      return;
    }
    for (const m of msgs) this.queue = this.queue.then(() => this.handle(m)).catch((err: unknown) => this.fatal(err));
  }

  /** Answers an SSLRequest: 'S' and the TLS handshake when the doors have a certificate, else 'N'. */
  private startTls(): void {
    const doorTls = this.options.security?.tls;
    if (!doorTls) return this.send(Buffer.from('N'));
    if (this.socket !== this.tcp) return this.refuse('08P01', 'protocol violation: SSLRequest on a connection that already uses TLS');
    // From here the TCP bytes are TLS records: the TLS socket reads them, not the parser.
    this.tcp.off('data', this.onData);
    this.tcp.write(Buffer.from('S'));
    const secure = new tls.TLSSocket(this.tcp, { isServer: true, secureContext: doorTls.secureContext() });
    secure.on('error', (err: Error) => {
      this.options.log?.(`pgwire: TLS handshake with ${this.tcp.remoteAddress} failed: ${err.message}`);
      this.state = 'closed';
      this.tcp.destroy();
    });
    secure.on('data', this.onData);
    this.socket = secure;
  }

  /** Drops the connection, cancelling its query. */
  destroy(): void {
    this.running?.abort();
    this.socket.destroy();
  }

  /** Cancels the running query (CancelRequest). */
  cancel(): void {
    this.running?.abort();
  }

  private send(...bufs: Buffer[]): void {
    if (this.socket.destroyed) return;
    this.socket.write(bufs.length === 1 ? (bufs[0] as Buffer) : Buffer.concat(bufs));
    this.options.backlog?.note(this.socket.writableLength);
  }

  /** Not logged in within HD_SQL_LOGIN_TIMEOUT_MS: closed (a TLS handshake still under way is cut). */
  private loginExpired(): void {
    if (this.state === 'ready' || this.state === 'closed') return;
    this.options.log?.(`pgwire: closed a connection from ${this.tcp.remoteAddress} that had not logged in within ${this.limits.loginTimeoutMs} ms (HD_SQL_LOGIN_TIMEOUT_MS)`);
    const secure = this.socket instanceof tls.TLSSocket;
    if (secure && !(this.socket as tls.TLSSocket).encrypted) return this.destroy();
    this.closeWith({ severity: 'FATAL', code: '08006', message: `the login did not complete within ${this.limits.loginTimeoutMs} ms (HD_SQL_LOGIN_TIMEOUT_MS)` });
    this.socket.setTimeout(1_000, () => this.socket.destroy());
  }

  private fatal(err: unknown): void {
    this.state = 'closed';
    this.options.log?.(`pgwire: connection error: ${err instanceof Error ? err.message : String(err)}`);
    this.socket.end(backend.error({ severity: 'FATAL', code: 'XX000', message: err instanceof Error ? err.message : String(err) }));
  }

  private async handle(m: FrontendMessage): Promise<void> {
    if (this.state === 'closed') return;
    if (this.state === 'startup') return this.startup(m);
    if (this.state === 'login') return this.auth(m);
    if (this.skipToSync && m.kind !== 'sync') return;
    switch (m.kind) {
      case 'query':
        return this.simpleQuery(m.sql);
      case 'parse':
        if (!this.statements.has(m.name) && this.statements.size >= this.limits.maxPreparedStatements) return this.extendedError(tooManyPrepared(this.limits.maxPreparedStatements, 'prepared statements'));
        this.statements.set(m.name, { sql: m.sql, paramTypes: m.paramTypes });
        return this.send(backend.parseComplete());
      case 'bind': {
        const st = this.statements.get(m.statement);
        if (!st) return this.extendedError(new SqlError('invalid_statement', `prepared statement ${JSON.stringify(m.statement)} does not exist`));
        let params: SqlParam[];
        try {
          params = m.params.map((raw, i) => paramOf(raw, (m.paramFormats.length === 1 ? m.paramFormats[0] : m.paramFormats[i]) ?? 0, st.paramTypes[i] ?? 0));
        } catch (err) {
          return this.extendedError(err);
        }
        if (!this.portals.has(m.portal) && this.portals.size >= this.limits.maxPreparedStatements) return this.extendedError(tooManyPrepared(this.limits.maxPreparedStatements, 'portals'));
        this.portals.set(m.portal, { statement: st, params, resultFormats: m.resultFormats, sent: 0 });
        return this.send(backend.bindComplete());
      }
      case 'describe':
        return this.describe(m.target, m.name);
      case 'execute':
        return this.execute(m.portal, m.maxRows);
      case 'close':
        (m.target === 'S' ? this.statements : this.portals).delete(m.name);
        return this.send(backend.closeComplete());
      case 'sync':
        this.skipToSync = false;
        this.portals.delete('');
        return this.send(backend.readyForQuery());
      case 'flush':
        return;
      case 'terminate':
        this.socket.end();
        return;
      case 'authResponse':
        // A password / SASL message after the login (a replayed SCRAM final, say) is not a second login.
        return this.refuse('08P01', 'protocol violation: an authentication message arrived after authentication completed');
      case 'copyFail':
        return this.extendedError(new SqlError('unsupported_statement', 'COPY FROM is not supported: HD SQL is read-only'));
      default:
        return this.extendedError(new SqlError('unsupported_statement', `message ${m.kind === 'other' ? JSON.stringify(m.code) : m.kind} is not supported`));
    }
  }

  private startup(m: FrontendMessage): void {
    if (m.kind === 'sslRequest') return this.startTls();
    if (m.kind === 'gssencRequest') return this.send(Buffer.from('N'));
    if (m.kind === 'cancelRequest') {
      const target = this.registry.get(m.processId);
      if (target && target.secret === m.secretKey) target.cancel();
      this.socket.end();
      return;
    }
    if (m.kind !== 'startup') return this.fatal(new Error('expected a startup message'));
    this.user = m.params['user'] ?? '';
    this.applicationName = m.params['application_name'] ?? '';
    const onTls = this.socket instanceof tls.TLSSocket;
    if (this.options.security?.tlsRequired && !onTls && !isLoopback(this.tcp.remoteAddress ?? '')) {
      this.options.log?.(`pgwire: refused a connection without TLS from ${this.tcp.remoteAddress} (HD_SQL_TLS_REQUIRED)`);
      return this.refuse('28000', `TLS is required for connections from ${this.tcp.remoteAddress} (HD_SQL_TLS_REQUIRED): connect with sslmode=require`);
    }
    if (this.credentials !== undefined) {
      this.state = 'login';
      const { verifier, principal } = this.credentials.verifierFor(this.user);
      this.principal = principal;
      const binding = onTls ? socketEndPoint(this.socket as tls.TLSSocket) : undefined;
      this.login = new SaslLogin(verifier, this.user, binding, LOGIN_HINTS[this.credentials.kind]);
      return this.send(this.login.request());
    }
    this.ready();
  }

  /** Ends the connection with a FATAL error (authentication failures, protocol violations). */
  private refuse(code: '28P01' | '28000' | '08P01', message: string): void {
    this.closeWith({ severity: 'FATAL', code, message });
  }

  private closeWith(error: PgErrorFields): void {
    this.state = 'closed';
    this.socket.end(backend.error(error));
  }

  /** One step of the SASL login. */
  private auth(m: FrontendMessage): void {
    const step = (this.login as SaslLogin).step(m);
    if (step.kind === 'refuse') {
      if (step.error.code === '28P01') this.options.log?.(`pgwire: ${step.error.message}`);
      return this.closeWith(step.error);
    }
    this.send(step.send);
    if (step.kind === 'done') this.ready();
  }

  private ready(): void {
    this.state = 'ready';
    this.loggedIn();
    this.parser.maxMessageBytes = MAX_MESSAGE_BYTES;
    this.identity = statementIdentity(this.options.security ?? {}, this.principal);
    this.registry.set(this.pid, this);
    const params: [string, string][] = [
      ['server_version', SERVER_VERSION],
      ['server_encoding', 'UTF8'],
      ['client_encoding', 'UTF8'],
      ['DateStyle', 'ISO, MDY'],
      ['TimeZone', 'UTC'],
      ['integer_datetimes', 'on'],
      ['standard_conforming_strings', 'on'],
      ['is_superuser', 'off'],
      ['session_authorization', this.user],
      ['application_name', this.applicationName],
    ];
    this.settings = new SessionSettings({ ...EXTRA_SETTINGS, ...Object.fromEntries(params) });
    this.send(backend.authOk(), ...params.map(([k, v]) => backend.parameterStatus(k, v)), backend.backendKeyData(this.pid, this.secret), backend.readyForQuery());
  }

  private async run(sql: string, params: SqlParam[]): Promise<Answer> {
    const session = sessionAnswer(sql, this.settings);
    if (session) return { table: session, notices: [] };
    const ac = new AbortController();
    this.running = ac;
    try {
      const r = await runAsSqlUser(this.identity, () => this.engine.execute(sql, { params, signal: ac.signal }));
      for (const n of r.notices) this.send(backend.notice({ severity: 'NOTICE', code: '01000', message: n }));
      return r;
    } finally {
      this.running = undefined;
    }
  }

  private async simpleQuery(sql: string): Promise<void> {
    if (sql.trim().replace(/;\s*$/, '') === '') return this.send(backend.emptyQuery(), backend.readyForQuery());
    if (SESSION_STATEMENT.test(sql)) {
      this.settings.noteSet(sql);
      return this.send(backend.commandComplete(tagOf(sql)), backend.readyForQuery());
    }
    try {
      const copy = COPY_TO_STDOUT.exec(sql);
      if (copy) {
        const r = await this.run(copy[1] as string, []);
        await this.sendCopy(r.table);
      } else {
        const r = await this.run(sql, []);
        this.send(backend.rowDescription(fieldsOf(r.table.schema)));
        await this.sendRows(r.table, [], 0, r.table.numRows);
        this.send(backend.commandComplete(`SELECT ${r.table.numRows}`));
      }
    } catch (err) {
      this.send(backend.error(errorFields(err)));
    }
    this.send(backend.readyForQuery());
  }

  private extendedError(err: unknown): void {
    this.send(backend.error(errorFields(err)));
    this.skipToSync = true;
  }

  private async describe(target: 'S' | 'P', name: string): Promise<void> {
    if (target === 'S') {
      const st = this.statements.get(name);
      if (!st) return this.extendedError(new SqlError('invalid_statement', `prepared statement ${JSON.stringify(name)} does not exist`));
      const n = Math.max(st.paramTypes.length, paramCount(st.sql));
      this.send(backend.parameterDescription(Array.from({ length: n }, (_, i) => st.paramTypes[i] || 25)));
      if (SESSION_STATEMENT.test(st.sql)) return this.send(backend.noData());
      try {
        // Row shape without reading data: the statement over empty tables, parameters null.
        const shape = sessionAnswer(st.sql, this.settings)?.schema ?? (await this.engine.describe(st.sql, n));
        return this.send(backend.rowDescription(fieldsOf(shape)));
      } catch (err) {
        return this.extendedError(err);
      }
    }
    const p = this.portals.get(name);
    if (!p) return this.extendedError(new SqlError('invalid_statement', `portal ${JSON.stringify(name)} does not exist`));
    if (SESSION_STATEMENT.test(p.statement.sql)) return this.send(backend.noData());
    try {
      p.result ??= await this.run(p.statement.sql, p.params);
      this.send(backend.rowDescription(fieldsOf(p.result.table.schema, p.resultFormats)));
    } catch (err) {
      this.extendedError(err);
    }
  }

  private async execute(name: string, maxRows: number): Promise<void> {
    const p = this.portals.get(name);
    if (!p) return this.extendedError(new SqlError('invalid_statement', `portal ${JSON.stringify(name)} does not exist`));
    if (SESSION_STATEMENT.test(p.statement.sql)) {
      this.settings.noteSet(p.statement.sql);
      return this.send(backend.commandComplete(tagOf(p.statement.sql)));
    }
    if (p.statement.sql.trim() === '') return this.send(backend.emptyQuery());
    try {
      p.result ??= await this.run(p.statement.sql, p.params);
      const t = p.result.table;
      const end = maxRows > 0 ? Math.min(t.numRows, p.sent + maxRows) : t.numRows;
      await this.sendRows(t, p.resultFormats, p.sent, end);
      p.sent = end;
      this.send(end < t.numRows ? backend.portalSuspended() : backend.commandComplete(`SELECT ${t.numRows}`));
    } catch (err) {
      this.extendedError(err);
    }
  }

  /**
   * Writes rows `from`..`to` as DataRows, pausing while the socket holds more than
   * HD_SQL_SEND_BUFFER_BYTES (a client that stops reading stops the production, not the server's memory).
   */
  private async sendRows(t: arrow.Table, formats: readonly number[], from: number, to: number): Promise<void> {
    const fields = fieldsOf(t.schema, formats);
    const cols = t.schema.fields.map((_, i) => t.getChildAt(i) as arrow.Vector);
    const w = new DataRowWriter((chunk) => this.send(chunk));
    for (let r = from; r < to; r++) {
      w.beginRow(cols.length);
      for (let i = 0; i < cols.length; i++) {
        const c = cols[i] as arrow.Vector;
        const v: unknown = c.get(r);
        if (v === null || v === undefined) {
          w.writeNull();
          continue;
        }
        const f = fields[i]!;
        if (f.format === 1) {
          const b = binaryOf(f.typeOid, c.type, v);
          if (!b) throw new SqlError('unsupported_statement', `binary results for column ${f.name} (type oid ${f.typeOid}) are not supported; ask for text`);
          w.writeBytes(b);
        } else {
          w.writeText(textOf(c.type, v) ?? '');
        }
      }
      w.endRow();
      const wait = belowHighWater(this.socket, this.limits.sendBufferBytes);
      if (wait) await wait;
      if (this.socket.destroyed) return;
    }
    w.flush();
  }

  private async sendCopy(t: arrow.Table): Promise<void> {
    const cols = t.schema.fields.map((_, i) => t.getChildAt(i) as arrow.Vector);
    this.send(backend.copyOutResponse(cols.length));
    const esc = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
    for (let r = 0; r < t.numRows; r++) {
      const line = cols.map((c) => {
        const s = textOf(c.type, c.get(r));
        return s === null ? '\\N' : esc(s);
      });
      this.send(backend.copyData(Buffer.from(`${line.join('\t')}\n`, 'utf8')));
      const wait = belowHighWater(this.socket, this.limits.sendBufferBytes);
      if (wait) await wait;
      if (this.socket.destroyed) return;
    }
    this.send(backend.copyDone(), backend.commandComplete(`COPY ${t.numRows}`));
  }
}

/** The refusal of one prepared statement (or portal) too many on a connection. */
function tooManyPrepared(max: number, what: string): SqlError {
  return new SqlError('limit_exceeded', `too many ${what}: a connection keeps at most ${max} open (HD_SQL_MAX_PREPARED_STATEMENTS); close (or DEALLOCATE) those it no longer uses`);
}
