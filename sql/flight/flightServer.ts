/**
 * hd_sql's Arrow Flight SQL door: the gRPC service arrow.flight.protocol.FlightService on
 * @grpc/grpc-js, answering Flight SQL commands from the one engine. Statement queries are
 * GetFlightInfo (schema by describing the statement, one endpoint whose ticket carries it) then
 * DoGet (the result as Arrow IPC messages, one FlightData per message); prepared statements live
 * in this server until closed (parameters bound by DoPut); the catalog commands answer from the
 * datasets. Errors carry the reference's gRPC status; notices go to the service log. With door
 * credentials every call but the handshake is authenticated first (flightAuth.ts: Unauthenticated
 * otherwise) and runs as its user; with the doors' TLS it serves grpc+tls only.
 */
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type * as arrow from 'apache-arrow';
import { tableFromIPC } from 'apache-arrow';
import { ProtoWireError } from '../../lib/protoWire';
import type { SqlParam } from '../../local/localSqlSession';
import { statementIdentity, type DoorSecurity } from '../doorSecurity';
import type { ListenAddress } from '../serverSettings';
import { runAsSqlUser } from '../sqlUser';
import type { SqlEngine } from '../sqlEngine';
import { SqlError } from '../sqlError';
import { decodeAction, decodeDescriptor, decodeFlightData, decodeHandshake, decodeTicket, encodeActionType, encodeBytesMessage, encodeFlightData, encodeFlightInfo, encodeHandshake, FlightWriter, packAny, type FlightData, type FlightDescriptor } from './flightProto';
import { CATALOG_SCHEMAS, catalogsTable, dbSchemasTable, decodeCommand, flightTableSchema, selectCatalogTables, tablesTable, tableTypesTable, type FlightSqlCommand } from './flightSqlCommands';
import type { PgRelation } from '../pgcatalog/pgModel';
import { joinIpcMessages, serializeSchema, tableMessages } from './ipcMessages';
import { FlightAuth, unauthenticated } from './flightAuth';
import { ConnectionGate, doorLimitsOf, type DoorLimits } from '../doorLimits';
import { gatedCalls, PreparedQuota, PutBudget, putTooLarge } from './flightLimits';
import { serverSqlInfo, sqlInfoSchema, sqlInfoTable, type SqlInfoValue } from './sqlInfo';

/** What FLIGHT_SQL_SERVER_VERSION reports. */
export const FLIGHT_SERVER_VERSION = '1.0 (hd_sql)';
/** Prepared statements one server keeps open; beyond it the oldest is closed. */
const MAX_PREPARED = 10_000;

/** Settings of the door. */
export interface FlightSqlServerOptions {
  readonly host: string;
  readonly port: number;
  readonly log: (line: string) => void;
  /** Credentials, TLS and identity of the doors (sql/doorSecurity.ts); absent: open, plaintext. */
  readonly security?: DoorSecurity;
  /** Calls in flight, prepared statements per peer, DoPut bytes (sql/doorLimits.ts); absent: the defaults. */
  readonly limits?: Partial<DoorLimits>;
}

interface Prepared {
  /** The peer that prepared it (HD_SQL_MAX_PREPARED_STATEMENTS counts per peer). */
  readonly owner: string;
  readonly sql: string;
  readonly schema: arrow.Schema;
  params: SqlParam[];
}

const raw = (b: Buffer): Buffer => b;
const method = (name: string, requestStream: boolean, responseStream: boolean): grpc.MethodDefinition<Buffer, Buffer> => ({
  path: `/arrow.flight.protocol.FlightService/${name}`,
  originalName: name,
  requestStream,
  responseStream,
  requestSerialize: raw,
  requestDeserialize: raw,
  responseSerialize: raw,
  responseDeserialize: raw,
});

/**
 * The FlightService methods with raw byte (de)serializers: the door decodes each request itself so
 * that malformed bytes answer InvalidArgument with a message instead of a transport error.
 */
export const flightServiceDefinition: grpc.ServiceDefinition = {
  Handshake: method('Handshake', true, true),
  ListFlights: method('ListFlights', false, true),
  GetFlightInfo: method('GetFlightInfo', false, false),
  GetSchema: method('GetSchema', false, false),
  DoGet: method('DoGet', false, true),
  DoPut: method('DoPut', true, true),
  DoExchange: method('DoExchange', true, true),
  DoAction: method('DoAction', false, true),
  ListActions: method('ListActions', false, true),
};

