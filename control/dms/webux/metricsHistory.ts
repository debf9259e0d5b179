/**
 * The WebUX's metrics history (docs/webux.md, "Metrics"): for each node the DMS scrapes
 * (metricsScraper.ts), a bounded list of points, each the time of a scrape and the values derived
 * from the node's `/metrics` and `/health` then. Counters become rates per second between two
 * scrapes (a counter that went down means the node restarted: its new value counts from zero, as
 * Prometheus' rate() does); gauges are kept as read. Pure and synchronous, so it is tested without
 * a node.
 */
import { has, parsePromText, sumOf, type PromSample } from './promText';

/** A series: what it shows, and how it is read. */
interface SeriesDef {
  readonly title: string;
  readonly unit: string;
}

/** Every series a point may carry (`replicas.<state>` are added per replica state seen). */
export const SERIES: Readonly<Record<string, SeriesDef>> = {
  ingest_records_per_s: { title: 'Ingest', unit: 'records/s' },
  query_batches_per_s: { title: 'Query batches', unit: 'batches/s' },
  queries_per_s: { title: 'Queries', unit: 'queries/s' },
  errors_per_s: { title: 'Errors', unit: '/s' },
  replica_lag_batches: { title: 'Replica lag', unit: 'batches' },
  disk_free_bytes: { title: 'Disk free', unit: 'bytes' },
};

/** The counters behind each rate: the metric names it sums (a rate exists only where one of them is served). */
const RATES: readonly { key: string; names: readonly string[]; sum(s: readonly PromSample[]): number }[] = [
  { key: 'ingest_records_per_s', names: ['hd_records_ingested_total'], sum: (s) => sumOf(s, 'hd_records_ingested_total') },
  { key: 'query_batches_per_s', names: ['hd_sn_query_batches_total'], sum: (s) => sumOf(s, 'hd_sn_query_batches_total') },
  { key: 'queries_per_s', names: ['hd_proxy_queries_total', 'hd_sql_queries_total'], sum: (s) => sumOf(s, 'hd_proxy_queries_total') + sumOf(s, 'hd_sql_queries_total') },
  {
    key: 'errors_per_s',
    names: ['hd_batches_discarded_total', 'hd_sn_query_batches_total', 'hd_proxy_queries_total', 'hd_sql_queries_total', 'hd_stage_errors_total'],
    sum: (s) =>
      sumOf(s, 'hd_batches_discarded_total') +
      sumOf(s, 'hd_sn_query_batches_total', (l) => l.outcome !== 'eob') +
      sumOf(s, 'hd_proxy_queries_total', (l) => l.result !== 'ok') +
      sumOf(s, 'hd_sql_queries_total', (l) => l.outcome !== 'ok') +
      sumOf(s, 'hd_stage_errors_total'),
  },
];

/** One scrape of a node, as the scraper read it. */
export interface Reading {
  /** When (ms since the epoch). */
  readonly at: number;
  /** The `/metrics` text, when it was read. */
  readonly metrics?: string;
  /** The `/health` JSON, when it was read. */
  readonly health?: unknown;
  /** Why the node could not be read (nothing else is recorded then). */
  readonly error?: string;
}

/** A point of a node's history: the scrape's time and the values of the series the node has. */
export interface Point {
  readonly t: number;
  readonly v: Readonly<Record<string, number>>;
}

/** What GET /v1/metrics/history answers for one node. */
export interface NodeHistoryView {
  readonly name: string;
  readonly role: string;
  readonly points: readonly Point[];
  readonly last_scrape?: string;
  readonly last_error?: string;
  /** Lines of the last /metrics text that could not be read. */
  readonly problems?: readonly string[];
}

