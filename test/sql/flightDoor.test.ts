/**
 * The Flight SQL door in-process over real gRPC, on engines whose fetcher the test controls: a
 * client cancelling DoGet aborts the query's fetch; HD_SQL_QUERY_TIMEOUT_MS answers
 * DeadlineExceeded with 57014; SqlInfo's dense union, the catalog commands' filters, Handshake,
 * ListActions and ListFlights as a client reads them; the IPC splitter on truncated streams.
 */
import * as arrow from 'apache-arrow';
import * as grpc from '@grpc/grpc-js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LocalSql } from '../../local/localSql';
import { Catalog } from '../../sql/catalog';
import type { DatasetFetcher } from '../../sql/datasetFetcher';
import { FlightSqlServer } from '../../sql/flight/flightServer';
import { IpcError, joinIpcMessages, splitIpcStream, tableMessages } from '../../sql/flight/ipcMessages';
import { SqlEngine } from '../../sql/sqlEngine';
import { SqlError } from '../../sql/sqlError';
import { any, dec, duplex, enc, fetchCommand, serverStream, ticket, unary } from './flightClient';
import { flowsSchema, T0 } from './support';

/** A fetcher that never delivers: it waits for the abort signal or the deadline, as the real one does. */
function hangingFetcher(): { fetcher: DatasetFetcher; entered: Promise<void>; aborted: Promise<void> } {
  let enter = (): void => undefined;
  let abort = (): void => undefined;
  const entered = new Promise<void>((r) => (enter = r));
  const aborted = new Promise<void>((r) => (abort = r));
  const fetcher: DatasetFetcher = {
    fetch: (_read, _onBatch, opts) =>
      new Promise((_resolve, reject) => {
        enter();
        const t = setTimeout(() => reject(new SqlError('query_timeout', 'timed out waiting for the Storage Nodes (HD_SQL_QUERY_TIMEOUT_MS)')), Math.max(0, opts.deadline - Date.now()));
        opts.signal?.addEventListener('abort', () => {
          clearTimeout(t);
          abort();
          reject(new SqlError('query_timeout', 'canceling statement due to user request'));
        });
      }),
  };
  return { fetcher, entered, aborted };
}

const door = suite('Flight SQL door in-process: cancel, timeout, SqlInfo, catalog filters');
const local = new LocalSql({ threads: 1 });
const logs: string[] = [];
const servers: FlightSqlServer[] = [];
async function serve(fetcher: DatasetFetcher, timeoutMs: number): Promise<string> {
  const engine = new SqlEngine(new Catalog([flowsSchema]), local, fetcher, { lookbackSec: 3600, timeoutMs, maxRows: 0, qos: 1 }, () => T0 + 300);
  const s = new FlightSqlServer(engine, { host: '127.0.0.1', port: 0, log: (l) => logs.push(l) });
  servers.push(s);
  const a = await s.listen();
  return `127.0.0.1:${a.port}`;
}
door.after(async () => {
  for (const s of servers) await s.close();
  await local.close();
});

const statement = (q: string): Buffer => any('CommandStatementQuery', { query: q });
async function ticketFor(address: string, cmd: Buffer): Promise<Buffer> {
  const info = await unary(address, 'GetFlightInfo', enc('arrow.flight.protocol.FlightDescriptor', { type: 2, cmd }));
  assert.equal(info.err, undefined);
  return ticket(dec<{ endpoint: { ticket: { ticket: Uint8Array } }[] }>('arrow.flight.protocol.FlightInfo', info.ok as Buffer).endpoint[0]?.ticket.ticket ?? new Uint8Array());
}

door('a client cancelling DoGet aborts the query while it waits on the Storage Nodes', async () => {
  const h = hangingFetcher();
  const address = await serve(h.fetcher, 600_000);
  const t = await ticketFor(address, statement(`SELECT count(*) FROM flows WHERE ts >= ${T0}`));
  let call: grpc.ClientReadableStream<Buffer> | undefined;
  const done = serverStream(address, 'DoGet', t, (c) => (call = c));
  await h.entered;
  call?.cancel();
  await h.aborted; // the fetch saw the abort (the real fetcher cancels at the SCCs here)
  assert.is((await done).err?.code, grpc.status.CANCELLED);
});

door('HD_SQL_QUERY_TIMEOUT_MS passing answers DeadlineExceeded with SQLSTATE 57014', async () => {
  const address = await serve(hangingFetcher().fetcher, 200);
  const r = await serverStream(address, 'DoGet', await ticketFor(address, statement(`SELECT count(*) FROM flows WHERE ts >= ${T0}`)));
  assert.is(r.err?.code, grpc.status.DEADLINE_EXCEEDED, JSON.stringify(r.err));
  assert.match(r.err?.details ?? '', /HD_SQL_QUERY_TIMEOUT_MS.*SQLSTATE 57014/);
  assert.equal(r.err?.metadata?.get('hd-sqlstate'), ['57014']);
});

