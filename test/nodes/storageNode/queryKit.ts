/**
 * Helpers of the Storage Node query tests: pipelines/storage-node.yaml run in this process with a
 * config.json on free loopback ports, batches ingested through its production port (the normal
 * ingest path), an SCC-side control connection on its command port, and the client's
 * ResultListener as the return address. Real sockets only.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { BatchID, encodeFrame, FrameDecoder, generateBatchIdNumber, HashChain } from '../../../engine-rs/index';
import type { Frame, QueryAuth } from '../../../engine-rs/index';
import { builtinRegistry } from '../../../roles/builtins';
import { loadPipelineFile } from '../../../pipelines/load';
import { runPipeline, type RunResult } from '../../../pipelines/run';
import { serializeHdQuery, type HdQuery } from '../../../query/hdQuery';
import { newQueryToken } from '../../../query/token';
import { HdwpClient } from '../../../hdwp/hdwpClient';
import { ResultListener, type QueryResult } from '../../../hdwp/resultListener';
import { freePort } from '../../support/hdProcess';

/** Record size, chain block size and algorithm of the test dataset. */
export const R = 40;
export const BLOCK = 16;
export const DS = 'ticks';
const yaml = path.resolve(__dirname, '../../../pipelines/storage-node.yaml');

/** The test dataset's schema: `ts` timestamp, `id` uint64, `price` int32, `qty` uint16, `side` uint8 (enum), `sym` string(16). */
export const SCHEMA = {
  id: DS,
  record_size: R,
  byte_order: 'little',
  time_field: 'ts',
  enums: { side: { values: { buy: 1, sell: 2 } } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'id', offset: 8, size: 8, type: 'uint64' },
    { name: 'price', offset: 16, size: 4, type: 'int32' },
    { name: 'qty', offset: 20, size: 2, type: 'uint16' },
    { name: 'side', offset: 22, size: 1, type: 'uint8', enum: 'side' },
    { name: 'sym', offset: 24, size: 16, type: 'string' },
  ],
};

const SYMBOLS = ['AAPL', 'MSFT', 'GOOG', 'AMZN', 'TSLA', 'NVDA', ''];

/** `n` records of batch `seed`, deterministic (xorshift), with record `i` of the batch having id `seed * 1e6 + i`. */
export function makeRecords(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n * R);
  let x = (seed * 2654435761) >>> 0 || 1;
  const rnd = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  for (let i = 0; i < n; i++) {
    const o = i * R;
    b.writeBigInt64LE(BigInt(1_700_000_000 + seed * 3600 + i), o);
    b.writeBigUInt64LE(BigInt(seed * 1_000_000 + i), o + 8);
    b.writeInt32LE(Math.floor(rnd() * 20000) - 10000, o + 16);
    b.writeUInt16LE(Math.floor(rnd() * 1000), o + 20);
    b.writeUInt8(1 + Math.floor(rnd() * 2), o + 22);
    b.write(SYMBOLS[Math.floor(rnd() * SYMBOLS.length)], o + 24, 16, 'utf8');
  }
  return b;
}

/** The SCC's closing hash of a batch (sha256, blocks of {@link BLOCK}). */
export async function closingHash(id: BatchID, data: Buffer): Promise<Buffer> {
  const c = new HashChain(id, { recordSize: R, blockSize: BLOCK, algorithm: 'sha256' });
  await c.update(data);
  return c.finish().closingHash;
}

/** A Storage Node pipeline running in this process. */
export interface TestNode {
  readonly dir: string;
  readonly productionPort: number;
  readonly commandPort: number;
  readonly obsPort: number;
  /** Text of /metrics. */
  metrics(): Promise<string>;
  /** The value of a counter on /metrics. */
  counter(name: string): Promise<number>;
  /** Ingests batches through the production port; returns their ids and records. */
  ingest(batches: readonly { id: BatchID; data: Buffer }[]): Promise<void>;
  /** Segment path of a stored batch (from /v1/batches). */
  segmentPath(id: BatchID): Promise<string>;
  stop(): Promise<RunResult>;
}

