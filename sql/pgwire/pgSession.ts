/**
 * One logged-in PostgreSQL wire session: the simple query protocol (several statements in one Query
 * run in turn), the extended protocol (Parse / Bind / Describe / Execute with row limits and
 * PortalSuspended / Close / Sync), the transaction block ReadyForQuery reports, the session's
 * parameters (SET / SHOW, ParameterStatus when a reported one changes) and notices.
 *
 * Portals: a portal's result is computed once and sent in pieces while Execute limits the rows
 * (JDBC setFetchSize with autocommit off); it is freed once its last row is sent, and the portal
 * closes on Close, at Sync outside a transaction block (the implicit transaction ends), and when
 * a block ends (COMMIT / ROLLBACK), as PostgreSQL's non-holdable portals do.
 */
import type * as arrow from 'apache-arrow';
import type { SqlParam } from '../../local/localSqlSession';
import type { DoorLimits } from '../doorLimits';
import type { RowStream } from '../engineTypes';
import type { SqlEngine } from '../sqlEngine';
import { SqlError } from '../sqlError';
import { runAsSqlUser, type SqlUserIdentity } from '../sqlUser';
import { backend, type PgErrorFields } from './backend';
import type { FrontendMessage } from './frontend';
import { errorFields, PG_STATE, PgSessionError, tooManyPrepared } from './pgErrors';
import { fieldsOf, paramOf } from './pgTypes';
import { writeBatchRows, writeCopy, writeRows, type RowSink } from './resultRows';
import { initialParameters, REPORTED_PARAMETERS, startupValues } from './sessionParameters';
import { sessionAnswer, SessionSettings } from './sessionQueries';
import { runSessionStatement, SESSION_STATEMENT } from './sessionStatements';
import { COPY_TO_STDOUT, paramCount } from './statementKinds';
import { splitStatements } from './statementSplit';
import { TransactionBlock } from './transactionBlock';

/** What the session is given by its connection. */
export interface PgSessionOptions {
  /** The user who logged in (session_authorization). */
  readonly user: string;
  /** The startup message's parameters (application_name, TimeZone, options...). */
  readonly startup: Readonly<Record<string, string>>;
  /** The identity its statements read with (sql/sqlUser.ts). */
  readonly identity: SqlUserIdentity | undefined;
  readonly limits: DoorLimits;
}

interface Statement {
  readonly sql: string;
  readonly paramTypes: readonly number[];
}

/** What a statement answered: the engine's result, or a session question's (sessionQueries.ts). */
interface Answer {
  readonly table: arrow.Table;
  /** CommandComplete's tag (`SELECT n` when absent). */
  readonly tag?: string;
  /** Rows already sent as they arrived (`table` holds none): the engine's `streamed`. */
  readonly streamed?: number;
}

interface Portal {
  readonly statement: Statement;
  readonly params: SqlParam[];
  readonly resultFormats: readonly number[];
  /** Computed at the first Describe or Execute; dropped once every row is sent. */
  result?: Answer;
  sent: number;
  done: boolean;
}

/** client_min_messages levels, lowest first: a notice below the session's level is not sent. */
const LEVELS = ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'debug', 'log', 'notice', 'warning', 'error'];

/** COMMIT / END / ROLLBACK / ABORT: what a failed transaction block still accepts. */
const ENDS_BLOCK = /^\s*(COMMIT|END|ROLLBACK|ABORT)\b(?!\s+PREPARED\b)/i;

/** The session of one connection after login. */
export class PgSession {
  readonly settings: SessionSettings;
  readonly tx: TransactionBlock;
  private readonly statements = new Map<string, Statement>();
  private readonly portals = new Map<string, Portal>();
  /** After an error in the extended protocol, messages are skipped until Sync. */
  private skipToSync = false;
  private running: AbortController | undefined;
  /** The reported parameters' values the client was last told. */
  private readonly told = new Map<string, string>();

  constructor(
    private readonly sink: RowSink,
    private readonly engine: SqlEngine,
    private readonly options: PgSessionOptions,
  ) {
    const initial = initialParameters(options.user);
    for (const [k, v] of startupValues(options.startup)) initial.set(k, v);
    this.settings = new SessionSettings(initial);
    this.tx = new TransactionBlock(this.settings);
  }

  /** The ParameterStatus messages of startup (then the connection sends BackendKeyData and {@link ready}). */
  startupStatus(): Buffer[] {
    return this.changedParameters();
  }

  /** ParameterStatus for every reported parameter that changed, then ReadyForQuery with the block's status. */
  ready(): Buffer {
    return Buffer.concat([...this.changedParameters(), backend.readyForQuery(this.tx.status)]);
  }

  /** Cancels the running statement (CancelRequest, or the connection closing). */
  cancel(): void {
    this.running?.abort();
  }