door('SqlInfo: the dense union reads back; asking for ids filters; catalog filters; Handshake, ListActions, ListFlights', async () => {
  const address = await serve(hangingFetcher().fetcher, 600_000);
  const all = await fetchCommand(address, any('CommandGetSqlInfo', {}));
  assert.equal(all.err, undefined);
  const rows = new Map((all.table?.toArray() ?? []).map((r: { info_name: number; value: unknown }) => [r.info_name, r.value]));
  assert.is(rows.get(0), 'hd_sql');
  assert.is(rows.get(3), true); // FLIGHT_SQL_SERVER_READ_ONLY
  assert.is(rows.get(8), 0); // FLIGHT_SQL_SERVER_TRANSACTION: none
  assert.is(rows.get(100), 600_000); // statement timeout (ms)
  const some = await fetchCommand(address, any('CommandGetSqlInfo', { info: [3, 0, 999] }));
  assert.equal(some.table?.toArray().map((r: { info_name: number }) => r.info_name), [0, 3]);
  assert.ok(arrow.DataType.isUnion(some.schema?.fields[1]?.type as arrow.DataType));

  const tables = async (v: Record<string, unknown>): Promise<string[]> => ((await fetchCommand(address, any('CommandGetTables', v))).table?.toArray() ?? []).map((r: { table_name: string }) => r.table_name);
  assert.equal(await tables({}), ['flows']);
  assert.equal(await tables({ table_name_filter_pattern: 'fl%' }), ['flows']);
  assert.equal(await tables({ table_name_filter_pattern: 'f_ows' }), ['flows']);
  assert.equal(await tables({ table_name_filter_pattern: 'nope%' }), []);
  assert.equal(await tables({ catalog: 'other' }), []);
  assert.equal(await tables({ table_types: ['VIEW'] }), []);
  const withSchema = await fetchCommand(address, any('CommandGetTables', { include_schema: true }));
  const bytes = withSchema.table?.getChild('table_schema')?.get(0) as Uint8Array;
  assert.equal(arrow.tableFromIPC(bytes).schema.fields.map((f) => f.name), flowsSchema.fields.map((f) => f.name));
  const schemas = (await fetchCommand(address, any('CommandGetDbSchemas', { db_schema_filter_pattern: 'pub%' }))).table?.toArray().map((r: { catalog_name: string; db_schema_name: string }) => `${r.catalog_name}.${r.db_schema_name}`);
  assert.equal(schemas, ['hd.public']);
  assert.equal((await fetchCommand(address, any('CommandGetDbSchemas', { db_schema_filter_pattern: 'x' }))).table?.numRows, 0);
  assert.equal((await fetchCommand(address, any('CommandGetCatalogs', {}))).table?.toArray().map((r: { catalog_name: string }) => r.catalog_name), ['hd']);
  assert.equal((await fetchCommand(address, any('CommandGetTableTypes', {}))).table?.toArray().map((r: { table_type: string }) => r.table_type), ['TABLE']);

  const hs = await duplex(address, 'Handshake', [enc('arrow.flight.protocol.HandshakeRequest', { protocol_version: 1, payload: Buffer.from('hi') })]);
  assert.equal(hs.err, undefined);
  assert.is(Number(dec<{ protocol_version: number }>('arrow.flight.protocol.HandshakeResponse', hs.messages[0] as Buffer).protocol_version), 1);
  const actions = await serverStream(address, 'ListActions', Buffer.alloc(0));
  assert.equal(actions.messages.map((m) => dec<{ type: string }>('arrow.flight.protocol.ActionType', m).type), ['CreatePreparedStatement', 'ClosePreparedStatement']);
  assert.equal((await serverStream(address, 'ListFlights', Buffer.alloc(0))).messages, []);
});

door('a port in use is refused at listen', async () => {
  const address = await serve(hangingFetcher().fetcher, 1000);
  const engine = new SqlEngine(new Catalog([flowsSchema]), local, hangingFetcher().fetcher, { lookbackSec: 3600, timeoutMs: 1000, maxRows: 0, qos: 1 });
  const second = new FlightSqlServer(engine, { host: '127.0.0.1', port: Number(address.split(':')[1]), log: () => undefined });
  const err = await second.listen().then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  await second.close();
  assert.ok(err, 'a second server bound the same port');
  assert.match(err?.message ?? '', /another process listening on port/);
});

door('IPC splitting: schema first, dictionaries before the batches that use them; truncated streams are refused', () => {
  const proto = arrow.vectorFromArray(['tcp', 'udp', 'tcp'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()));
  const table = new arrow.Table({ proto, n: arrow.vectorFromArray([1, 2, 3], new arrow.Int32()) });
  const msgs = tableMessages(table.concat(table));
  const kinds = msgs.map((m) => arrow.Message.decode(m.header).headerType);
  assert.is(kinds[0], arrow.MessageHeader.Schema);
  assert.is(kinds[1], arrow.MessageHeader.DictionaryBatch);
  assert.ok(kinds.slice(2).every((k) => k === arrow.MessageHeader.RecordBatch || k === arrow.MessageHeader.DictionaryBatch));
  assert.is(kinds.filter((k) => k === arrow.MessageHeader.RecordBatch).length, 2);
  // A batch over the size limit goes as row slices, each message under it, the rows all there in order.
  const big = new arrow.Table({ s: arrow.vectorFromArray(Array.from({ length: 1000 }, (_, i) => `${i}`.padEnd(100, 'x')), new arrow.Utf8()) });
  const parts = tableMessages(big, 10_000);
  assert.ok(parts.length > 10);
  assert.ok(parts.every((m) => m.body.length <= 12_000), String(Math.max(...parts.map((m) => m.body.length))));
  const back = arrow.tableFromIPC(joinIpcMessages(parts));
  assert.equal(back.getChild('s')?.toArray(), big.getChild('s')?.toArray());
  const stream = arrow.tableToIPC(table, 'stream');
  assert.throws(() => splitIpcStream(stream.subarray(0, 12)), (e: unknown) => e instanceof IpcError);
  assert.throws(() => splitIpcStream(stream.subarray(0, stream.length - 20)), (e: unknown) => e instanceof IpcError);
  assert.throws(() => splitIpcStream(Uint8Array.from([0xff, 0xff, 0xff, 0xff])), (e: unknown) => e instanceof IpcError);
});

door.run();
