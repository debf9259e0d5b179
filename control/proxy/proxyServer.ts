/**
 * The HD Proxy (docs/proxy.md): registers with the DMS, then serves over HTTPS on its control port
 * the query route (policy, rewrite, batch names, verdict, dispatch), the topology route clients use
 * to discover SCC targets, and the policy webhook `POST /v1/proxy/config` the DMS calls (mutual TLS,
 * DMS or admin certificates only). Its certificate renews itself; topology and schemas are re-read
 * from the DMS on a period.
 */
import net from 'node:net';
import type { TLSSocket } from 'node:tls';
import fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import { Observability } from '../../lib/observability';
import { installErrorHandlers, HttpError } from '../http/errors';
import { MtlsIdentity, peerIdentity, serverTlsOptions } from '../../net/mtls';
import { registerWithDms } from '../../net/registerWithDms';
import { CertificateRenewer } from '../../net/renewal';
import { handleCancel } from './cancelRoute';
import { GrpcSccDispatcher, type SccDispatcher } from './dispatch';
import { readClusterView, viewFromRegistration, type ClusterView } from './dmsLink';
import { DEFAULT_HEALTH_REPORT_MS, HealthReporter } from '../../net/healthReporter';
import { IdentityReader, type Identity } from './identity';
import { PolicySlot, readPolicyConfig } from './policySlot';
import { handleQuery } from './queryRoute';
import type { ProxySettings } from './settings';
import { StorageNodeFilters } from './storageNodeFilters';
import { StorageNodeBatches, type BatchWindowSource } from '../../net/storageNodeBatches';
import type { BatchFilterSource } from './verdict';
import { logLine, type LogFn } from '../../lib/logging';

/** Largest request body (a query with 100 000 batch ids is about 13 MB; a policy far less). */
export const PROXY_BODY_LIMIT = 16 * 1024 * 1024;
/** Roles whose certificates may change the policy. */
const POLICY_WRITERS = ['dms', 'admin'];

/** A free TCP port on `host` (asks the kernel, then releases it). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const a = srv.address() as net.AddressInfo;
      srv.close(() => resolve(a.port));
    });
  });
}

/** Optional parts a test or an embedding may replace. */
export interface ProxyParts {
  readonly dispatcher?: SccDispatcher;
  readonly batchFilters?: BatchFilterSource;
  /** Resolves query windows to the batches that exist (default: the Storage Nodes' /v1/batch-ranges). */
  readonly batchWindows?: BatchWindowSource;
  /** Where the Proxy's lines go, each with its level (default the process logger). */
  readonly log?: LogFn;
}

/** A running Proxy. */
export class ProxyServer {
  private refreshTimer: NodeJS.Timeout | undefined;
  private reporter: HealthReporter | undefined;
  /** The Storage Nodes' batch filters, when this Proxy reads them itself (its connections are closed with it). */
  private ownFilters: StorageNodeFilters | undefined;
  /** The link the window resolution reads the nodes over, when it is not {@link ownFilters}. */
  private ownNodeLink: StorageNodeFilters | undefined;

  private constructor(
    readonly settings: ProxySettings,
    /** Bound HTTPS address. */
    readonly address: { host: string; port: number },
    readonly observabilityAddress: { host: string; port: number } | undefined,
    /** The Proxy's TLS identity (renewed in place). */
    readonly identity: MtlsIdentity,
    private readonly app: FastifyInstance,
    private readonly obs: Observability | undefined,
    private readonly renewer: CertificateRenewer,
    private readonly dispatcher: SccDispatcher,
    private readonly slot: PolicySlot,
    private view: ClusterView,
    private readonly log: LogFn,
  ) {}

  /** The active policy's version (0: none). */
  get policyVersion(): number {
    return this.slot.current()?.version ?? 0;
  }