/** A status for a failure: SqlError kinds map to the reference's gRPC codes; SQLSTATE in the message and `hd-sqlstate`. */
function statusOf(err: unknown): Partial<grpc.StatusObject> {
  const e = err instanceof SqlError ? err : err instanceof ProtoWireError ? new SqlError('invalid_statement', err.message) : new SqlError('internal', err instanceof Error ? err.message : String(err));
  const metadata = new grpc.Metadata();
  metadata.set('hd-sqlstate', e.codes.sqlstate);
  metadata.set('hd-error-code', e.kind);
  return { code: e.codes.grpc, details: `${e.message} (SQLSTATE ${e.codes.sqlstate})`, metadata };
}

/** The number of parameters of a statement: the highest `$n`, or else the count of `?` (outside quotes). */
function placeholders(sql: string): number {
  const bare = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"/g, '');
  let n = 0;
  for (const m of bare.matchAll(/\$(\d+)/g)) n = Math.max(n, Number(m[1]));
  return n > 0 ? n : (bare.match(/\?/g) ?? []).length;
}

/** A bound parameter value from an Arrow cell. */
function paramOf(v: unknown, column: string): SqlParam {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Uint8Array) throw new SqlError('invalid_statement', `parameter ${column}: binary parameters are not supported; bind text or numbers`);
  return String(v);
}

/** The Flight SQL listener over one engine. */
export class FlightSqlServer {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': 64 * 1024 * 1024, 'grpc.max_send_message_length': -1 });
  private readonly prepared = new Map<string, Prepared>();
  private readonly info: ReadonlyMap<number, SqlInfoValue>;
  /** Per dataset schema object: a changed dataset (live catalog) is a new Schema, described afresh. */
  private readonly tableSchemas = new WeakMap<object, arrow.Schema>();
  private readonly auth: FlightAuth;
  private stopWatchingTls: (() => void) | undefined;
  private readonly limits: DoorLimits;
  private readonly quota: PreparedQuota;

  constructor(
    private readonly engine: SqlEngine,
    private readonly options: FlightSqlServerOptions,
  ) {
    this.info = serverSqlInfo(FLIGHT_SERVER_VERSION, engine.settings.timeoutMs);
    this.auth = new FlightAuth(options.security?.credentials);
    this.limits = doorLimitsOf(options.limits);
    this.quota = new PreparedQuota(this.limits.maxPreparedStatements);
    // HD_SQL_MAX_CONNECTIONS counts calls in flight, before authentication as after.
    const gate = new ConnectionGate(this.limits.maxConnections, 'Arrow Flight SQL');
    this.server.addService(flightServiceDefinition, gatedCalls(this.guarded(this.handlers()), (name) => !flightServiceDefinition[name]?.responseStream, gate, options.log));
  }

  /** Binds the listener; resolves with the bound address. */
  listen(): Promise<ListenAddress> {
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return new Promise((resolve, reject) => {
      this.server.bindAsync(`${host}:${this.options.port}`, this.credentials(), (err, port) => {
        // grpc-js says only "No address added" when the bind fails: the usual cause is a port in use.
        if (err) reject(new Error(`${err.message} (is another process listening on port ${this.options.port}, or is the host not an address of this machine?)`, { cause: err }));
        else resolve({ host: this.options.host, port });
      });
    });
  }

  /** Plaintext, or TLS with the doors' certificate (a renewed one is served to new connections). */
  private credentials(): grpc.ServerCredentials {
    const tls = this.options.security?.tls;
    if (!tls) return grpc.ServerCredentials.createInsecure();
    const listeners = new Set<(u: { certificate: Buffer; privateKey: Buffer } | null) => void>();
    const provider = {
      addCaCertificateListener: (): void => undefined,
      removeCaCertificateListener: (): void => undefined,
      addIdentityCertificateListener: (l: (u: { certificate: Buffer; privateKey: Buffer } | null) => void): void => {
        listeners.add(l);
        const { cert, key } = tls.pem;
        // Not synchronously: grpc-js registers its own watcher only after this returns.
        queueMicrotask(() => l({ certificate: Buffer.from(cert), privateKey: Buffer.from(key) }));
      },
      removeIdentityCertificateListener: (l: (u: { certificate: Buffer; privateKey: Buffer } | null) => void): void => void listeners.delete(l),
    };
    this.stopWatchingTls = tls.watch(({ cert, key }) => {
      for (const l of listeners) l({ certificate: Buffer.from(cert), privateKey: Buffer.from(key) });
    });
    // grpc-js's certificate-provider credentials take the identity provider first (no client certificate asked).
    return grpc.experimental.createCertificateProviderServerCredentials(provider, null, false);
  }