interface NodeTrack {
  role: string;
  points: Point[];
  /** The counter sums of the previous scrape, for rates. */
  prev?: { at: number; sums: Map<string, number> };
  /** Replica states seen on this node (a state no longer seen counts 0, so its line goes on). */
  states: Set<string>;
  lastScrape?: number;
  lastError?: string;
  problems: string[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Free bytes of a Storage Node's write devices, from its /health (`devices.list[].free_bytes`). */
function diskFree(health: unknown): number | undefined {
  const list = isObj(health) && isObj(health.devices) && Array.isArray(health.devices.list) ? health.devices.list : undefined;
  if (!list) return undefined;
  let total = 0;
  let seen = false;
  for (const d of list) {
    if (isObj(d) && d.use !== 'cache' && typeof d.free_bytes === 'number' && Number.isFinite(d.free_bytes)) {
      total += d.free_bytes;
      seen = true;
    }
  }
  return seen ? total : undefined;
}

/** Replica states an SCC reports in its /health (`replicas.replicas[].state`), counted. */
function replicaStates(health: unknown): Map<string, number> | undefined {
  const list = isObj(health) && isObj(health.replicas) && Array.isArray(health.replicas.replicas) ? health.replicas.replicas : undefined;
  if (!list) return undefined;
  const counts = new Map<string, number>();
  for (const r of list) if (isObj(r) && typeof r.state === 'string' && /^[a-z_]{1,32}$/.test(r.state)) counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
  return counts;
}

/** Bounded histories of every node scraped. */
export class MetricsHistory {
  private readonly nodes = new Map<string, NodeTrack>();

  /** @param capacity points kept per node (the oldest go first) */
  constructor(readonly capacity: number) {}

  /** Adds a scrape of node `name` (role `role`). */
  record(name: string, role: string, r: Reading): void {
    let track = this.nodes.get(name);
    if (!track || track.role !== role) {
      track = { role, points: [], states: new Set(), problems: [] };
      this.nodes.set(name, track);
    }
    track.lastScrape = r.at;
    if (r.error !== undefined) {
      track.lastError = r.error;
      return;
    }
    track.lastError = undefined;
    const v: Record<string, number> = {};
    const { samples, problems } = parsePromText(r.metrics ?? '');
    track.problems = problems;
    const sums = new Map<string, number>();
    for (const rate of RATES) {
      if (!rate.names.some((n) => has(samples, n))) continue;
      const now = rate.sum(samples);
      sums.set(rate.key, now);
      const before = track.prev?.sums.get(rate.key);
      const dt = track.prev ? (r.at - track.prev.at) / 1000 : 0;
      if (before !== undefined && dt > 0) v[rate.key] = (now >= before ? now - before : now) / dt;
    }
    track.prev = { at: r.at, sums };
    if (has(samples, 'hd_replica_lag_batches')) v.replica_lag_batches = sumOf(samples, 'hd_replica_lag_batches');
    const free = diskFree(r.health);
    if (free !== undefined) v.disk_free_bytes = free;
    const states = replicaStates(r.health);
    if (states) {
      for (const s of states.keys()) if (track.states.size < 16) track.states.add(s);
      for (const s of track.states) v[`replicas.${s}`] = states.get(s) ?? 0;
    }
    track.points.push({ t: r.at, v });
    if (track.points.length > this.capacity) track.points.splice(0, track.points.length - this.capacity);
  }

  /** Drops the histories of nodes not in `names` (removed from the DMS). */
  keepOnly(names: ReadonlySet<string>): void {
    for (const n of [...this.nodes.keys()]) if (!names.has(n)) this.nodes.delete(n);
  }

  /** Every node's history, by name. */
  view(): NodeHistoryView[] {
    return [...this.nodes.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, t]) => ({
        name,
        role: t.role,
        points: t.points,
        ...(t.lastScrape !== undefined && { last_scrape: new Date(t.lastScrape).toISOString() }),
        ...(t.lastError !== undefined && { last_error: t.lastError }),
        ...(t.problems.length > 0 && { problems: t.problems }),
      }));
  }
}
