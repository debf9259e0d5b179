/**
 * hd_sql's PostgreSQL wire door: startup (SSLRequest answered 'N'), SCRAM-SHA-256 password auth
 * when a password is set, simple query, the extended protocol (Parse/Bind/Describe/Execute/Sync/Close,
 * text and binary parameters and results), CancelRequest, `COPY (query) TO STDOUT`, notices, and
 * ErrorResponse with the reference's SQLSTATEs. It reports itself as PostgreSQL 16 so drivers work.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';
import type * as arrow from 'apache-arrow';
import type { SqlParam } from '../../sdk/local/localSqlSession';
import type { SqlEngine } from '../sqlEngine';
import { SqlError } from '../sqlError';
import { DataRowWriter } from './dataRows';
import { backend, type PgErrorFields } from './backend';
import { FrontendParser, PgProtocolError, type FrontendMessage } from './frontend';
import { SaslLogin } from './saslLogin';
import { EXTRA_SETTINGS, sessionAnswer, SessionSettings } from './sessionQueries';
import { COPY_TO_STDOUT, paramCount, SESSION_STATEMENT, tagOf } from './statementKinds';
import { scramVerifier, type ScramVerifier } from './scram';
import { PgBinaryError } from './pgBinary';
import { binaryOf, fieldsOf, paramOf, textOf } from './pgTypes';

/** What the server reports as server_version (drivers parse the leading number). */
export const SERVER_VERSION = '16.0 (hd_sql)';

/** Settings of the door. */
export interface PgServerOptions {
  readonly host: string;
  readonly port: number;
  /** The password of HD_SQL_PGWIRE_PASSWORD_FILE; undefined: no authentication. */
  readonly password?: string;
  readonly log?: (line: string) => void;
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
  /** Derived once: what PostgreSQL would store for the password (the password itself is not kept per connection). */
  private readonly verifier: ScramVerifier | undefined;

  constructor(
    private readonly engine: SqlEngine,
    private readonly options: PgServerOptions,
  ) {
    this.verifier = options.password === undefined ? undefined : scramVerifier(options.password);
  }

  /** Listens; resolves with the bound address. */
  async listen(): Promise<{ host: string; port: number }> {
    const server = net.createServer((socket) => new PgConnection(socket, this.engine, this.options, this.verifier, this.connections));
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
  private applicationName = '';
  private settings = new SessionSettings({});
  private readonly statements = new Map<string, Statement>();
  private readonly portals = new Map<string, Portal>();
  private skipToSync = false;
  private running: AbortController | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly engine: SqlEngine,
    private readonly options: PgServerOptions,
    private readonly verifier: ScramVerifier | undefined,
    private readonly registry: Map<number, PgConnection>,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      if (this.state === 'closed') return;
      let msgs: FrontendMessage[];
      try {
        msgs = this.parser.push(chunk);
      } catch (err) {
        const m = err instanceof PgProtocolError ? err.message : String(err);
        this.refuse('08P01', `protocol violation: ${m}`);
        return;
      }
      for (const m of msgs) this.queue = this.queue.then(() => this.handle(m)).catch((err: unknown) => this.fatal(err));
    });
    socket.on('error', () => undefined);
    // Closing the connection cancels its query (the reference's only cancel; ours has CancelRequest too).
    socket.on('close', () => {
      this.running?.abort();
      this.registry.delete(this.pid);
    });
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
    if (!this.socket.destroyed) this.socket.write(bufs.length === 1 ? (bufs[0] as Buffer) : Buffer.concat(bufs));
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
    if (m.kind === 'sslRequest' || m.kind === 'gssencRequest') return this.send(Buffer.from('N'));
    if (m.kind === 'cancelRequest') {
      const target = this.registry.get(m.processId);
      if (target && target.secret === m.secretKey) target.cancel();
      this.socket.end();
      return;
    }
    if (m.kind !== 'startup') return this.fatal(new Error('expected a startup message'));
    this.user = m.params['user'] ?? '';
    this.applicationName = m.params['application_name'] ?? '';
    if (this.verifier !== undefined) {
      this.state = 'login';
      this.login = new SaslLogin(this.verifier, this.user);
      return this.send(this.login.request());
    }
    this.ready();
  }

  /** Ends the connection with a FATAL error (authentication failures, protocol violations). */
  private refuse(code: '28P01' | '08P01', message: string): void {
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
      const r = await this.engine.execute(sql, { params, signal: ac.signal });
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
        this.sendCopy(r.table);
      } else {
        const r = await this.run(sql, []);
        this.send(backend.rowDescription(fieldsOf(r.table.schema)));
        this.sendRows(r.table, [], 0, r.table.numRows);
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
      this.sendRows(t, p.resultFormats, p.sent, end);
      p.sent = end;
      this.send(end < t.numRows ? backend.portalSuspended() : backend.commandComplete(`SELECT ${t.numRows}`));
    } catch (err) {
      this.extendedError(err);
    }
  }

  private sendRows(t: arrow.Table, formats: readonly number[], from: number, to: number): void {
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
    }
    w.flush();
  }

  private sendCopy(t: arrow.Table): void {
    const cols = t.schema.fields.map((_, i) => t.getChildAt(i) as arrow.Vector);
    this.send(backend.copyOutResponse(cols.length));
    const esc = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
    for (let r = 0; r < t.numRows; r++) {
      const line = cols.map((c) => {
        const s = textOf(c.type, c.get(r));
        return s === null ? '\\N' : esc(s);
      });
      this.send(backend.copyData(Buffer.from(`${line.join('\t')}\n`, 'utf8')));
    }
    this.send(backend.copyDone(), backend.commandComplete(`COPY ${t.numRows}`));
  }
}
