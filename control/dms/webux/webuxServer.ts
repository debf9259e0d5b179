/**
 * DMS-WebUX (docs/webux.md): the administration web application, served by the DMS process on
 * WEBUX_PORT (3000) over HTTPS with the DMS's own certificate. It serves the static front end
 * (web/, Preact + htm as ES modules straight from node_modules: no bundler, no CDN) and the admin
 * API under /v1/, where a signed-in session (session.ts) stands for the administrator certificate
 * (context.ts, SESSION_PEER). A session comes from the one-time login secret or from an
 * administrator's client certificate, which this port asks browsers for but never requires
 * (certSignIn.ts). The routes behind the pages are also on the control plane
 * ({@link WebUx.registerControlPlane}), so curl with the admin certificate can do all of it. The
 * WebUX also owns the license limits in effect ({@link WebUx.limitsInEffect}) and the scraper of
 * the nodes' metrics behind the graphs (metricsScraper.ts).
 */
import { readFileSync, existsSync } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import path from 'node:path';
import fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { asObject, onlyKeys, reqString } from '../../http/body';
import { HttpError, installErrorHandlers } from '../../http/errors';
import type { Store } from '../../store/jsonFileStore';
import { registerAdminRoutes } from '../adminRoutes';
import { ADMIN_ROLE, requireRole, SESSION_PEER, type DmsContext, type Peer } from '../context';
import { registerPolicyRoutes } from '../policyRoutes';
import { topologyView } from '../topology';
import { HD_LICENSE_PUBLIC_KEY } from './license';
import { registerBadBatchRoutes } from './badBatchRoutes';
import { certificateVerdict, requireAdminCertificate, revokedSince } from './certSignIn';
import type { LimitsInEffect } from './communityLimits';
import { currentLicense, registerLicenseRoutes } from './licenseRoutes';
import { DEFAULT_METRICS_HISTORY, DEFAULT_METRICS_INTERVAL_MS, MetricsScraper, registerMetricsRoutes } from './metricsScraper';
import { registerOperationsRoutes } from './operationsRoutes';
import { registerPolicyWorkbench } from './policyWorkbench';
import { cookieValue, CSRF_HEADER, loginSecretFile, SESSION_COOKIE, sessionCookie, SessionBook, type Session } from './session';
import { openWebuxState, rememberPolicy, type WebuxState } from './webuxState';

/** Default WebUX port (the reference's DMS-WebUX). */
export const DEFAULT_WEBUX_PORT = 3000;

/** How the WebUX is served. */
export interface WebuxOptions {
  /** Port of the web application; undefined or -1: not served (the admin routes stay on the control plane). */
  readonly port?: number;
  /** Bind address (default: the control plane's). */
  readonly host?: string;
  /**
   * TEST ONLY: the key licenses must be signed with, instead of the vendor key built in
   * (license.ts). Tests sign their own licenses with a key pair of their own; no pipeline setting
   * or environment variable reaches this, so a deployed DMS always verifies with the vendor's key.
   */
  readonly licensePublicKeyPem?: string;
  /** Milliseconds between scrapes of the nodes' /metrics for the graphs (default 5000; 0: none) — DMS_METRICS_INTERVAL_MS. */
  readonly metricsIntervalMs?: number;
  /** Points of metrics history kept per node (default 360) — DMS_METRICS_HISTORY. */
  readonly metricsHistory?: number;
}

/** The TLS material the WebUX serves with (the DMS's identity). */
export interface WebuxTls {
  readonly keyPem: string;
  readonly certPem: string;
  /** DMS-CA: browsers are asked for a client certificate it issued (certificate sign-in), none is required. */
  readonly caPem?: string;
}

/** The WebUX's TLS options: our identity, and a client certificate asked for (never required) when the CA is given. */
function tlsOptions(tls: WebuxTls): { key: string; cert: string; ca?: string[]; requestCert: boolean; rejectUnauthorized: false } {
  return { key: tls.keyPem, cert: tls.certPem, ...(tls.caPem && { ca: [tls.caPem] }), requestCert: tls.caPem !== undefined, rejectUnauthorized: false };
}

