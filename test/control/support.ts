/**
 * Helpers for the control-plane tests: a DMS in this process on a free loopback port with a temp
 * data directory (2048-bit keys so the tests do not spend seconds per key), admin TLS material,
 * and plain calls.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readAdminKey } from '../../control/dms/adminCredentials';
import { DmsServer } from '../../control/dms/dmsServer';
import { dmsSettings, type DmsSettings } from '../../control/dms/settings';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { TEST_LICENSE_PUBLIC_KEY, testLicense } from './testLicense';

/** A temporary directory removed by the returned function. */
export function tempDir(prefix = 'hd-control-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A DMS running in this process, and how to talk to it. */
export interface TestDms {
  readonly server: DmsServer;
  readonly url: string;
  readonly dir: string;
  /** TLS with the administrator certificate. */
  readonly admin: ClientTls;
  /** TLS with the CA bundle only (no client certificate). */
  readonly anon: ClientTls;
  call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', route: string, tls: ClientTls, body?: unknown, headers?: Record<string, string>): Promise<JsonAnswer>;
  close(): Promise<void>;
}

/** How {@link startTestDms} sets up the license. */
export interface TestDmsOptions {
  /**
   * `licensed` (default): a test license with room for any test's topology is imported (signed
   * with the tests' key, testLicense.ts), so tests with several clusters or Proxies run as before
   * the limits were enforced; `community`: none, the community limits apply.
   */
  readonly license?: 'licensed' | 'community';
}

/** Starts a DMS with test settings (`overrides` win), in `dir` or a fresh temp directory. */
export async function startTestDms(overrides: Partial<DmsSettings> = {}, dir?: string, opts: TestDmsOptions = {}): Promise<TestDms> {
  const tmp = dir === undefined ? tempDir('hd-dms-') : undefined;
  const dataDir = dir ?? (tmp as { dir: string }).dir;
  const server = await DmsServer.start(
    dmsSettings(dataDir, { host: '127.0.0.1', port: 0, observabilityHost: '127.0.0.1', observabilityPort: -1, minKeyBits: 2048, caKeyBits: 2048, ...overrides }),
    () => undefined,
    { licensePublicKeyPem: TEST_LICENSE_PUBLIC_KEY },
  );
  const url = `https://127.0.0.1:${server.address.port}`;
  const admin = { ca: server.caCertPem, cert: readFileSync(server.admin.cert, 'utf8'), key: await readAdminKey(server.admin.key, overrides.wrapKey) };
  if (opts.license !== 'community') {
    const r = await requestJson('PUT', `${url}/v1/license`, admin, testLicense());
    if (r.status !== 200) throw new Error(`the test license was refused: ${JSON.stringify(r.body)}`);
  }
  return {
    server,
    url,
    dir: dataDir,
    admin,
    anon: { ca: server.caCertPem },
    call: (method, route, tls, body, headers) => requestJson(method, `${url}${route}`, tls, body, { headers }),
    close: async () => {
      await server.close();
      tmp?.remove();
    },
  };
}

/** Sends raw bytes as a request body (for malformed-input tests). */
export async function rawRequest(method: string, url: string, tls: ClientTls, body: string, contentType = 'application/json'): Promise<JsonAnswer> {
  const https = await import('node:https');
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = https.request({ method, host: u.hostname, port: Number(u.port), path: u.pathname, ca: tls.ca as string, cert: tls.cert, key: tls.key, agent: false, headers: { 'content-type': contentType } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // keep text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