  /** Handles one frontend message of the query phase. */
  async handle(m: FrontendMessage): Promise<void> {
    if (this.skipToSync && m.kind !== 'sync') return;
    switch (m.kind) {
      case 'query':
        return this.simpleQuery(m.sql);
      case 'parse':
        return this.guard(() => {
          if (!this.statements.has(m.name) && this.statements.size >= this.options.limits.maxPreparedStatements) throw tooManyPrepared(this.options.limits.maxPreparedStatements, 'prepared statements');
          if (splitStatements(m.sql).length > 1) throw new PgSessionError(PG_STATE.syntaxError, 'cannot insert multiple commands into a prepared statement');
          this.refuseInFailedBlock(m.sql);
          this.statements.set(m.name, { sql: m.sql, paramTypes: m.paramTypes });
          this.send(backend.parseComplete());
        });
      case 'bind':
        return this.guard(() => {
          const st = this.statementNamed(m.statement);
          this.refuseInFailedBlock(st.sql);
          const params = m.params.map((raw, i) => paramOf(raw, (m.paramFormats.length === 1 ? m.paramFormats[0] : m.paramFormats[i]) ?? 0, st.paramTypes[i] ?? 0));
          if (!this.portals.has(m.portal) && this.portals.size >= this.options.limits.maxPreparedStatements) throw tooManyPrepared(this.options.limits.maxPreparedStatements, 'portals');
          this.portals.set(m.portal, { statement: st, params, resultFormats: m.resultFormats, sent: 0, done: false });
          this.send(backend.bindComplete());
        });
      case 'describe':
        return this.guard(() => (m.target === 'S' ? this.describeStatement(m.name) : this.describePortal(m.name)));
      case 'execute':
        return this.guard(() => this.execute(m.portal, m.maxRows));
      case 'close':
        (m.target === 'S' ? this.statements : this.portals).delete(m.name);
        return this.send(backend.closeComplete());
      case 'sync':
        this.skipToSync = false;
        // Outside a block the implicit transaction ends here, and its portals with it.
        if (this.tx.status === 'I') this.portals.clear();
        return this.send(this.ready());
      case 'flush':
        return;
      case 'copyFail':
        return this.extendedError(new SqlError('unsupported_statement', 'COPY FROM is not supported: HD SQL is read-only'));
      default:
        return this.extendedError(new SqlError('unsupported_statement', `message ${m.kind === 'other' ? JSON.stringify(m.code) : m.kind} is not supported`));
    }
  }

  private send(...bufs: Buffer[]): void {
    this.sink.send(bufs.length === 1 ? (bufs[0] as Buffer) : Buffer.concat(bufs));
  }

  /** Sends a notice or warning unless client_min_messages is above its level. */
  private notice(f: PgErrorFields): void {
    const min = LEVELS.indexOf(this.settings.get('client_min_messages') ?? 'notice');
    if (LEVELS.indexOf(f.severity.toLowerCase()) >= min) this.send(backend.notice(f));
  }

  private changedParameters(): Buffer[] {
    const out: Buffer[] = [];
    for (const name of REPORTED_PARAMETERS) {
      const v = this.settings.get(name) ?? '';
      if (this.told.get(name) === v) continue;
      this.told.set(name, v);
      out.push(backend.parameterStatus(name, v));
    }
    return out;
  }