/** Static files of the front end: URL path → [file, content type]. */
const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** The repository's (or installed package's) web/ directory, found upwards from this file. */
function webDir(): string {
  for (let d = __dirname; d !== path.dirname(d); d = path.dirname(d)) if (existsSync(path.join(d, 'web', 'index.html'))) return path.join(d, 'web');
  throw new Error(`the WebUX front end (web/index.html) is not found above ${__dirname}; reinstall HD (npm install)`);
}

/** The front end's files, read once: the app and the vendored ES modules with bare imports made absolute. */
function loadAssets(): Map<string, { body: string; type: string }> {
  const dir = webDir();
  const out = new Map<string, { body: string; type: string }>();
  for (const f of ['index.html', 'app.js', 'pages.js', 'governance.js', 'metrics.js', 'signIn.js', 'style.css']) {
    const file = path.join(dir, f);
    if (existsSync(file)) out.set(f === 'index.html' ? '/' : `/${f}`, { body: readFileSync(file, 'utf8'), type: CONTENT_TYPES[path.extname(f)] });
  }
  const bare = (text: string): string => text.replace(/from\s*["']preact["']/g, 'from "/vendor/preact.mjs"');
  const js = CONTENT_TYPES['.js'];
  out.set('/vendor/preact.mjs', { body: readFileSync(require.resolve('preact'), 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, ''), type: js });
  out.set('/vendor/hooks.mjs', { body: bare(readFileSync(require.resolve('preact/hooks'), 'utf8')).replace(/\/\/# sourceMappingURL=.*$/m, ''), type: js });
  out.set('/vendor/htm.mjs', { body: readFileSync(path.join(path.dirname(require.resolve('htm')), 'htm.module.js'), 'utf8'), type: js });
  return out;
}

/** Security headers of every WebUX answer. */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'strict-transport-security': 'max-age=31536000',
};

/** The WebUX of one DMS. */
export class WebUx {
  private app: FastifyInstance | undefined;
  /** Bound address of the web application, when served. */
  address: { host: string; port: number } | undefined;

  private constructor(
    private readonly ctx: DmsContext,
    /** The WebUX's own document (policy history, quarantine reasons, license). */
    readonly state: Store<WebuxState>,
    /** Login secrets and sessions. */
    readonly sessions: SessionBook,
    private readonly opts: WebuxOptions,
    /** Reads the nodes' /metrics for the graphs (docs/webux.md, "Metrics"). */
    readonly metrics: MetricsScraper,
  ) {}

  /** Opens the WebUX document and writes a fresh login secret to the data directory. */
  static async open(ctx: DmsContext, opts: WebuxOptions = {}): Promise<WebUx> {
    const state = await openWebuxState(ctx.settings.dataDir);
    await rememberPolicy(state, ctx.store.get().policy);
    const sessions = new SessionBook(ctx.settings.dataDir);
    await sessions.writeFileSecret();
    const metrics = new MetricsScraper(ctx, { intervalMs: opts.metricsIntervalMs ?? DEFAULT_METRICS_INTERVAL_MS, history: opts.metricsHistory ?? DEFAULT_METRICS_HISTORY });
    return new WebUx(ctx, state, sessions, opts, metrics);
  }

  /** The file with the one-time login secret. */
  get loginSecretFile(): string {
    return loginSecretFile(this.ctx.settings.dataDir);
  }

  private get licenseKey(): string {
    return this.opts.licensePublicKeyPem ?? HD_LICENSE_PUBLIC_KEY;
  }

  /** The license limits in effect now (registration and cluster declarations check them; communityLimits.ts). */
  limitsInEffect(): LimitsInEffect {
    const s = currentLicense(this.ctx, this.state, this.licenseKey);
    return { limits: s.limits, mode: s.mode, ...(s.license && { license: { id: s.license.id, licensee: s.license.licensee } }), ...(s.problem && { problem: s.problem }) };
  }

  /** The routes behind the pages, for the control plane (admin certificate) and the WebUX alike. */
  private registerPageRoutes(app: FastifyInstance): void {
    registerOperationsRoutes(app, this.ctx, this.state);
    registerBadBatchRoutes(app, this.ctx, this.state);
    registerPolicyWorkbench(app, this.ctx, this.state);
    registerLicenseRoutes(app, this.ctx, this.state, this.licenseKey);
    registerMetricsRoutes(app, this.ctx, this.metrics);
  }

  /** Adds the page routes and `POST /v1/webux/login-secrets` (admin certificate) to the control plane. */
  registerControlPlane(app: FastifyInstance): void {
    this.registerPageRoutes(app);
    app.post('/v1/webux/login-secrets', async (req, reply) => {
      const peer = requireRole(req, this.ctx, [ADMIN_ROLE]);
      const { secret, expiresAt } = this.sessions.mintSecret(peer.name);
      return reply.code(201).send({ secret, expires_at: expiresAt, sign_in: this.address ? `https://${this.ctx.settings.serverNames[0]}:${this.address.port}/` : null });
    });
  }

  /** Serves the web application when a port is set; a port in use is logged, never fatal (the DMS runs on). */
  async listen(tls: WebuxTls): Promise<void> {
    if (this.opts.port === undefined || this.opts.port < 0) return;
    const app = fastify({ https: { ...tlsOptions(tls), minVersion: 'TLSv1.2' }, bodyLimit: 1024 * 1024, logger: false }) as unknown as FastifyInstance;
    installErrorHandlers(app, this.ctx.log);
    const assets = loadAssets();
    app.addHook('onSend', async (_req, reply) => {
      reply.headers(SECURITY_HEADERS);
    });
    app.addHook('onRequest', async (req) => this.authenticate(req));
    for (const [url, a] of assets) app.get(url, async (_req, reply) => reply.type(a.type).send(a.body));
    this.registerSessionRoutes(app);
    this.registerPageRoutes(app);
    registerAdminRoutes(app, this.ctx);
    registerPolicyRoutes(app, this.ctx);
    app.get('/v1/topology', async (req) => {
      requireRole(req, this.ctx, [ADMIN_ROLE]);
      return topologyView(this.ctx.store.get());
    });
    try {
      await app.listen({ host: this.opts.host ?? this.ctx.settings.host, port: this.opts.port });
    } catch (err) {
      this.ctx.log(`DMS-WebUX not served: ${(err as Error).message} (set DMS_WEBUX_PORT to a free port, or -1 to turn it off)`);
      await app.close();
      return;
    }
    const a = app.server.address();
    this.address = typeof a === 'object' && a ? { host: a.address, port: a.port } : { host: this.opts.host ?? '', port: this.opts.port };
    this.app = app;
    this.ctx.log(`DMS-WebUX on https://${this.address.host}:${this.address.port}/ (sign in with the secret in ${this.loginSecretFile})`);
  }

  /** Requests to /v1/ need a session; those that change something also its CSRF token and our Origin. */
  private authenticate(req: FastifyRequest): void {
    const url = req.url.split('?')[0];
    if (!url.startsWith('/v1/')) return;
    const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
    const session = this.sessions.session(id);
    if (!session) throw new HttpError('unauthenticated', `${req.method} ${url} needs a WebUX session: sign in at / with the login secret (${this.loginSecretFile}, or POST /v1/webux/login-secrets with the admin certificate) or with an administrator certificate`);
    if (revokedSince(session.serial, this.ctx)) {
      this.sessions.signOut(id);
      throw new HttpError('unauthenticated', `the certificate ${session.serial ?? ''} this session was opened with has been revoked; sign in again`);
    }
    this.checkCsrf(req, session);
    const peer: Peer = { name: session.who, role: ADMIN_ROLE, serial: 'webux-session', notAfter: new Date(session.lastUsed + 8 * 3600 * 1000) };
    (req as unknown as { [SESSION_PEER]?: Peer })[SESSION_PEER] = peer;
  }

  private checkCsrf(req: FastifyRequest, session: Session): void {
    if (req.method === 'GET' || req.method === 'HEAD') return;
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `https://${req.headers.host ?? ''}`) throw new HttpError('forbidden', `cross-origin request refused: Origin ${origin} is not this WebUX (https://${req.headers.host ?? '?'})`);
    const token = req.headers[CSRF_HEADER];
    if (typeof token !== 'string' || token !== session.csrf) throw new HttpError('forbidden', `${req.method} ${req.url.split('?')[0]} needs the session's CSRF token in the ${CSRF_HEADER} header (GET /ui/session gives it to the page)`);
  }

  private registerSessionRoutes(app: FastifyInstance): void {
    app.post('/ui/session', async (req, reply) => {
      const body = asObject(req.body);
      onlyKeys(body, ['secret']);
      const secret = reqString(body, 'secret', { max: 200 });
      const r = await this.sessions.signIn(secret.trim());
      if (!r) throw new HttpError('unauthenticated', `the login secret is unknown, used or expired; use the current one in ${this.loginSecretFile} (each works once), or mint one with POST /v1/webux/login-secrets`);
      this.ctx.log(`WebUX: ${r.session.who} signed in`);
      return reply.header('set-cookie', sessionCookie(r.id)).code(201).send({ who: r.session.who, csrf: r.session.csrf });
    });
    // Certificate sign-in (certSignIn.ts): what the browser presented, and the exchange for a session.
    app.get('/ui/certificate', async (req) => certificateVerdict(req, this.ctx));
    app.post('/ui/session/certificate', async (req, reply) => {
      // No session yet, so no CSRF token: the request must come from this WebUX's own page.
      if (req.headers.origin !== `https://${req.headers.host ?? ''}`) throw new HttpError('forbidden', `certificate sign-in is taken only from this WebUX's page (Origin https://${req.headers.host ?? '?'}), not from ${req.headers.origin ?? 'a request without an Origin'}`);
      const v = requireAdminCertificate(req, this.ctx);
      const r = this.sessions.open(v.subject.cn, v.serial);
      this.ctx.log(`WebUX: ${r.session.who} signed in with certificate ${v.serial}`);
      return reply.header('set-cookie', sessionCookie(r.id)).code(201).send({ who: r.session.who, csrf: r.session.csrf, certificate: v.serial });
    });
    app.get('/ui/session', async (req) => {
      const s = this.sessions.session(cookieValue(req.headers.cookie, SESSION_COOKIE));
      if (!s) throw new HttpError('unauthenticated', 'not signed in');
      return { who: s.who, csrf: s.csrf };
    });
    app.delete('/ui/session', async (req, reply) => {
      const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
      const s = this.sessions.session(id);
      if (!s) throw new HttpError('unauthenticated', 'not signed in');
      this.checkCsrf(req, s);
      this.sessions.signOut(id);
      return reply.header('set-cookie', sessionCookie('')).send({ signed_out: true });
    });
  }

  /** Serves with a renewed certificate. */
  setTls(tls: WebuxTls): void {
    (this.app?.server as unknown as HttpsServer | undefined)?.setSecureContext({ key: tls.keyPem, cert: tls.certPem, ...(tls.caPem && { ca: [tls.caPem] }) });
  }

  /** Starts reading the nodes' metrics (once the DMS serves). */
  startMetrics(): void {
    this.metrics.start();
  }

  /** Stops serving and scraping. */
  async close(): Promise<void> {
    await this.metrics.stop();
    await this.app?.close();
  }
}