  /** Registers with the DMS and serves. Throws when registration is refused (the message says why). */
  static async start(settings: ProxySettings, parts: ProxyParts = {}): Promise<ProxyServer> {
    const log: LogFn = parts.log ?? logLine('proxy: ');
    // The DMS must learn the real port before the listener (which needs the certificate) exists.
    if (settings.port === 0) settings = { ...settings, port: await freePort(settings.host) };
    const configUrl = `https://${settings.advertiseHost}:${settings.port}/v1/proxy/config`;
    const reg = await registerWithDms({
      dmsUrl: settings.dmsUrl,
      nodeName: settings.nodeName,
      role: 'proxy',
      caCertPem: settings.caCertPem,
      credentials: settings.credentials,
      keyBits: settings.keyBits,
      dmsServerName: settings.dmsServerName,
      configUrl,
      addresses: { control: { host: settings.advertiseHost, port: settings.port } },
    });
    if (!reg.success) throw new Error(`registration with the DMS at ${settings.dmsUrl} failed: ${reg.error_message}`);
    const identity = MtlsIdentity.fromRegistration(reg);
    const renewer = new CertificateRenewer({ identity, dmsUrl: settings.dmsUrl, dmsServerName: settings.dmsServerName, renewAfter: new Date(reg.renew_after), keyBits: settings.keyBits, onEvent: (e) => (e.kind === 'renewed' ? log(`certificate renewed until ${e.notAfter}`, 'info') : log(`certificate renewal failed: ${e.message}`, 'warn')) });
    renewer.start();
    const slot = new PolicySlot();
    if (reg.policy) {
      try {
        slot.install(reg.policy);
      } catch (err) {
        log(`the DMS's policy version ${reg.policy.version} was refused: ${(err as Error).message}`, 'warn');
      }
    }
    const dispatcher =
      parts.dispatcher ??
      new GrpcSccDispatcher({ deadlineMs: settings.dispatchTimeoutMs, identity, forceTls: settings.dispatchTls });
    const identities = new IdentityReader(settings.jwt, settings.ingress);

    let obs: Observability | undefined;
    let queries: Counter<'result'> | undefined;
    let windowBatches: Counter<'resolved_by'> | undefined;
    if (settings.observabilityPort >= 0) {
      obs = new Observability({ role: 'proxy', nodeName: settings.nodeName, host: settings.observabilityHost, port: settings.observabilityPort, processMetrics: true });
      queries = new Counter({ name: 'hd_proxy_queries_total', help: 'Queries answered, by result (ok or the error code)', labelNames: ['result'] as const, registers: [obs.registry] });
      windowBatches = new Counter({ name: 'hd_proxy_window_batches_total', help: 'Batch ids named for queries given a time window, by how (batch_index: held by the Storage Nodes; enumeration: every interval)', labelNames: ['resolved_by'] as const, registers: [obs.registry] });
      new Gauge({ name: 'hd_proxy_policy_version', help: 'Version of the active policy (0: none)', registers: [obs.registry], collect() { this.set(slot.current()?.version ?? 0); } });
    }

    const app = fastify({ https: serverTlsOptions(identity, { requireClientCert: false }), bodyLimit: PROXY_BODY_LIMIT, logger: false }) as unknown as FastifyInstance;
    installErrorHandlers(app, log);
    // The server object is made below; routes read the view through it.
    let server: ProxyServer | undefined;
    const currentView = (): ClusterView => (server ? server.view : viewFromRegistration(reg, log));
    // By default the verdict reads the batch filters of the primary cluster's Storage Nodes (none
    // declared with an observability address: no filter is known and the verdict is `off`).
    const batchFilters =
      parts.batchFilters ?? new StorageNodeFilters({ nodes: () => currentView().storageNodes, schema: (d) => currentView().datasets.get(d), timeoutMs: settings.batchFilterTimeoutMs, log, identity });
    // A window's batches are the ones the same Storage Nodes hold (net/storageNodeBatches.ts), read over
    // the same mutual-TLS connections.
    const nodeLink = batchFilters instanceof StorageNodeFilters ? batchFilters : new StorageNodeFilters({ nodes: () => currentView().storageNodes, schema: (d) => currentView().datasets.get(d), log, identity });
    const batchWindows = parts.batchWindows ?? new StorageNodeBatches({ nodes: nodeLink, log });

    // The identity of a request: a verified JWT, or forwarded headers from a proven ingress (identity.ts).
    const who = (req: FastifyRequest): Promise<Identity> => identities.read(req.headers, peerIdentity(req.raw.socket as TLSSocket));

    app.post('/v1/query', async (req) => {
      try {
        const asker = await who(req);
        const v = currentView();
        const r = await handleQuery(req.body, asker, { slot, datasets: () => v.datasets, targets: () => v.targets, dispatcher, batchFilters, batchWindows }, req.headers);
        queries?.inc({ result: 'ok' });
        if (r.window) windowBatches?.inc({ resolved_by: r.window.resolved_by }, r.batch_ids.length);
        return r;
      } catch (err) {
        queries?.inc({ result: err instanceof HttpError ? err.code : 'internal' });
        throw err;
      }
    });
    // Ours: a client in Proxy mode cancels through the Proxy (cancelRoute.ts); the reference's
    // /v1/query/stop is 410.
    app.post('/v1/query/cancel', async (req) => {
      await who(req);
      return handleCancel(req.body, { targets: () => currentView().targets, dispatcher });
    });
    // The schemas the Proxy holds (the DMS's, refreshed with the topology): what a client without
    // its own DMS access decodes with, e.g. hd_sql without HD_DMS_* ("the Proxy's copy").
    app.get('/v1/datasets', async (req) => {
      await who(req);
      return { datasets: [...currentView().datasets.values()].map((d) => d.toJSON()) };
    });
    app.get('/v1/topology', async () => {
      const v = currentView();
      return { primary_cluster: v.primaryCluster, scc_targets: v.targets, clusters: v.clusters, datasets: [...v.datasets.keys()].sort(), at: v.at };
    });
    const policyWriter = (req: FastifyRequest): void => {
      const peer = peerIdentity(req.raw.socket as TLSSocket);
      if (!peer) throw new HttpError('unauthenticated', `${req.method} ${req.url} needs a client certificate from DMS-CA (the DMS's)`);
      if (!POLICY_WRITERS.includes(peer.role)) throw new HttpError('forbidden', `only the DMS may change the policy; '${peer.name}' holds a ${peer.role} certificate`);
    };
    app.post('/v1/proxy/config', async (req) => {
      policyWriter(req);
      const r = slot.install(readPolicyConfig(req.body));
      log(`policy version ${r.version} installed (was ${r.previous})`, 'info');
      return { installed: r.version, previous: r.previous };
    });
    app.get('/v1/proxy/policy', async (req) => {
      policyWriter(req);
      const a = slot.current();
      return { version: a?.version ?? 0, installed_at: a?.installedAt ?? null };
    });

    await app.listen({ host: settings.host, port: settings.port });
    const a = app.server.address();
    const address = typeof a === 'object' && a ? { host: a.address, port: a.port } : { host: settings.host, port: settings.port };
    if (obs) {
      obs.addHealthPart('policy', () => ({ ...(slot.current() ? {} : { status: 'degraded' as const }), version: slot.current()?.version ?? 0 }));
      obs.addHealthPart('cluster', () => {
        const v = currentView();
        return { ...(v.targets.length === 0 && { status: 'degraded' as const }), primary_cluster: v.primaryCluster, scc_targets: v.targets.length, datasets: v.datasets.size, at: v.at };
      });
    }
    const obsAddress = obs ? await obs.listen() : undefined;
    obs?.setStatus('ok');
    server = new ProxyServer(settings, address, obsAddress, identity, app, obs, renewer, dispatcher, slot, viewFromRegistration(reg, log), log);
    if (batchFilters instanceof StorageNodeFilters) server.ownFilters = batchFilters;
    else server.ownNodeLink = nodeLink;
    await server.refresh();
    server.scheduleRefresh();
    // Health to the DMS every interval it named: degraded without a policy or without SCC targets.
    const running = server;
    server.reporter = new HealthReporter({
      nodeName: settings.nodeName,
      identity,
      dmsUrl: settings.dmsUrl,
      ...(settings.dmsServerName !== undefined && { dmsServerName: settings.dmsServerName }),
      intervalMs: reg.health_interval_ms ?? DEFAULT_HEALTH_REPORT_MS,
      source: async () => {
        const v = running.view;
        const problems = [...(running.slot.current() ? [] : ['no policy installed']), ...(v.targets.length === 0 ? ['no SCC target in the topology'] : [])];
        return { status: problems.length === 0 ? 'ok' : 'degraded', detail: { policy_version: running.policyVersion, scc_targets: v.targets.length, datasets: v.datasets.size, topology_at: v.at, ...(problems.length > 0 && { problems }) } };
      },
      log,
    });
    server.reporter.start();
    log(`HD Proxy '${settings.nodeName}' listening on https://${address.host}:${address.port} (policy version ${server.policyVersion})`, 'info');
    return server;
  }

  /** Re-reads topology and schemas from the DMS; keeps the old view on failure. */
  async refresh(): Promise<void> {
    try {
      this.view = await readClusterView(this.settings.dmsUrl, this.identity, this.settings.dmsServerName, this.log);
    } catch (err) {
      this.log(`reading the topology from the DMS failed: ${(err as Error).message}; keeping the view of ${this.view.at}`, 'warn');
    }
  }

  private scheduleRefresh(): void {
    this.refreshTimer = setTimeout(() => {
      void this.refresh().then(() => this.scheduleRefresh());
    }, this.settings.topologyRefreshMs);
    this.refreshTimer.unref();
  }

  /** Stops serving. */
  async close(): Promise<void> {
    clearTimeout(this.refreshTimer);
    this.reporter?.stop();
    this.renewer.stop();
    await this.app.close();
    await this.obs?.close();
    this.dispatcher.close();
    this.ownFilters?.close();
    this.ownNodeLink?.close();
  }
}