/** Starts pipelines/storage-node.yaml (schemas in `schema_dir` unless `schemas: false`). */
export async function startNode(opts: { schemas?: boolean; dir?: string; /** Rewrites storage-node.yaml's text before it loads. */ edit?: (yaml: string) => string } = {}): Promise<TestNode> {
  const dir = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), 'hd-snquery-'));
  const [productionPort, commandPort, obsPort] = [await freePort(), await freePort(), await freePort()];
  const schemaDir = path.join(dir, 'schemas');
  mkdirSync(schemaDir, { recursive: true });
  if (opts.schemas !== false) writeFileSync(path.join(schemaDir, `${DS}.json`), JSON.stringify(SCHEMA));
  const config = {
    node_name: 'sn-query',
    production_ip: '127.0.0.1',
    production_port: productionPort,
    command_port: commandPort,
    observability_port: obsPort,
    reserve_bytes: 0,
    storage_devices: [
      { name: 'd0', address: 'd0', type: 'dir' },
      { name: 'd1', address: 'd1', type: 'dir' },
    ],
  };
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const overrides = {
    CONFIG_FILE: file,
    production_ip: '127.0.0.1',
    production_port: String(productionPort),
    HASH_ALGORITHM: 'sha256',
    HASH_CHAIN_BLOCK_SIZE: String(BLOCK),
    RECORD_SIZE: String(R),
    SCHEMA_DIR: schemaDir,
    // One batch at a time, so batch ends come back in query order (queryColumnar.test.ts covers more threads).
    QUERY_THREADS: '1',
  };
  let file2 = yaml;
  if (opts.edit) {
    file2 = path.join(dir, 'storage-node.yaml');
    writeFileSync(file2, opts.edit(readFileSync(yaml, 'utf8')));
  }
  const loaded = await loadPipelineFile(file2, { registry: builtinRegistry(), env: {}, overrides, baseDir: path.dirname(yaml) });
  if (!loaded.ok) {
    if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    throw new Error(loaded.problems.map((p) => p.message).join('\n'));
  }
  const abort = new AbortController();
  const result = runPipeline(loaded.pipeline, { signal: abort.signal });
  let ended: RunResult | undefined;
  void result.then((r) => (ended = r));
  const alive = (): boolean => {
    if (ended) throw new Error(`the node's pipeline ended at start: ${ended.status} ${ended.error?.message ?? ''}`);
    return true;
  };
  const base = `http://127.0.0.1:${obsPort}`;
  const metrics = async (): Promise<string> => (await fetch(`${base}/metrics`)).text();
  await untilOk(async () => alive() && (await fetch(`${base}/health`).catch(() => undefined))?.status === 200);
  await untilOk(async () => alive() && (await connects(commandPort)));
  return {
    dir,
    productionPort,
    commandPort,
    obsPort,
    metrics,
    counter: async (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await metrics())?.[1] ?? 'NaN'),
    ingest: (batches) => ingestBatches('127.0.0.1', productionPort, batches),
    segmentPath: async (id) => {
      const list = (await (await fetch(`${base}/v1/batches?dataset=${DS}`)).json()) as { batches: { batch_id: string; path: string }[] };
      const e = list.batches.find((b) => b.batch_id === id.toHex());
      if (!e) throw new Error(`batch ${id.toHex()} is not stored`);
      return e.path;
    },
    stop: async () => {
      abort.abort();
      const r = await result;
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
      return r;
    },
  };
}

/** Resolves once `cond()` holds (no time limit: uvu's run ends a hung test). */
export async function untilOk(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 5));
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Batch `n` of the tests: its id and `records` records. */
export function batchOf(n: number, records: number): { id: BatchID; data: Buffer } {
  return { id: generateBatchIdNumber(BigInt(n)), data: makeRecords(records, n) };
}

