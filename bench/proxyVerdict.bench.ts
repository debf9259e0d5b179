/**
 * The Proxy's per-statement filter verdict over many durable batches, in process: StorageNodeFilters
 * over two stand-in Storage Nodes (plain HTTP, answering every batch with the flows layouts) and
 * computeVerdict, for a query over `--batches` one-minute batches (hd up's demo: 1 441). After the
 * first statement every filter is cached, so what is timed is the Proxy's CPU per statement; the
 * batch ids are made anew each statement, as the window resolution does.
 *
 * `npx tsx bench/proxyVerdict.bench.ts [--batches 1441] [--runs 400] [--hidden 8:4] [--baseline DIR] [--route]`
 * `--route` times the whole query route instead (handleQuery over a window: the batch-ranges call,
 * policy, rewrite, filters, verdict, the result event; the dispatch a stub).
 * With `--baseline DIR` (a copy of the repository root whose control/proxy is the older code), the
 * two are timed in alternating blocks in this one process and their verdicts compared.
 */
import http from 'node:http';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { Schema } from '../engine-rs/schema';
import { timeFormHex } from '../query/timeRange';
import type { SubQuery } from '../query/filter';
import type { ByteRange } from '../control/proxy/rewrite';
import type { BatchFilter, Verdict } from '../control/proxy/verdict';

const arg = (name: string, d: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? d) : d;
};

/** What one implementation offers the bench. */
interface Impl {
  readonly label: string;
  statement(ids: readonly string[]): Promise<Verdict>;
  close(): void;
}

const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const BATCHES = Number(arg('batches', '1441'));
const schema = Schema.parse(readFileSync(path.resolve(__dirname, '../pipelines/examples/data/flows.schema.json'), 'utf8'));
const r = (offset: number, size: number, kind: string, min: number, max: number): Record<string, unknown> => ({ offset, size, kind, big_endian: false, min: String(min), max: String(max), empty: false });

/** The flows layouts of batch `i` (its minute): every tenth batch holds no port 443. */
function filterOf(i: number, node: number): Record<string, unknown> {
  const ts = T0 + i * 60;
  return {
    records: 1000,
    fields: [r(0, 8, 'signed', ts, ts + 59), r(8, 4, 'unsigned', 167772160, 167837695), r(12, 4, 'unsigned', 168364297, 168364297), r(16, 2, 'unsigned', 1000, 1000 + node), r(18, 2, 'unsigned', 53, i % 10 === 0 ? 80 : 443), r(20, 1, 'unsigned', 6, 17), r(24, 8, 'unsigned', 1, 1), r(32, 8, 'unsigned', 0, 999 + i), r(40, 4, 'unsigned', 5, 5)],
  };
}

/** A stand-in Storage Node answering every asked batch. */
async function standIn(node: number): Promise<{ port: number; close(): void }> {
  const srv = http.createServer((req, res) => {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/v1/batch-ranges') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ dataset: url.searchParams.get('dataset'), runs: [[T0, BATCHES]], truncated: false }));
      return;
    }
    const ids = (url.searchParams.get('batch_ids') ?? '').split(',');
    const filters = Object.fromEntries(ids.map((id) => [id, filterOf(Number(BigInt.asIntN(64, BigInt(`0x${id.slice(96, 112)}`)) - BigInt(T0)) / 60, node)]));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ dataset: url.searchParams.get('dataset'), filters }));
  });
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  return { port: (srv.address() as { port: number }).port, close: () => srv.close() };
}

