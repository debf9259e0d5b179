/**
 * The SCC's resolution of a query's `time_window` (docs/scc.md, "Time windows at the SCC"; docs/query.md,
 * "Time windows"): before placing a query that gives a window instead of `batch_ids`, the SCC asks
 * its healthy replicas which time-form batches of the dataset they hold in it (`GET
 * /v1/batch-ranges` on each node's observability port, docs/storage-node.md) with the resolver the
 * Proxy uses (net/storageNodeBatches.ts), and the union becomes the query's `batch_ids`. So a
 * client straight to the SCCs (hd_sql with HD_SQL_SCC_TARGETS, the SDK with setSccTargets) reads
 * `ts > 0` or a year of one-minute batches at the cost of the batches that exist.
 *
 * Where each replica's observability port is: SN_OBSERVABILITY_PORTS (on its SN_TARGETS host), else
 * the address the node registered with the DMS (the lookup of nodes/scc/syncProbe.ts, which the
 * sync probe uses too). Registered with the DMS, the SCC asks over mutual TLS with its identity and
 * checks that each node's certificate names it and is a `storageNode`'s.
 *
 * A window is never answered silently empty because nobody could be asked: no healthy replica is
 * UNAVAILABLE, no known observability address FAILED_PRECONDITION (naming what to set), no answer
 * from any node UNAVAILABLE (try again), and more than MAX_BATCH_IDS batches INVALID_ARGUMENT
 * (narrow the window). Each is a {@link WindowRefusal} carrying its gRPC status.
 */
import https from 'node:https';
import { status } from '@grpc/grpc-js';
import { Counter, type Registry } from 'prom-client';
import { getText } from '../../net/getText';
import { clientTlsOptions, type MtlsIdentity } from '../../net/mtls';
import { DEFAULT_RANGE_TIMEOUT_MS, StorageNodeBatches, type NodeGetter, type StorageNodeAddress } from '../../net/storageNodeBatches';
import { MAX_BATCH_IDS, type TimeWindow } from '../../query/hdQuery';
import type { LogFn } from '../../lib/logging';
import { takesQueries } from './queryHealth';
import type { ReplicaState } from './replicas';
import type { SnTarget } from './settings';
import type { ObservabilityLookup } from './syncProbe';

/** A window the SCC cannot resolve: the gRPC status and a message saying what to do. */
export class WindowRefusal extends Error {
  /** @param code gRPC status; @param message the details sent to the client */
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
    this.name = 'WindowRefusal';
  }
}

/** Options of {@link QueryWindowResolver}. */
export interface QueryWindowOptions {
  /** The SCC's NODE_NAME (in messages). */
  readonly nodeName: string;
  /** The replicas now (read at each window). */
  readonly targets: () => readonly SnTarget[];
  /** Replica states by name; undefined while no replica set is registered (every target counts as healthy). */
  readonly health: () => Readonly<Record<string, ReplicaState>> | undefined;
  /** Where a replica's observability port is (SN_OBSERVABILITY_PORTS, else the DMS's); absent: nowhere known. */
  readonly observabilityOf?: ObservabilityLookup;
  /** The SCC's DMS identity: the nodes are asked over mutual TLS; absent: plain HTTP. */
  readonly identity?: MtlsIdentity;
  /** Deadline of one window's questions, over all replicas; default {@link DEFAULT_RANGE_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /** Where a replica that fails to answer is reported (once until it answers again). */
  readonly log?: LogFn;
  /** The SCC's /metrics registry: `hd_scc_windows_total{result}` and `hd_scc_window_batches_total` are registered there. */
  readonly registry?: Registry;
}

/** Counters of the windows resolved. */
export interface QueryWindowStats {
  /** Windows resolved to a batch list (empty included). */
  readonly resolved: number;
  /** Windows refused (no replica to ask, none answered, too many batches). */
  readonly refused: number;
  /** Batch ids named by resolved windows, in all. */
  readonly batches: number;
  /** Replica answers received, in all. */
  readonly nodeAnswers: number;
}

/** Resolves `time_window`s against the replicas' batch index (see the module doc). */
export class QueryWindowResolver {
  private readonly batches: StorageNodeBatches;
  private agent: { agent: https.Agent; certPem: string } | undefined;
  private counts = { resolved: 0, refused: 0, batches: 0 };
  private readonly metrics: { windows: Counter<'result'>; batches: Counter } | undefined;

  /** @param opts replicas, their health and observability addresses, TLS */
  constructor(private readonly opts: QueryWindowOptions) {
    const getter: NodeGetter = { nodes: () => this.askable().nodes, get: (n, p, s) => this.get(n, p, s) };
    this.batches = new StorageNodeBatches({ nodes: getter, timeoutMs: opts.timeoutMs ?? DEFAULT_RANGE_TIMEOUT_MS, ...(opts.log && { log: opts.log }) });
    const r = opts.registry;
    if (r) {
      const get = <T>(name: string, make: () => T): T => (r.getSingleMetric(name) as T | undefined) ?? make();
      this.metrics = {
        windows: get('hd_scc_windows_total', () => new Counter({ name: 'hd_scc_windows_total', help: 'Query time windows the SCC resolved from its replicas\' batch index, by result (resolved, refused)', labelNames: ['result'] as const, registers: [r] })),
        batches: get('hd_scc_window_batches_total', () => new Counter({ name: 'hd_scc_window_batches_total', help: 'Batch ids the SCC named for queries given a time window (the batches its replicas hold in it)', registers: [r] })),
      };
    }
  }

