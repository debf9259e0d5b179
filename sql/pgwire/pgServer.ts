/**
 * hd_sql's PostgreSQL wire door: the listener and each connection's startup (SSLRequest → TLS when
 * the doors have a certificate, else 'N'), SCRAM-SHA-256 login (and SCRAM-SHA-256-PLUS over TLS)
 * when credentials are set, CancelRequest and the limits; once logged in, a PgSession
 * (sql/pgwire/pgSession.ts) answers the queries. It reports itself as PostgreSQL 16 so drivers work.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import { corkForTick } from '../../hdwp/tickCork';
import type { SqlEngine } from '../sqlEngine';
import { isLoopback, statementIdentity, type DoorSecurity } from '../doorSecurity';
import { socketEndPoint } from '../doorTls';
import { DoorCredentials, type DoorPrincipal } from '../doorUsers';
import { ConnectionGate, doorLimitsOf, type DoorLimits, type SendBacklog } from '../doorLimits';
import { admitConnection, belowHighWater, loginDeadline } from './pgLimits';
import { backend, type PgErrorFields } from './backend';
import { FrontendParser, MAX_MESSAGE_BYTES, MAX_STARTUP_BYTES, PgProtocolError, type FrontendMessage } from './frontend';
import { LOGIN_HINTS, SaslLogin } from './saslLogin';
import { PgSession } from './pgSession';
import type { RowSink } from './resultRows';

export { SERVER_VERSION } from './sessionParameters';

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
  /** The socket the protocol runs over: the TCP one, or the TLS one after an SSLRequest. */
  private socket: net.Socket;
  private readonly onData = (chunk: Buffer): void => this.receive(chunk);
  private startupParams: Readonly<Record<string, string>> = {};
  /** The logged-in session (queries, portals, transaction block, parameters). */
  private session: PgSession | undefined;
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
      this.session?.cancel();
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
    this.session?.cancel();
    this.socket.destroy();
  }

  /** Cancels the running query (CancelRequest). */
  cancel(): void {
    this.session?.cancel();
  }

  private send(...bufs: Buffer[]): void {
    if (this.socket.destroyed) return;
    // Once logged in, the messages of one tick (RowDescription, DataRows, CommandComplete,
    // ReadyForQuery of a small answer) leave in one write, not a system call (and TLS record) each.
    if (this.state === 'ready') corkForTick(this.socket);
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
    switch (m.kind) {
      case 'terminate':
        this.socket.end();
        return;
      case 'authResponse':
        // A password / SASL message after the login (a replayed SCRAM final, say) is not a second login.
        return this.refuse('08P01', 'protocol violation: an authentication message arrived after authentication completed');
      default:
        return (this.session as PgSession).handle(m);
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
    this.startupParams = m.params;
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
    this.registry.set(this.pid, this);
    const socket = (): net.Socket => this.socket;
    const sink: RowSink = { send: (b) => this.send(b), drain: () => belowHighWater(socket(), this.limits.sendBufferBytes), get gone() { return socket().destroyed; } };
    this.session = new PgSession(sink, this.engine, { user: this.user, startup: this.startupParams, identity: statementIdentity(this.options.security ?? {}, this.principal), limits: this.limits });
    // ParameterStatus for what PostgreSQL reports, then BackendKeyData and ReadyForQuery.
    this.send(backend.authOk(), ...this.session.startupStatus(), backend.backendKeyData(this.pid, this.secret), this.session.ready());
  }
}