  /**
   * Every method but the handshake behind the authorization check, run as the caller's SQL user
   * (HD_SQL_IDENTITY=user reads through the Proxy with that user's identity).
   */
  private guarded(handlers: grpc.UntypedServiceImplementation): grpc.UntypedServiceImplementation {
    const security = this.options.security ?? {};
    const out: grpc.UntypedServiceImplementation = {};
    for (const [name, handler] of Object.entries(handlers)) {
      if (name === 'Handshake') {
        out[name] = handler;
        continue;
      }
      const unary = !flightServiceDefinition[name]?.responseStream;
      out[name] = ((call: grpc.ServerUnaryCall<Buffer, Buffer> | grpc.ServerWritableStream<Buffer, Buffer>, cb?: grpc.sendUnaryData<Buffer>) => {
        const r = this.auth.check(call.metadata);
        if ('refused' in r) {
          this.options.log(`Flight SQL: ${name} refused: ${r.refused}`);
          if (unary) return cb?.(unauthenticated(r.refused));
          return call.emit('error', unauthenticated(r.refused));
        }
        return runAsSqlUser(statementIdentity(security, r.principal), () => (handler as (c: unknown, cb?: unknown) => void)(call, cb));
      }) as grpc.UntypedHandleCall;
    }
    return out;
  }

