/**
 * The client host of the multi-host test, run inside its own network namespace
 * (`ip netns exec <ns> node -r tsx/cjs test/deploy/multiHostClient.ts <mode>`). Its return address is
 * discovered as hd-node.js discovers a node's: the local IPv4 address inside
 * PLATFORM_DATA_PLANE_SUBNET, given to the query client as its data-plane interface (bound and
 * advertised to the Storage Nodes). Modes, each printing one JSON object per line on stdout:
 *
 * - `ingest <first> <count>`: batch `first + i` (a minute of MH_PER_BATCH records from MH_T0) per step,
 *   printing `{ acked }` (the batch id in hex) or `{ failed, error }`, then waiting for a line on
 *   stdin before the next step, so the test cuts links between acknowledged batches;
 * - `query`: every record of the window, and those with `n >= 30`: `{ returnHost, all, some }`;
 * - `sql`: an SQL client of hd_sql over the PostgreSQL wire (node-postgres), one round per line on
 *   stdin: `SELECT count(*)` of the window, the count of `n >= 30` and the records with `n = 7`,
 *   printing `{ all, some, sevens }` (or `{ error }`, and going on).
 *
 * Settings: MH_SCC (host:port, ingest), MH_SCC_GRPC (host:port, queries), MH_SCHEMA (the dataset's
 * schema JSON), MH_TLS (a JSON file of the client's DMS-issued `{ ca, cert, key }`), MH_SQL
 * (host:port of hd_sql's PostgreSQL wire door) and MH_SQL_PASSWORD_FILE (its password).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import readline from 'node:readline';
import pg from 'pg';
import { PlatformIngestClient } from '../../sdk/platformIngestClient';
import { PlatformQueryClient } from '../../sdk/platformQueryClient';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const print = (o: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(o)}\n`);

/** The local IPv4 address inside `cidr` (PLATFORM_DATA_PLANE_SUBNET), as hd-node.js finds a node's. */
function addressInSubnet(cidr: string): string {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr.trim());
  if (!m) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const block = new net.BlockList();
  block.addSubnet(m[1] as string, Number(m[2]), 'ipv4');
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && block.check(a.address, 'ipv4')) return a.address;
  }
  throw new Error(`no local IPv4 address in ${cidr}`);
}

const T0 = Number(env('MH_T0'));
const PER_BATCH = Number(env('MH_PER_BATCH'));
const schema = env('MH_SCHEMA');
const hostPort = (s: string): { host: string; port: number } => ({ host: s.slice(0, s.lastIndexOf(':')), port: Number(s.slice(s.lastIndexOf(':') + 1)) });

async function ingest(first: number, count: number): Promise<void> {
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  await using c = new PlatformIngestClient();
  c.loadDatasetSchema(schema);
  c.setSccTargets([env('MH_SCC')]);
  for (let b = first; b < first + count; b++) {
    const start = T0 + b * 60;
    const id = c.generateBatchIdTime(start, start + 60);
    const recs = Array.from({ length: PER_BATCH }, (_, i) => c.convertRecordToBinary({ ts: String(start + i), n: String(i) }));
    const ok = (await c.streamInsert(id, recs)) && (await c.sendEob(id));
    print(ok ? { acked: id.toHex() } : { failed: b, error: String(c.lastError) });
    if (!ok) process.exit(1);
    if (b < first + count - 1) await lines.next();
  }
}

async function query(): Promise<void> {
  const tls = JSON.parse(readFileSync(env('MH_TLS'), 'utf8')) as { ca: string; cert: string; key: string };
  const returnHost = addressInSubnet(env('PLATFORM_DATA_PLANE_SUBNET'));
  const scc = hostPort(env('MH_SCC'));
  const grpc = hostPort(env('MH_SCC_GRPC'));
  await using q = new PlatformQueryClient('', returnHost, '', { listenPort: 0, log: () => undefined, dispatchTls: tls });
  q.loadDatasetSchema(schema);
  q.setSccTargets([{ host: grpc.host, port: scc.port, grpcPort: grpc.port }]);
  const window = { start_time: T0, end_time: T0 + 3600 };
  const all = await q.executeDataset(window);
  const some = await q.executeDataset({ ...window, sub_queries: [{ filters: [{ field: 'n', op: 'ge', value: '30' }] }] });
  print({ returnHost, all: all.numRows, some: some.numRows });
}

/** hd_sql over the PostgreSQL wire: one connection, one round of statements per line on stdin. */
async function sql(): Promise<void> {
  const at = hostPort(env('MH_SQL'));
  const password = readFileSync(env('MH_SQL_PASSWORD_FILE'), 'utf8').split('\n')[0] as string;
  const c = new pg.Client({ host: at.host, port: at.port, user: 'hd', database: 'hd', password });
  await c.connect();
  try {
    const window = `ts >= ${T0} AND ts < ${T0 + 3600}`;
    const count = async (where: string): Promise<number> => Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM mh WHERE ${where}`)).rows[0]?.n);
    for await (const line of readline.createInterface({ input: process.stdin })) {
      if (line.trim() === '') continue;
      try {
        const all = await count(window);
        const some = await count(`${window} AND n >= 30`);
        const sevens = (await c.query<{ n: number }>(`SELECT n FROM mh WHERE ${window} AND n = 7`)).rows.map((r) => Number(r.n));
        print({ all, some, sevens: sevens.length, allSeven: sevens.every((n) => n === 7) });
      } catch (err) {
        print({ error: `${(err as { code?: string }).code ?? ''} ${(err as Error).message}` });
      }
    }
  } finally {
    await c.end();
  }
}

const [mode, a, b] = process.argv.slice(2);
(mode === 'ingest' ? ingest(Number(a), Number(b)) : mode === 'sql' ? sql() : query()).then(
  () => process.exit(0),
  (err: unknown) => {
    print({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exit(1);
  },
);
