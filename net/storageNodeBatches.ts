/**
 * Resolving a query's time window to the batches the Storage Nodes hold (docs/query.md, "Time
 * windows"), shared by the HD Proxy (docs/proxy.md, "Naming the batches of a window": the primary
 * cluster's nodes) and the SCC (docs/scc.md, "Windows at the SCC": its healthy replicas): every node is asked which time-form batches of the dataset it holds
 * in the window (`GET /v1/batch-ranges`, docs/storage-node.md), in parallel under one deadline, and
 * the batches the query reads are the union of the answers. A window of a year, or `ts > 0`, so costs
 * what the batches that exist cost; the verdict, the policy's input and the dispatch all see exactly
 * that list, and the result event gives it to the client (`batch_ids`) for its accounting.
 *
 * Replicas of one SCC hold the same batches (a lagging one fewer), so one answering node is enough
 * in the usual case; a node that fails, times out or answers anything malformed (a run off the
 * interval, outside the window, out of order) contributes nothing and is logged once until it
 * answers again. `nodesAnswered` tells the route whether any answer came at all.
 */
import { readRuns, timeFormHex, unionStarts, type BatchRun, type TimeRange } from '../query/timeRange';
import type { LogFn } from '../lib/logging';

/** Where a Storage Node serves its observability routes (`/v1/batch-ranges`); its certificate names it `name`. */
export interface StorageNodeAddress {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

/** Default deadline of one resolution, over all nodes. */
export const DEFAULT_RANGE_TIMEOUT_MS = 2000;

/** What a resolution found. */
export interface WindowBatches {
  /** Time-form batch ids (128 lower-case hex), ascending by time. */
  readonly batchIds: string[];
  /** More than `limit` batches exist in the window: `batchIds` stops at the limit. */
  readonly truncated: boolean;
  readonly nodesAsked: number;
  readonly nodesAnswered: number;
}

/** Resolves a window to the batches the Storage Nodes hold (the route's dependency; tests stand in for it). */
export interface BatchWindowSource {
  batchesInWindow(dataset: string, range: TimeRange, interval: number, limit: number): Promise<WindowBatches>;
}

/** How the nodes are reached (the Proxy's StorageNodeFilters, the SCC's queryWindow.ts: over mutual TLS with the caller's identity). */
export interface NodeGetter {
  nodes(): readonly StorageNodeAddress[];
  get(node: StorageNodeAddress, pathAndQuery: string, signal: AbortSignal): Promise<{ status: number; text: string }>;
}

/** Options of {@link StorageNodeBatches}. */
export interface StorageNodeBatchesOptions {
  readonly nodes: NodeGetter;
  /** Deadline of one resolution (default {@link DEFAULT_RANGE_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  /** Where a failing node is reported (once until it answers again), with its level. */
  readonly log?: LogFn;
}

/** A {@link BatchWindowSource} over the Storage Nodes' `/v1/batch-ranges`. */
export class StorageNodeBatches implements BatchWindowSource {
  private readonly failing = new Set<string>();
  /** Node answers received (all resolutions): what tests and /metrics-minded callers count. */
  nodeAnswers = 0;

  /** @param opts the nodes, the deadline, the log */
  constructor(private readonly opts: StorageNodeBatchesOptions) {}

  async batchesInWindow(dataset: string, range: TimeRange, interval: number, limit: number): Promise<WindowBatches> {
    const nodes = this.opts.nodes.nodes();
    if (nodes.length === 0) return { batchIds: [], truncated: false, nodesAsked: 0, nodesAnswered: 0 };
    const signal = AbortSignal.timeout(this.opts.timeoutMs ?? DEFAULT_RANGE_TIMEOUT_MS);
    const answers = await Promise.all(nodes.map((n) => this.askNode(n, dataset, range, interval, limit, signal)));
    const ok = answers.filter((a): a is { runs: BatchRun[]; truncated: boolean } => a !== undefined);
    const u = unionStarts(
      ok.map((a) => a.runs),
      interval,
      limit,
    );
    return { batchIds: u.starts.map((s) => timeFormHex(s, interval)), truncated: u.truncated || ok.some((a) => a.truncated), nodesAsked: nodes.length, nodesAnswered: ok.length };
  }

  /** One node's runs; undefined when it fails (logged once until it answers again). */
  private async askNode(node: StorageNodeAddress, dataset: string, r: TimeRange, interval: number, limit: number, signal: AbortSignal): Promise<{ runs: BatchRun[]; truncated: boolean } | undefined> {
    try {
      const res = await this.opts.nodes.get(node, `/v1/batch-ranges?dataset=${encodeURIComponent(dataset)}&start=${r.start}&end=${r.end}&interval=${interval}&limit=${limit}`, signal);
      if (res.status !== 200) throw new Error(`HTTP ${res.status} ${res.text.slice(0, 200)}`);
      let body: unknown;
      try {
        body = JSON.parse(res.text);
      } catch {
        throw new Error(`the answer is not JSON: ${res.text.slice(0, 80)}`);
      }
      const b = body as Record<string, unknown>;
      if (typeof body !== 'object' || body === null || b.dataset !== dataset || typeof b.truncated !== 'boolean') throw new Error(`the answer is not {dataset: '${dataset}', runs: [...], truncated}`);
      const runs = readRuns(b.runs, r, interval);
      if (!runs) throw new Error('its runs are malformed (each [start, count] on the interval, inside the window, ascending)');
      this.failing.delete(node.name);
      this.nodeAnswers++;
      return { runs, truncated: b.truncated };
    } catch (err) {
      if (!this.failing.has(node.name)) {
        this.failing.add(node.name);
        this.opts.log?.(`batch ranges of Storage Node '${node.name}' (${node.host}:${node.port}) could not be read: ${(err as Error).message}; windows are named without its batches`, 'warn');
      }
      return undefined;
    }
  }
}