async function load(root: string, label: string, ports: number[], subs: SubQuery[], hidden: ByteRange[]): Promise<Impl> {
  const f = (await import(path.join(root, 'control/proxy/storageNodeFilters.ts'))) as typeof import('../control/proxy/storageNodeFilters');
  const v = (await import(path.join(root, 'control/proxy/verdict.ts'))) as typeof import('../control/proxy/verdict');
  const src = new f.StorageNodeFilters({ nodes: () => ports.map((port, i) => ({ name: `sn${i}`, host: '127.0.0.1', port })), schema: (d) => (d === 'flows' ? schema : undefined), timeoutMs: 5000 });
  if (process.argv.includes('--route')) {
    // The whole route: window resolution, policy, rewrite, filters and verdict, the result event (the dispatch a stub).
    const route = (await import(path.join(root, 'control/proxy/queryRoute.ts'))) as typeof import('../control/proxy/queryRoute');
    const b = (await import(path.join(root, 'net/storageNodeBatches.ts'))) as typeof import('../net/storageNodeBatches');
    const { PolicySlot } = (await import(path.join(root, 'control/proxy/policySlot.ts'))) as typeof import('../control/proxy/policySlot');
    const slot = new PolicySlot();
    slot.install({ version: 1, rego: 'package hd.authz\nimport rego.v1\ndefault allow := true\n' });
    const dispatcher = { dispatch: async () => ({ scc: 'scc0', batches: BATCHES, nodes: ['sn0', 'sn1'], missing_batch_ids: [] }), cancel: async () => ({ cancelled: false, nodes: 0 }), close: () => undefined };
    const deps = { slot, datasets: () => new Map([['flows', schema]]), targets: () => [], dispatcher, batchFilters: src, batchWindows: new b.StorageNodeBatches({ nodes: src }) };
    const body = { query_id: 7, dataset: 'flows', start: T0, end: T0 + BATCHES * 60 - 1, sub_queries: subs, return_address: { host: '127.0.0.1', port: 6989 }, token: '0123456789abcdef0123456789abcdef' };
    return {
      label,
      statement: async () => {
        // As the server does: the body parsed from text, the event written as text.
        const ev = await route.handleQuery(JSON.parse(JSON.stringify(body)), { role: 'analyst', email: 'a@example.com', via: 'token' } as never, deps as never);
        JSON.stringify(ev);
        return { would_exclude_batches: ev.would_exclude_batches, bloomrf_mode: ev.bloomrf_mode };
      },
      close: () => src.close(),
    };
  }
  return {
    label,
    statement: async (ids) => {
      const filters: ReadonlyMap<string, BatchFilter> = await src.filters('flows', ids, hidden);
      return v.computeVerdict(schema, subs, ids, filters, hidden);
    },
    close: () => src.close(),
  };
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}

async function main(): Promise<void> {
  const batches = BATCHES;
  const runs = Number(arg('runs', '400'));
  const block = 25;
  const hidden: ByteRange[] = arg('hidden', '')
    .split(',')
    .filter((x) => x !== '')
    .map((x) => ({ offset: Number(x.split(':')[0]), size: Number(x.split(':')[1]) }));
  const subs: SubQuery[] = [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }, { field: 'ts', op: 'ge', value: String(T0) }] }];
  const nodes = [await standIn(0), await standIn(1)];
  const ports = nodes.map((n) => n.port);
  const impls = [await load(path.resolve(__dirname, '..'), 'current', ports, subs, hidden)];
  const base = arg('baseline', '');
  if (base !== '') impls.unshift(await load(path.resolve(base), 'baseline', ports, subs, hidden));
  const idsNow = (): string[] => Array.from({ length: batches }, (_, i) => timeFormHex(T0 + i * 60, 60));
  const times = new Map<string, number[]>(impls.map((i) => [i.label, []]));
  const verdicts = new Map<string, string>();
  try {
    // Warm-up: fills the caches (the only HTTP) and lets the JIT settle.
    for (const im of impls) for (let k = 0; k < 60; k++) verdicts.set(im.label, JSON.stringify(await im.statement(idsNow())));
    for (let done = 0; done < runs; done += block) {
      for (const im of impls) {
        for (let k = 0; k < block; k++) {
          const ids = idsNow();
          const t = performance.now();
          await im.statement(ids);
          (times.get(im.label) as number[]).push(performance.now() - t);
        }
      }
    }
    const v = [...verdicts.values()];
    const excluded = (JSON.parse(v[0] as string) as Verdict).would_exclude_batches.length;
    console.log(`${batches} batches × 2 nodes, ${runs} statements each (blocks of ${block}, alternating), hidden [${hidden.map((h) => `${h.offset}:${h.size}`).join(',')}], ${excluded} excluded; verdicts ${v.every((x) => x === v[0]) ? 'identical' : 'DIFFER'}`);
    for (const [label, ms] of times) console.log(`  ${label.padEnd(8)} median ${quantile(ms, 0.5).toFixed(3)} ms, p10 ${quantile(ms, 0.1).toFixed(3)}, p90 ${quantile(ms, 0.9).toFixed(3)} per statement`);
  } finally {
    for (const im of impls) im.close();
    for (const n of nodes) n.close();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
