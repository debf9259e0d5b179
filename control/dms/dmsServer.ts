/**
 * DMS-Core with its embedded DMS-CA, serving the control plane on COMMAND_PORT (6986) over HTTPS.
 * Clients may present a certificate (mutual TLS); the TLS layer verifies it against our CA, and
 * each route decides whether it needs one (registration does not: a new node has none yet).
 */
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { Server as HttpsServer } from 'node:https';
import path from 'node:path';
import fastify, { type FastifyInstance } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import { Observability } from '../../lib/observability';
import { installErrorHandlers } from '../http/errors';
import { CertificateAuthority } from '../../net/pki/certificateAuthority';
import { JsonFileStore } from '../store/jsonFileStore';
import { registerAdminRoutes } from './adminRoutes';
import { ensureAdminCredentials, type AdminCredentialFiles } from './adminCredentials';
import { DMS_ROLE, type DmsContext } from './context';
import { K8sTokenVerifier } from './credentials';
import { registerNodeRoutes } from './nodeRoutes';
import { HealthWatch } from './healthWatch';
import { PolicyPusher } from './policyPush';
import { registerPolicyRoutes } from './policyRoutes';
import { checkDmsSettings, type DmsSettings } from './settings';
import { COMMUNITY_LIMITS } from './webux/license';
import { WebUx, type WebuxOptions } from './webux/webuxServer';
import { checkState, initialState, NODE_STATES, type DmsState } from './state';
import { generateRsaKey } from '../../net/pki/x509';
import { logLine, type LineLog } from '../../lib/logging';

/** Largest request body accepted (a CSR, a schema or a policy fits easily). */
export const DMS_BODY_LIMIT = 1024 * 1024;

/** The DMS's own TLS identity (server certificate, also its client certificate towards Proxies). */
export interface DmsIdentity {
  readonly keyPem: string;
  readonly certPem: string;
  readonly caPem: string;
}

/** A running DMS. */
export class DmsServer {
  private renewTimer: NodeJS.Timeout | undefined;
  private pusher: PolicyPusher | undefined;
  private healthWatch: HealthWatch | undefined;

  private constructor(
    /** The settings it runs with. */
    readonly settings: DmsSettings,
    /** Bound control-plane address. */
    readonly address: { host: string; port: number },
    /** Bound observability address, when served. */
    readonly observabilityAddress: { host: string; port: number } | undefined,
    /** Administrator credential files in the data directory. */
    readonly admin: AdminCredentialFiles,
    private readonly app: FastifyInstance,
    private readonly obs: Observability | undefined,
    private readonly ctx: DmsContext,
    private identity: DmsIdentity,
    /** The WebUX (docs/webux.md): its routes are on the control plane, its pages on its own port. */
    readonly webux: WebUx,
  ) {}

  /** The CA certificate (the bundle nodes are given as PLATFORM_CA_CERT_PEM). */
  get caCertPem(): string {
    return this.ctx.ca.certPem;
  }

  /** The DMS's current TLS identity. */
  get tlsIdentity(): DmsIdentity {
    return this.identity;
  }

  /** The store (read-only use: tests and the WebUX). */
  get state(): Readonly<DmsState> {
    return this.ctx.store.get();
  }