  /** What the resolver has done so far. */
  get stats(): QueryWindowStats {
    return { ...this.counts, nodeAnswers: this.batches.nodeAnswers };
  }

  /**
   * The batch ids (128 lower-case hex, ascending by time) of `dataset`'s time-form batches of
   * `w.interval` that the healthy replicas hold in `[w.start, w.end]`. Throws {@link WindowRefusal}.
   */
  async resolve(dataset: string, w: TimeWindow): Promise<string[]> {
    try {
      const ids = await this.resolveOrRefuse(dataset, w);
      this.counts.resolved++;
      this.counts.batches += ids.length;
      this.metrics?.windows.inc({ result: 'resolved' });
      this.metrics?.batches.inc(ids.length);
      return ids;
    } catch (err) {
      this.counts.refused++;
      this.metrics?.windows.inc({ result: 'refused' });
      throw err;
    }
  }

  /** Stops: idle connections to the nodes are closed. */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  private async resolveOrRefuse(dataset: string, w: TimeWindow): Promise<string[]> {
    const what = `time_window [${w.start}, ${w.end}] of '${dataset}'`;
    const { healthy, nodes, described } = this.askable();
    if (healthy.length === 0) throw new WindowRefusal(status.UNAVAILABLE, `${what}: ${this.opts.nodeName} has no healthy replica to ask which batches exist (${described || 'no replicas'}); try again when one is healthy`);
    if (nodes.length === 0) {
      const names = healthy.map((t) => t.name);
      throw new WindowRefusal(
        status.FAILED_PRECONDITION,
        `${what}: ${this.opts.nodeName} knows no observability address of its healthy replicas (${names.join(', ')}), so it cannot ask which batches they hold (GET /v1/batch-ranges); set SN_OBSERVABILITY_PORTS on the SCC (e.g. ${names.map((n) => `${n}:<observability port>`).join(',')}) or register the Storage Nodes with the DMS, or send batch_ids instead of a window`,
      );
    }
    const found = await this.batches.batchesInWindow(dataset, { start: w.start, end: w.end }, w.interval, MAX_BATCH_IDS);
    if (found.nodesAnswered === 0) {
      throw new WindowRefusal(status.UNAVAILABLE, `${what}: none of the ${found.nodesAsked} healthy replica(s) asked (${nodes.map((n) => `${n.name} ${n.host}:${n.port}`).join(', ')}) answered which batches they hold (GET /v1/batch-ranges) within ${this.opts.timeoutMs ?? DEFAULT_RANGE_TIMEOUT_MS} ms; try again, or narrow the window`);
    }
    if (found.truncated) throw new WindowRefusal(status.INVALID_ARGUMENT, `time_window: [${w.start}, ${w.end}] holds more than ${MAX_BATCH_IDS} batches of ${w.interval} s of '${dataset}' on the replicas; the limit is ${MAX_BATCH_IDS}: narrow the window`);
    return found.batchIds;
  }

  /** The healthy replicas, those of them with a known observability address (the nodes asked), and every replica's state for messages. */
  private askable(): { healthy: SnTarget[]; nodes: StorageNodeAddress[]; described: string } {
    const all = this.opts.targets();
    const states = this.opts.health();
    const healthy = all.filter((t) => states === undefined || takesQueries(states[t.name]));
    const nodes = healthy.flatMap((t) => {
      const at = this.opts.observabilityOf?.(t);
      return at ? [{ name: t.name, host: at.host, port: at.port }] : [];
    });
    return { healthy, nodes, described: all.map((t) => `${t.name} ${states?.[t.name] ?? 'unknown'}`).join(', ') };
  }

  /** `GET <pathAndQuery>` on a node's observability port: mutual TLS with the SCC's identity (the node's certificate must name it), else plain. */
  private get(node: StorageNodeAddress, pathAndQuery: string, signal: AbortSignal): Promise<{ status: number; text: string }> {
    const id = this.opts.identity;
    return getText(node, pathAndQuery, signal, id && { ...clientTlsOptions(id, node.name, ['storageNode']), agent: this.agentOf(id) });
  }

  /** A keep-alive agent for the identity's current certificate (remade when it renews), so a window costs no handshake per node after the first. */
  private agentOf(id: MtlsIdentity): https.Agent {
    const certPem = id.material.certPem;
    if (this.agent?.certPem === certPem) return this.agent.agent;
    this.agent?.agent.destroy();
    this.agent = { agent: new https.Agent({ keepAlive: true, maxSockets: 4 }), certPem };
    return this.agent.agent;
  }
}