  /** Runs an extended-protocol step; an error is answered and the session skips to Sync. */
  private async guard(step: () => void | Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.extendedError(err);
    }
  }

  private extendedError(err: unknown): void {
    this.send(backend.error(errorFields(err)));
    this.tx.fail();
    this.skipToSync = true;
  }

  private refuseInFailedBlock(sql: string): void {
    if (!ENDS_BLOCK.test(sql)) this.tx.refuseWhenFailed();
  }

  private statementNamed(name: string): Statement {
    const st = this.statements.get(name);
    if (!st) throw new PgSessionError(PG_STATE.invalidStatementName, `prepared statement ${JSON.stringify(name)} does not exist`);
    return st;
  }

  private portalNamed(name: string): Portal {
    const p = this.portals.get(name);
    if (!p) throw new PgSessionError(PG_STATE.invalidCursorName, `portal ${JSON.stringify(name)} does not exist`);
    return p;
  }

  /** A session statement (SET, BEGIN, COMMIT, ...): its effects on portals and statements, warnings, and its tag. */
  private sessionStatement(sql: string): string {
    const o = runSessionStatement(sql, { settings: this.settings, tx: this.tx, user: this.options.user, hasStatement: (n) => this.statements.has(n) });
    if (o.endedBlock || o.discardAll) this.portals.clear();
    if (o.discardAll || o.deallocate === null) this.statements.clear();
    else if (o.deallocate !== undefined) this.statements.delete(o.deallocate);
    for (const n of o.notices) this.notice(n);
    return o.tag;
  }

  /** Runs a statement that answers rows: a session question, or the engine (cancellable). */
  private async run(sql: string, params: SqlParam[], rows?: RowStream): Promise<Answer> {
    this.tx.refuseWhenFailed();
    const session = sessionAnswer(sql, this.settings);
    if (session) return { table: session, ...(/^\s*SHOW\b/i.test(sql) ? { tag: 'SHOW' } : {}) };
    const ac = new AbortController();
    this.running = ac;
    try {
      const r = await runAsSqlUser(this.options.identity, () => this.engine.execute(sql, { params, signal: ac.signal, ...(rows ? { rows } : {}) }));
      for (const n of r.notices) this.notice({ severity: 'NOTICE', code: '01000', message: n });
      return { table: r.table, ...(r.streamed !== undefined ? { streamed: r.streamed } : {}) };
    } finally {
      this.running = undefined;
    }
  }

  private async simpleQuery(sql: string): Promise<void> {
    const statements = splitStatements(sql);
    if (statements.length === 0) this.send(backend.emptyQuery());
    for (const st of statements) {
      try {
        await this.simpleStatement(st);
      } catch (err) {
        // The rest of the Query is not run; inside a block the block fails.
        this.send(backend.error(errorFields(err)));
        this.tx.fail();
        break;
      }
    }
    this.send(this.ready());
  }

  private async simpleStatement(sql: string): Promise<void> {
    if (SESSION_STATEMENT.test(sql)) return this.send(backend.commandComplete(this.sessionStatement(sql)));
    const copy = COPY_TO_STDOUT.exec(sql);
    if (copy) {
      const r = await this.run(copy[1] as string, []);
      return writeCopy(this.sink, r.table);
    }
    // A large answer's rows go out as they arrive (row passthrough), the notices after them.
    const r = await this.run(sql, [], {
      begin: (schema) => this.send(backend.rowDescription(fieldsOf(schema))),
      rows: (b) => writeBatchRows(this.sink, b),
    });
    if (r.streamed !== undefined) return this.send(backend.commandComplete(`SELECT ${r.streamed}`));
    this.send(backend.rowDescription(fieldsOf(r.table.schema)));
    await writeRows(this.sink, r.table, [], 0, r.table.numRows);
    this.send(backend.commandComplete(r.tag ?? `SELECT ${r.table.numRows}`));
  }

  private async describeStatement(name: string): Promise<void> {
    const st = this.statementNamed(name);
    this.refuseInFailedBlock(st.sql);
    const n = Math.max(st.paramTypes.length, paramCount(st.sql));
    this.send(backend.parameterDescription(Array.from({ length: n }, (_, i) => st.paramTypes[i] || 25)));
    if (SESSION_STATEMENT.test(st.sql) || st.sql.trim() === '') return this.send(backend.noData());
    // Row shape without reading data: the statement over empty tables, parameters null.
    const shape = sessionAnswer(st.sql, this.settings)?.schema ?? (await this.engine.describe(st.sql, n));
    this.send(backend.rowDescription(fieldsOf(shape)));
  }

  private async describePortal(name: string): Promise<void> {
    const p = this.portalNamed(name);
    if (SESSION_STATEMENT.test(p.statement.sql) || p.statement.sql.trim() === '') return this.send(backend.noData());
    this.refuseInFailedBlock(p.statement.sql);
    // The shape comes from the result itself (computed here, sent by Execute).
    const schema = p.result?.table.schema ?? (p.done ? undefined : (p.result = await this.run(p.statement.sql, p.params)).table.schema);
    const shape = schema ?? (await this.engine.describe(p.statement.sql, p.params.length));
    this.send(backend.rowDescription(fieldsOf(shape, p.resultFormats)));
  }

  private async execute(name: string, maxRows: number): Promise<void> {
    const p = this.portalNamed(name);
    if (SESSION_STATEMENT.test(p.statement.sql)) return this.send(backend.commandComplete(this.sessionStatement(p.statement.sql)));
    if (p.statement.sql.trim() === '') return this.send(backend.emptyQuery());
    this.refuseInFailedBlock(p.statement.sql);
    // A portal whose rows were all sent answers no more (PostgreSQL: `SELECT 0`).
    if (p.done) return this.send(backend.commandComplete('SELECT 0'));
    const r = (p.result ??= await this.run(p.statement.sql, p.params));
    const t = r.table;
    const from = p.sent;
    const end = maxRows > 0 ? Math.min(t.numRows, from + maxRows) : t.numRows;
    await writeRows(this.sink, t, p.resultFormats, from, end);
    p.sent = end;
    if (end < t.numRows) return this.send(backend.portalSuspended());
    p.done = true;
    p.result = undefined;
    // As PostgreSQL counts it: the rows this Execute sent.
    this.send(backend.commandComplete(r.tag ?? `SELECT ${end - from}`));
  }
}