  /** Opens the store and the CA (creating them on first start), then serves (the WebUX too when `webux.port` is set). */
  static async start(settings: DmsSettings, log: LineLog = logLine('dms: '), webuxOptions: WebuxOptions = {}): Promise<DmsServer> {
    const problems = checkDmsSettings(settings);
    if (problems.length > 0) throw new Error(`invalid DMS settings:\n  ${problems.join('\n  ')}`);
    await mkdir(settings.dataDir, { recursive: true, mode: 0o700 });
    const ca = await CertificateAuthority.open({ dir: path.join(settings.dataDir, 'ca'), wrapKey: settings.wrapKey, keyBits: settings.caKeyBits, commonName: `HD DMS-CA (${settings.nodeName})` });
    if (ca.created) log(`created the DMS-CA root in ${path.join(settings.dataDir, 'ca')}${settings.wrapKey ? ' (key sealed with PLATFORM_PKI_WRAP_KEY)' : ''}`, 'info');
    const store = await JsonFileStore.open(path.join(settings.dataDir, 'state.json'), () => initialState(randomUUID()), checkState);
    let crl = '';
    const refreshCrl = async (): Promise<void> => {
      const number = await store.update((s) => {
        const now = Date.now();
        // Expired certificates need no revocation entry any more: TLS refuses them anyway.
        for (const [serial, c] of Object.entries(s.certificates)) if (Date.parse(c.not_after) < now) delete s.certificates[serial];
        return ++s.crl_number;
      });
      const revoked = Object.entries(store.get().certificates)
        .filter(([, c]) => c.revoked_at)
        .map(([serial, c]) => ({ serial, revokedAt: new Date(c.revoked_at as string) }));
      crl = ca.crl(revoked, number);
    };
    await refreshCrl();
    // The pusher needs the DMS's identity, made below; it reads it through this reference.
    let pusher: PolicyPusher | undefined;
    // The license lives in the WebUX's document, opened below; until then (no request is served yet) the community limits.
    let webuxRef: WebUx | undefined;
    const ctx: DmsContext = {
      store,
      ca,
      settings,
      k8s: settings.k8s ? new K8sTokenVerifier(settings.k8s) : undefined,
      crlPem: () => crl,
      refreshCrl,
      pushPolicy: () => (pusher ? pusher.pushAll() : Promise.resolve([])),
      limitsInEffect: () => (webuxRef ? webuxRef.limitsInEffect() : { limits: COMMUNITY_LIMITS, mode: 'community' }),
      log,
    };
    const admin = await ensureAdminCredentials(path.join(settings.dataDir, 'admin'), ca, settings.minKeyBits, store, settings.wrapKey);
    const identity = await issueIdentity(ctx);

    const app = fastify({
      https: { key: identity.keyPem, cert: identity.certPem, ca: [ca.certPem], requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' },
      bodyLimit: DMS_BODY_LIMIT,
      logger: false,
    }) as unknown as FastifyInstance;
    installErrorHandlers(app, log);

    let obs: Observability | undefined;
    let observe: (credential: string, result: 'ok' | 'refused') => void = () => undefined;
    let observePush: (result: 'installed' | 'failed') => void = () => undefined;
    if (settings.observabilityPort >= 0) {
      obs = new Observability({ role: 'dms', nodeName: settings.nodeName, host: settings.observabilityHost, port: settings.observabilityPort, processMetrics: true });
      const registrations = new Counter({ name: 'hd_dms_registrations_total', help: 'Registration requests, by credential and result', labelNames: ['credential', 'result'] as const, registers: [obs.registry] });
      new Gauge({
        name: 'hd_dms_nodes',
        help: 'Nodes known to the DMS, by state',
        labelNames: ['state'] as const,
        registers: [obs.registry],
        collect() {
          const counts = new Map<string, number>(NODE_STATES.map((st) => [st, 0]));
          for (const n of Object.values(store.get().nodes)) counts.set(n.state, (counts.get(n.state) ?? 0) + 1);
          for (const [st, c] of counts) this.set({ state: st }, c);
        },
      });
      observe = (credential, result) => registrations.inc({ credential, result });
      const pushes = new Counter({ name: 'hd_dms_policy_pushes_total', help: 'Policy pushes to Proxies, by result', labelNames: ['result'] as const, registers: [obs.registry] });
      observePush = (result) => pushes.inc({ result });
      obs.addHealthPart('store', () => ({ file: store.file, nodes: Object.keys(store.get().nodes).length, datasets: Object.keys(store.get().datasets).length }));
      obs.addHealthPart('ca', () => ({ created: ca.created, crl_number: store.get().crl_number }));
    }
    // The WebUX's routes first: its hook records every policy version published (docs/webux.md).
    const webux = await WebUx.open(ctx, webuxOptions);
    webuxRef = webux;
    webux.registerControlPlane(app);
    registerNodeRoutes(app, ctx, observe);
    registerAdminRoutes(app, ctx);
    registerPolicyRoutes(app, ctx);

    await app.listen({ host: settings.host, port: settings.port });
    const a = app.server.address();
    const address = typeof a === 'object' && a ? { host: a.address, port: a.port } : { host: settings.host, port: settings.port };
    const obsAddress = obs ? await obs.listen() : undefined;
    obs?.setStatus('ok');
    log(`DMS-Core listening on https://${address.host}:${address.port} (instance ${store.get().instance.id})`, 'info');
    await webux.listen(identity);
    webux.startMetrics();
    const server = new DmsServer(settings, address, obsAddress, admin, app, obs, ctx, identity, webux);
    server.scheduleRenewal();
    pusher = new PolicyPusher(ctx, () => server.identity, observePush);
    server.pusher = pusher;
    pusher.start();
    // Proxies that missed a policy while the DMS was down get it now.
    void pusher.pushAll();
    server.healthWatch = new HealthWatch(ctx);
    server.healthWatch.start();
    return server;
  }

  /** Renews the DMS's own certificate two thirds into its lifetime, without a restart. */
  private scheduleRenewal(): void {
    const ms = Math.floor((this.settings.certLifetimeS * 1000 * 2) / 3);
    this.renewTimer = setTimeout(() => {
      void issueIdentity(this.ctx).then(
        (id) => {
          this.identity = id;
          (this.app.server as unknown as HttpsServer).setSecureContext({ key: id.keyPem, cert: id.certPem, ca: [id.caPem] });
          this.webux.setTls(id);
          this.scheduleRenewal();
        },
        (err: unknown) => {
          this.ctx.log(`renewing the DMS certificate failed: ${(err as Error).message}; retrying in 60 s`, 'warn');
          this.renewTimer = setTimeout(() => this.scheduleRenewal(), 60_000);
          this.renewTimer.unref();
        },
      );
    }, ms);
    this.renewTimer.unref();
  }

  /** Stops serving. */
  async close(): Promise<void> {
    clearTimeout(this.renewTimer);
    this.pusher?.stop();
    this.healthWatch?.stop();
    await this.app.close();
    await this.webux.close();
    await this.obs?.close();
  }
}

/** A fresh key and certificate for the DMS itself (CN = node name, OU = dms, SANs = DMS_SERVER_NAMES). */
async function issueIdentity(ctx: DmsContext): Promise<DmsIdentity> {
  const kp = await generateRsaKey(ctx.settings.minKeyBits);
  const names = ctx.settings.serverNames;
  const isIp = (h: string): boolean => /^[\d.]+$/.test(h) || h.includes(':');
  const issued = ctx.ca.issue({
    commonName: ctx.settings.nodeName,
    role: DMS_ROLE,
    publicKeyPem: kp.publicKeyPem,
    lifetimeMs: ctx.settings.certLifetimeS * 1000,
    altNames: { dns: names.filter((n) => !isIp(n)), ips: names.filter(isIp) },
  });
  return { keyPem: kp.privateKeyPem, certPem: issued.certPem, caPem: ctx.ca.certPem };
}
