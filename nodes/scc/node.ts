/**
 * One Storage Cluster Controller's servers besides the ingest listener (which is the pipeline's
 * `hdwpSource`): /health and /metrics on the observability port (lib/observability.ts) with the
 * replicas' states, and the command API on the command port. The `sccNode` service (roles/services/sccNode.ts) starts it.
 */
import net from 'node:net';
import { ingestMetrics, Observability, type IngestMetrics } from '../../lib/observability';
import type { NodeIdentity } from '../../net/nodeIdentity';
import { CommandApi } from './commandApi';
import type { ReplicaSet } from './replicas';
import { interfaceAddress, type SnTarget } from './settings';
import { logLine, type LogFn } from '../../lib/logging';

/** Options of {@link SccNode}. */
export interface SccNodeOptions {
  readonly nodeName: string;
  readonly replicas: ReplicaSet;
  readonly targets: readonly SnTarget[];
  /** Where the ingest listener binds, for the start-up line. */
  readonly production: { readonly ip: string; readonly port: number; readonly interface: string };
  readonly observability: { readonly interface: string; readonly port: number };
  /** The command port; `tls` (the DMS identity) makes it HTTPS with mutual TLS. */
  readonly command: { readonly interface: string; readonly port: number; readonly tls?: NodeIdentity };
  /** Extra /health facts (settings in force). */
  readonly facts?: Record<string, unknown>;
  /** Where the start-up line goes; default the process logger. */
  readonly log?: LogFn;
}

/** Bind address of an *_INTERFACE value: empty binds every interface. */
export function bindAddress(iface: string): string {
  if (iface === '') return '0.0.0.0';
  return net.isIP(iface) !== 0 ? iface : (interfaceAddress(iface) ?? '0.0.0.0');
}

/** The SCC's HTTP servers and metrics. */
export class SccNode {
  /** /health and /metrics. */
  readonly observability: Observability;
  /** The shared ingest metrics (records made durable, batches, replica lag). */
  readonly metrics: IngestMetrics;
  private readonly command: CommandApi;
  private readonly log: LogFn;
  /** Bound addresses once started. */
  addresses: { observability?: { host: string; port: number }; command?: { host: string; port: number } } = {};

  /** @param opts names, replicas, ports */
  constructor(private readonly opts: SccNodeOptions) {
    this.log = opts.log ?? logLine();
    this.observability = new Observability({ role: 'scc', nodeName: opts.nodeName, host: bindAddress(opts.observability.interface), port: opts.observability.port });
    this.metrics = ingestMetrics(this.observability.registry);
    this.observability.addHealthPart('replicas', () => opts.replicas.health());
    if (opts.facts) {
      const facts = opts.facts;
      this.observability.addHealthPart('settings', () => ({ ...facts }));
    }
    this.command = new CommandApi({ host: bindAddress(opts.command.interface), port: opts.command.port, ...(opts.command.tls && { tls: opts.command.tls }) });
  }

  /** Starts both servers and prints the start-up line. */
  async start(): Promise<void> {
    this.addresses.observability = await this.observability.listen();
    try {
      this.addresses.command = await this.command.listen();
    } catch (err) {
      await this.observability.close();
      throw err;
    }
    this.observability.setStatus('ok');
    this.log(this.startupLine(), 'info');
  }

  /** Stops both servers. */
  async stop(): Promise<void> {
    await Promise.all([this.observability.close(), this.command.close()]);
  }

  /** "scc 'name': ingest (HDWP) on ip:port; replicas sn1 10.0.0.11:6987, …; /health … on …; command API on …". */
  startupLine(): string {
    const p = this.opts.production;
    const where = `${p.ip}:${p.port === 0 ? '(a free port)' : p.port}${p.interface ? ` (interface ${p.interface})` : ''}`;
    const reps = this.opts.replicas.targets.map((t) => `${t.name} ${t.host}:${t.prodPort}`).join(', ') || '(none yet)';
    const obs = this.addresses.observability;
    const cmd = this.addresses.command;
    return `scc '${this.opts.nodeName}': ingest (HDWP) on ${where}; replicas ${reps}; /health and /metrics on ${obs?.host}:${obs?.port}; command API on ${cmd?.host}:${cmd?.port}${this.command.mutualTls ? ' (HTTPS, mutual TLS)' : ''}`;
  }
}