  /** Stops accepting calls and ends those in flight (their queries are cancelled). */
  close(): Promise<void> {
    this.stopWatchingTls?.();
    return new Promise((resolve) => {
      const t = setTimeout(() => this.server.forceShutdown(), 2000);
      this.server.tryShutdown(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  private handlers(): grpc.UntypedServiceImplementation {
    return {
      Handshake: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        // With credentials: Basic in, the session token out (response header, and each answer's payload).
        let token = Buffer.alloc(0);
        if (this.auth.required) {
          const r = this.auth.handshake(call.metadata);
          if ('refused' in r) {
            this.options.log(`Flight SQL: handshake refused: ${r.refused}`);
            call.emit('error', unauthenticated(r.refused));
            return;
          }
          const md = new grpc.Metadata();
          md.set('authorization', `Bearer ${r.token}`);
          call.sendMetadata(md);
          token = Buffer.from(r.token);
        }
        call.on('data', (b: Buffer) => {
          try {
            call.write(encodeHandshake({ protocolVersion: decodeHandshake(b).protocolVersion, payload: token }));
          } catch (err) {
            call.emit('error', statusOf(err));
          }
        });
        call.on('end', () => call.end());
      },
      ListFlights: (call: grpc.ServerWritableStream<Buffer, Buffer>) => call.end(),
      GetFlightInfo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        this.flightInfo(call.request).then((info) => cb(null, info), (err: unknown) => cb(statusOf(err)));
      },
      GetSchema: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        this.describeDescriptor(decodeDescriptorChecked(call.request)).then((r) => cb(null, encodeBytesMessage(serializeSchema(r.schema))), (err: unknown) => cb(statusOf(err)));
      },
      DoGet: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        const ac = new AbortController();
        call.on('cancelled', () => ac.abort());
        this.doGet(call, ac.signal).then(() => call.end(), (err: unknown) => (ac.signal.aborted ? undefined : call.emit('error', statusOf(err))));
      },
      DoPut: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        const messages: FlightData[] = [];
        let failed = false;
        const budget = new PutBudget(this.limits.maxPutBytes);
        call.on('data', (b: Buffer) => {
          if (failed) return;
          if (!budget.add(b.length)) {
            failed = true;
            messages.length = 0;
            this.options.log(`Flight SQL: DoPut from ${call.getPeer()} refused: more than ${budget.max} bytes (HD_SQL_FLIGHT_MAX_PUT_BYTES)`);
            call.emit('error', putTooLarge(budget.max));
            return;
          }
          try {
            messages.push(decodeFlightData(b));
          } catch (err) {
            failed = true;
            call.emit('error', statusOf(err));
          }
        });
        call.on('end', () => {
          if (failed) return;
          try {
            call.write(this.doPut(messages));
            call.end();
          } catch (err) {
            call.emit('error', statusOf(err));
          }
        });
      },
      DoExchange: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'DoExchange is not supported by hd_sql; use GetFlightInfo and DoGet (Flight SQL statement queries)' }),
      DoAction: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        this.doAction(call.request, call.getPeer()).then(
          (results) => {
            for (const r of results) call.write(encodeBytesMessage(r));
            call.end();
          },
          (err: unknown) => call.emit('error', statusOf(err)),
        );
      },
      ListActions: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        call.write(encodeActionType({ type: 'CreatePreparedStatement', description: 'Flight SQL: prepare a query (ActionCreatePreparedStatementRequest)' }));
        call.write(encodeActionType({ type: 'ClosePreparedStatement', description: 'Flight SQL: close a prepared statement (ActionClosePreparedStatementRequest)' }));
        call.end();
      },
    };
  }

  /** The schema a descriptor's command answers with, and the ticket that fetches it. */
  private async describeDescriptor(d: FlightDescriptor): Promise<{ schema: arrow.Schema; ticket: Buffer }> {
    const cmd = decodeCommand(d.cmd, 'FlightDescriptor.cmd');
    switch (cmd.kind) {
      case 'statementQuery': {
        const schema = await this.engine.describe(cmd.query, placeholders(cmd.query));
        return { schema, ticket: packAny('TicketStatementQuery', new FlightWriter().bytes(1, JSON.stringify({ sql: cmd.query })).finish()) };
      }
      case 'preparedStatementQuery':
        return { schema: this.preparedOf(cmd.handle).schema, ticket: d.cmd };
      case 'getCatalogs':
        return { schema: CATALOG_SCHEMAS.getCatalogs, ticket: d.cmd };
      case 'getDbSchemas':
        return { schema: CATALOG_SCHEMAS.getDbSchemas, ticket: d.cmd };
      case 'getTables':
        return { schema: cmd.includeSchema ? CATALOG_SCHEMAS.getTablesWithSchema : CATALOG_SCHEMAS.getTables, ticket: d.cmd };
      case 'getTableTypes':
        return { schema: CATALOG_SCHEMAS.getTableTypes, ticket: d.cmd };
      case 'getSqlInfo':
        return { schema: sqlInfoSchema(), ticket: d.cmd };
      default:
        throw new SqlError('invalid_statement', `FlightDescriptor.cmd: ${cmd.kind} is an action or ticket, not a command for GetFlightInfo`);
    }
  }

  private async flightInfo(request: Buffer): Promise<Buffer> {
    const d = decodeDescriptorChecked(request);
    const { schema, ticket } = await this.describeDescriptor(d);
    return encodeFlightInfo({ schema: serializeSchema(schema), descriptor: d, ticket, totalRecords: -1 });
  }

  /** The answer a ticket stands for. */
  private async answer(cmd: FlightSqlCommand, signal: AbortSignal): Promise<arrow.Table> {
    switch (cmd.kind) {
      case 'ticketStatementQuery': {
        let sql: unknown;
        try {
          sql = (JSON.parse(cmd.handle.toString('utf8')) as { sql?: unknown }).sql;
        } catch {
          sql = undefined;
        }
        if (typeof sql !== 'string') throw new SqlError('invalid_statement', 'Ticket: the statement handle is not one this server issued; get tickets from GetFlightInfo');
        return this.run(sql, [], signal);
      }
      case 'preparedStatementQuery': {
        const p = this.preparedOf(cmd.handle);
        return this.run(p.sql, p.params, signal);
      }
      case 'getCatalogs':
        return catalogsTable();
      case 'getDbSchemas':
        return dbSchemasTable(cmd);
      case 'getTables': {
        const tables = selectCatalogTables(this.engine.catalog, cmd);
        return tablesTable(tables.map((t) => t.name), cmd.includeSchema ? await Promise.all(tables.map((t) => this.tableSchema(t))) : undefined);
      }
      case 'getTableTypes':
        return tableTypesTable();
      case 'getSqlInfo':
        return sqlInfoTable(this.info, cmd.info);
      default:
        throw new SqlError('invalid_statement', `Ticket: ${cmd.kind} is not a ticket; get tickets from GetFlightInfo`);
    }
  }

  private async run(sql: string, params: SqlParam[], signal: AbortSignal): Promise<arrow.Table> {
    const r = await this.engine.execute(sql, { signal, ...(params.length > 0 ? { params } : {}) });
    for (const n of r.notices) this.options.log(`Flight SQL notice: ${n} (statement: ${sql.length > 200 ? `${sql.slice(0, 200)}…` : sql})`);
    return r.table;
  }

  /** A dataset's columns as a query answers them (the presented types, not the stored ones), with the catalog's types. */
  private async tableSchema(rel: PgRelation): Promise<arrow.Schema> {
    const key = rel.dataset as object;
    let s = this.tableSchemas.get(key);
    if (!s) {
      s = flightTableSchema(rel, await this.engine.describe(`SELECT * FROM "${rel.name.replace(/"/g, '""')}"`, 0));
      this.tableSchemas.set(key, s);
    }
    return s;
  }

  private async doGet(call: grpc.ServerWritableStream<Buffer, Buffer>, signal: AbortSignal): Promise<void> {
    const table = await this.answer(decodeCommand(decodeTicket(call.request), 'Ticket'), signal);
    for (const m of tableMessages(table)) {
      if (signal.aborted) return;
      if (!call.write(encodeFlightData(m))) await drained(call);
    }
  }

  private async doAction(request: Buffer, peer: string): Promise<Buffer[]> {
    const action = decodeAction(request);
    if (action.type === 'CreatePreparedStatement') {
      const cmd = decodeCommand(action.body, 'Action.body');
      if (cmd.kind !== 'createPreparedStatement') throw new SqlError('invalid_statement', `CreatePreparedStatement takes an ActionCreatePreparedStatementRequest, not ${cmd.kind}`);
      this.quota.take(peer);
      let schema: arrow.Schema;
      try {
        schema = await this.engine.describe(cmd.query, placeholders(cmd.query));
      } catch (err) {
        this.quota.give(peer);
        throw err;
      }
      const handle = randomBytes(16);
      if (this.prepared.size >= MAX_PREPARED) {
        const oldest = this.prepared.keys().next().value as string;
        this.quota.give((this.prepared.get(oldest) as Prepared).owner);
        this.prepared.delete(oldest);
      }
      this.prepared.set(handle.toString('hex'), { owner: peer, sql: cmd.query, schema, params: [] });
      const result = new FlightWriter().bytes(1, handle).bytes(2, serializeSchema(schema)).finish();
      return [packAny('ActionCreatePreparedStatementResult', result)];
    }
    if (action.type === 'ClosePreparedStatement') {
      const cmd = decodeCommand(action.body, 'Action.body');
      if (cmd.kind !== 'closePreparedStatement') throw new SqlError('invalid_statement', `ClosePreparedStatement takes an ActionClosePreparedStatementRequest, not ${cmd.kind}`);
      const closing = this.prepared.get(cmd.handle.toString('hex'));
      if (closing) {
        this.quota.give(closing.owner);
        this.prepared.delete(cmd.handle.toString('hex'));
      }
      return [];
    }
    throw new SqlError('unsupported_statement', `the action ${JSON.stringify(action.type)} is not supported by hd_sql (ListActions names those it is)`);
  }

  /** Binds the first row of the put batches as the prepared statement's parameters. */
  private doPut(messages: readonly FlightData[]): Buffer {
    const d = messages[0]?.descriptor;
    if (!d) throw new SqlError('invalid_statement', 'DoPut: the first FlightData must carry the FlightDescriptor with a Flight SQL command');
    const cmd = decodeCommand(d.cmd, 'FlightDescriptor.cmd');
    if (cmd.kind !== 'preparedStatementQuery') throw new SqlError('unsupported_statement', `DoPut: ${cmd.kind} is not supported; hd_sql is read-only and takes DoPut only to bind parameters of a prepared query`);
    const p = this.preparedOf(cmd.handle);
    let table: arrow.Table;
    try {
      table = tableFromIPC(joinIpcMessages(messages));
    } catch (err) {
      throw new SqlError('invalid_statement', `DoPut: the parameters are not an Arrow IPC stream (${err instanceof Error ? err.message : String(err)})`, { cause: err });
    }
    if (table.numRows > 1) throw new SqlError('invalid_statement', `DoPut: ${table.numRows} rows of parameters; bind one row per query`);
    p.params = table.numRows === 0 ? [] : table.schema.fields.map((f, i) => paramOf(table.getChildAt(i)?.get(0), f.name));
    // PutResult.app_metadata is a bare DoPutPreparedStatementResult (not an Any): the handle stays valid.
    return encodeBytesMessage(new FlightWriter().bytes(1, cmd.handle).finish());
  }

  private preparedOf(handle: Buffer): Prepared {
    const p = this.prepared.get(handle.toString('hex'));
    if (!p) throw new SqlError('invalid_statement', 'unknown prepared statement handle (closed, or from another server); prepare the statement again');
    return p;
  }
}

function decodeDescriptorChecked(b: Buffer): FlightDescriptor {
  const d = decodeDescriptor(b);
  if (d.type !== 2) throw new SqlError('invalid_statement', `FlightDescriptor: only CMD descriptors (type 2) carrying a Flight SQL command are served, not type ${d.type}${d.path.length ? ` (path ${d.path.join('/')})` : ''}`);
  return d;
}

/** Resolves when the stream can take more, or is over. */
function drained(call: grpc.ServerWritableStream<Buffer, Buffer>): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
    call.on('close', done);
  });
}