/** The SCC's side of a control connection: hello, query and cancel frames out; what the node answers, decoded. */
export class ControlPeer {
  readonly frames: Frame[] = [];
  readonly closed: Promise<void>;
  private readonly decoder = new FrameDecoder();

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => this.frames.push(...this.decoder.push(c)));
    socket.on('error', () => undefined);
    this.closed = new Promise((r) => socket.once('close', () => r()));
  }

  /** Connects and sends hello (role scc); resolves once the node answered hello and credit. */
  static async open(port: number, dataset = DS, recordSize = R, host = '127.0.0.1'): Promise<ControlPeer> {
    const s = await new Promise<net.Socket>((resolve, reject) => {
      const sock = net.connect({ host, port }, () => resolve(sock));
      sock.once('error', reject);
    });
    const p = new ControlPeer(s);
    s.write(encodeFrame({ kind: 'hello', version: 1, role: 'scc', datasetId: dataset, recordSize }));
    await untilOk(() => p.frames.some((f) => f.kind === 'credit') || s.destroyed);
    return p;
  }

  /** Opens a control connection, sends one query and waits for `batches` batch ends of it. */
  static async ask(port: number, auth: QueryAuth, json: string, batches: number): Promise<{ scc: ControlPeer; ends: Frame[] }> {
    const scc = await ControlPeer.open(port);
    scc.sendQuery(auth, json);
    return { scc, ends: await scc.batchEnds(auth.queryId, batches) };
  }

  /** Sends a query frame with `json` (the HDQuery JSON text). */
  sendQuery(auth: QueryAuth, json: string): void {
    this.socket.write(encodeFrame({ kind: 'query', queryId: auth.queryId, token: auth.token, json }));
  }

  /** Sends a cancel frame. */
  sendCancel(auth: QueryAuth): void {
    this.socket.write(encodeFrame({ kind: 'cancel', queryId: auth.queryId, token: auth.token }));
  }

  /** Frames that carry `queryId`'s query block. */
  of(queryId: number): Frame[] {
    return this.frames.filter((f) => 'auth' in f && f.auth?.queryId === queryId);
  }

  /** Waits for the first error frame of `queryId`. */
  async errorOf(queryId: number): Promise<{ code: number; message: string }> {
    await untilOk(() => this.of(queryId).some((f) => f.kind === 'error') || this.socket.destroyed);
    const f = this.of(queryId).find((x) => x.kind === 'error');
    if (!f || f.kind !== 'error') throw new Error(`no error frame for query ${queryId}; got ${this.frames.map((x) => x.kind).join(', ')}`);
    return { code: f.code, message: f.message };
  }

  /** Waits until `n` batch ends (eob / bbn echoes) of `queryId` arrived. */
  async batchEnds(queryId: number, n: number): Promise<Frame[]> {
    await untilOk(() => this.of(queryId).filter((f) => f.kind === 'eob' || f.kind === 'bbn').length >= n || this.socket.destroyed);
    return this.of(queryId).filter((f) => f.kind === 'eob' || f.kind === 'bbn');
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Sends `batches` to a Storage Node's production port as its SCC does: records, then an eob with the closing hash. */
export async function ingestBatches(host: string, port: number, batches: readonly { id: BatchID; data: Buffer }[]): Promise<void> {
  const c = await HdwpClient.connect({ host, port, role: 'scc', datasetId: DS, recordSize: R });
  for (const b of batches) {
    await c.sendRecords(b.id, b.data);
    await c.sendEob(b.id, b.data.length / R, await closingHash(b.id, b.data));
  }
  await c.close();
}

/**
 * Sends `client`'s query for `ids` through `scc` and waits for its results: asserts that the node
 * ends each batch with an eob, then returns the records received, by batch id.
 */
export async function queryAndCollect(client: TestClient, scc: ControlPeer, ids: readonly BatchID[]): Promise<Map<string, Buffer>> {
  const { auth, json, results } = client.query(ids);
  scc.sendQuery(auth, json);
  const ends = await scc.batchEnds(auth.queryId, ids.length);
  assert.equal(
    ends.map((f) => f.kind),
    ids.map(() => 'eob'),
  );
  await untilOk(() => results.length === ids.length);
  return recordsByBatch(results);
}

/** A client: a ResultListener on a free port (of loopback unless told), and queries opened on it. */
export class TestClient {
  private nextId = 1;

  private constructor(
    readonly listener: ResultListener,
    readonly port: number,
    readonly host: string,
  ) {}

  /** Starts the listener (`creditWindow`: bytes a stream may have in flight) on `host` (default loopback). */
  static async start(creditWindow?: number, host = '127.0.0.1'): Promise<TestClient> {
    const listener = new ResultListener({ host, port: 0, creditWindow });
    const { port } = await listener.listen();
    return new TestClient(listener, port, host);
  }

  /** A new query: its HDQuery (for `batches`, with `extra` keys) and what arrives for it. */
  query(batches: readonly BatchID[], extra: Partial<HdQuery> = {}, handler?: (r: QueryResult) => void | Promise<void>): { auth: QueryAuth; q: HdQuery; json: string; results: QueryResult[] } {
    const auth: QueryAuth = { queryId: this.nextId++, token: newQueryToken() };
    const q: HdQuery = {
      queryId: auth.queryId,
      dataset: DS,
      batchIds: batches.map((b) => b.toHex()),
      subQueries: [],
      targets: [],
      verifyHash: false,
      queryQos: 1,
      returnAddress: { host: this.host, port: this.port },
      token: auth.token,
      ...extra,
    };
    const results: QueryResult[] = [];
    this.listener.open(auth, async (r) => {
      results.push(r);
      await handler?.(r);
    });
    return { auth, q, json: serializeHdQuery(q), results };
  }

  close(): Promise<void> {
    return this.listener.close();
  }
}

/** Records of the complete batches of a result list, concatenated per batch id (hex). */
export function recordsByBatch(results: readonly QueryResult[]): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const r of results) if (r.kind === 'batch') out.set(r.batchId.toHex(), Buffer.concat(r.records));
  return out;
}
