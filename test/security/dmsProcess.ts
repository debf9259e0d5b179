/**
 * A real DMS process (`hd run pipelines/dms.yaml`) for the security tests: every attack is made
 * against what an operator runs, over its HTTPS port. 2048-bit keys keep the start short.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readAdminKey } from '../../control/dms/adminCredentials';
import { requestJson, type ClientTls, type JsonAnswer } from '../../net/jsonClient';
import { parseWrapKey } from '../../net/pki/wrapKey';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';

/** A running DMS process and how to reach it. */
export interface DmsProcess {
  readonly hd: HdProcess;
  readonly url: string;
  readonly dir: string;
  /** The DMS-CA root (PEM). */
  readonly ca: string;
  /** The administrator credential as the DMS wrote it now (the key opened with the wrap key). */
  admin(): Promise<ClientTls>;
  call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', route: string, tls: ClientTls, body?: unknown): Promise<JsonAnswer>;
  stop(): Promise<number | string>;
}

/** Starts a DMS on `dir` with `env` added (PLATFORM_PKI_WRAP_KEY, DMS_K8S_*, ...); resolves once it listens. */
export async function startDmsProcess(dir: string, env: Record<string, string> = {}): Promise<DmsProcess> {
  const port = await freePort();
  const hd = startHd(['run', 'pipelines/dms.yaml', '--quiet'], {
    DMS_DATA_DIR: dir,
    COMMAND_INTERFACE: '127.0.0.1',
    COMMAND_PORT: String(port),
    OBSERVABILITY_PORT: '-1',
    DMS_MIN_KEY_BITS: '2048',
    DMS_CA_KEY_BITS: '2048',
    ...env,
  });
  await waitForPort('127.0.0.1', port, hd, 60_000);
  const url = `https://127.0.0.1:${port}`;
  const ca = readFileSync(path.join(dir, 'ca', 'ca.cert.pem'), 'utf8');
  return {
    hd,
    url,
    dir,
    ca,
    admin: async () => ({
      ca,
      cert: readFileSync(path.join(dir, 'admin', 'admin.cert.pem'), 'utf8'),
      key: await readAdminKey(path.join(dir, 'admin', 'admin.key.pem'), parseWrapKey(env.PLATFORM_PKI_WRAP_KEY)),
    }),
    call: (method, route, tls, body) => requestJson(method, `${url}${route}`, tls, body),
    stop: () => hd.stop(),
  };
}

/** A bootstrap token made by the administrator (`body`: node_name, role?), or throws with the DMS's answer. */
export async function adminToken(dms: DmsProcess, body: { node_name: string; role?: string }): Promise<string> {
  const a = await dms.call('POST', '/v1/bootstrap-tokens', await dms.admin(), body);
  if (a.status !== 201) throw new Error(`POST /v1/bootstrap-tokens: ${a.status} ${JSON.stringify(a.body)}`);
  return (a.body as { token: string }).token;
}
