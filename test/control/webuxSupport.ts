/**
 * Helpers for the WebUX tests: a DMS in this process serving the WebUX on a free port, signing in
 * with the login secret, and plain HTTPS calls carrying the session cookie and CSRF token.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { readAdminKey } from '../../control/dms/adminCredentials';
import { DmsServer } from '../../control/dms/dmsServer';
import { dmsSettings, type DmsSettings } from '../../control/dms/settings';
import type { WebuxOptions } from '../../control/dms/webux/webuxServer';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { tempDir } from './support';
import { TEST_LICENSE_PUBLIC_KEY } from './testLicense';

/** An answer of the WebUX. */
export interface WebAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: unknown;
  readonly text: string;
}

/** A signed-in browser's credentials. */
export interface WebSession {
  readonly cookie: string;
  readonly csrf: string;
}

/** A DMS with its WebUX. */
export interface WebuxDms {
  readonly server: DmsServer;
  readonly url: string;
  readonly webUrl: string;
  readonly dir: string;
  readonly admin: ClientTls;
  readonly anon: ClientTls;
  call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', route: string, tls: ClientTls, body?: unknown): Promise<JsonAnswer>;
  /** A request to the WebUX port; `client` presents a client certificate (certificate sign-in). */
  web(method: string, route: string, opts?: { session?: WebSession; body?: unknown; raw?: string; headers?: Record<string, string>; client?: { cert: string; key: string } }): Promise<WebAnswer>;
  /** Signs in with the secret in the data directory. */
  signIn(): Promise<WebSession>;
  close(): Promise<void>;
}

/**
 * Starts a DMS with the WebUX on a free loopback port, in community mode (no license), verifying
 * licenses with the tests' key (testLicense.ts) unless `webux` names another.
 */
export async function startWebuxDms(webux: WebuxOptions = {}, overrides: Partial<DmsSettings> = {}): Promise<WebuxDms> {
  const tmp = tempDir('hd-webux-');
  const server = await DmsServer.start(
    dmsSettings(tmp.dir, { host: '127.0.0.1', port: 0, observabilityHost: '127.0.0.1', observabilityPort: -1, minKeyBits: 2048, caKeyBits: 2048, ...overrides }),
    () => undefined,
    { port: 0, licensePublicKeyPem: TEST_LICENSE_PUBLIC_KEY, ...webux },
  );
  const url = `https://127.0.0.1:${server.address.port}`;
  const webUrl = `https://127.0.0.1:${server.webux.address?.port ?? 0}`;
  const admin = { ca: server.caCertPem, cert: readFileSync(server.admin.cert, 'utf8'), key: await readAdminKey(server.admin.key, undefined) };
  const web: WebuxDms['web'] = (method, route, opts = {}) =>
    new Promise((resolve, reject) => {
      const u = new URL(route, webUrl);
      const headers: Record<string, string> = { ...(opts.session && { cookie: opts.session.cookie, 'x-csrf-token': opts.session.csrf }), ...opts.headers };
      const payload = opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined);
      if (payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
      const req = https.request({ method, host: u.hostname, port: Number(u.port), path: u.pathname + u.search, ca: server.caCertPem, servername: 'localhost', agent: false, headers, ...opts.client }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString();
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  return {
    server,
    url,
    webUrl,
    dir: tmp.dir,
    admin,
    anon: { ca: server.caCertPem },
    call: (method, route, tls, body) => requestJson(method, `${url}${route}`, tls, body),
    web,
    signIn: async () => {
      const secret = readFileSync(path.join(tmp.dir, 'admin', 'webux-login'), 'utf8').trim();
      const r = await web('POST', '/ui/session', { body: { secret } });
      if (r.status !== 201) throw new Error(`sign-in failed: ${r.text}`);
      const cookie = String((r.headers['set-cookie'] as string[])[0]).split(';')[0];
      return { cookie, csrf: (r.body as { csrf: string }).csrf };
    },
    close: async () => {
      await server.close();
      tmp.remove();
    },
  };
}

/** Debian's chromium for the browser tests (scripts/chromium.sh installs it when missing), or undefined when it cannot be had. */
export function browserPath(): string | undefined {
  const script = path.resolve(__dirname, '../../scripts/chromium.sh');
  try {
    execFileSync('bash', [script, 'install'], { stdio: ['ignore', 'ignore', 'inherit'] });
    return execFileSync('bash', [script, 'path'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

/** Where the browser tests save screenshots: HD_WEBUX_SCREENSHOTS_DIR (docs/webux refreshes the docs' ones), else a temporary directory. */
export function screenshotsDir(): string {
  const dir = process.env.HD_WEBUX_SCREENSHOTS_DIR;
  return dir ? path.resolve(__dirname, '../..', dir) : path.join(os.tmpdir(), 'hd-webux-screenshots');
}
