/**
 * Where hd_sql's schemas come from besides a schema directory: the DMS (the reference's
 * HD_DMS_ENDPOINT, HD_DMS_CA_FILE, HD_DMS_CLIENT_CERT_FILE, HD_DMS_CLIENT_KEY_FILE; `GET /v1/datasets`
 * over mutual TLS with a certificate the DMS issued), or, without them, the Proxy's copy (`GET
 * /v1/datasets` on the Proxy with the service's identity). Each schema is validated by engine-rs as
 * a schema file would be; errors name the variable to fix.
 */
import { readFileSync } from 'node:fs';
import { requestJson, type JsonAnswer } from '../net/jsonClient';
import { NODE_KEY_PURPOSE } from '../net/nodeIdentity';
import { isSealed, parseWrapKey, unseal, WrapKeyError } from '../net/pki/wrapKey';
import { Schema } from '../engine-rs/schema';
import { controlCallOptions, fetchDatasets } from '../sdk/proxyClient';
import type { SqlUpstream } from './upstream';

/** Where the DMS is and the TLS material to reach it. */
export interface DmsSchemaSource {
  readonly endpoint: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Longest wait for the answer (default 15 s). */
  readonly timeoutMs?: number;
}

function readPem(file: string, variable: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${variable}: cannot read ${file}: ${(err as Error).message}`);
  }
}

/**
 * hd_sql's private key (HD_DMS_CLIENT_KEY_FILE): a key sealed with PLATFORM_PKI_WRAP_KEY, as every
 * node's is when that key is set (docs/security.md), is opened with it; a sealed key without the
 * wrap key is an error naming both.
 */
export function readClientKey(file: string): string {
  const text = readPem(file, 'HD_DMS_CLIENT_KEY_FILE');
  if (!isSealed(text)) return text;
  const key = parseWrapKey(process.env.PLATFORM_PKI_WRAP_KEY);
  if (!key) throw new WrapKeyError(`HD_DMS_CLIENT_KEY_FILE (${file}) is sealed but PLATFORM_PKI_WRAP_KEY is not set`);
  return unseal(text, key, NODE_KEY_PURPOSE, `HD_DMS_CLIENT_KEY_FILE (${file})`);
}

/** The TLS material of the source, read from its files (also presented to the Proxy). */
export function dmsTls(src: DmsSchemaSource): { ca: string; cert: string; key: string } {
  return { ca: readPem(src.caFile, 'HD_DMS_CA_FILE'), cert: readPem(src.certFile, 'HD_DMS_CLIENT_CERT_FILE'), key: readClientKey(src.keyFile) };
}

/** Fetches and validates every dataset schema the DMS distributes. */
export async function fetchDmsSchemas(src: DmsSchemaSource): Promise<Schema[]> {
  const tls = dmsTls(src);
  let url: URL;
  try {
    url = new URL('/v1/datasets', src.endpoint);
  } catch {
    throw new Error(`HD_DMS_ENDPOINT must be a URL such as https://dms-core:6986, got "${src.endpoint}"`);
  }
  if (url.protocol !== 'https:') throw new Error(`HD_DMS_ENDPOINT must be https:// (the DMS serves only TLS), got "${src.endpoint}"`);
  let answer: JsonAnswer;
  try {
    answer = await requestJson('GET', url.toString(), { ...tls, roles: ['dms'] }, undefined, { timeoutMs: src.timeoutMs ?? 15_000 });
  } catch (err) {
    throw new Error(`cannot read the schemas from the DMS at ${src.endpoint} (HD_DMS_ENDPOINT): ${(err as Error).message}`);
  }
  if (answer.status !== 200) {
    const hint = answer.status === 401 || answer.status === 403 ? ' (HD_DMS_CLIENT_CERT_FILE must be a certificate this DMS issued)' : '';
    throw new Error(`the DMS at ${src.endpoint} answered ${answer.status} to GET /v1/datasets: ${JSON.stringify(answer.body).slice(0, 300)}${hint}`);
  }
  const list = (answer.body as { datasets?: unknown } | null)?.datasets;
  if (!Array.isArray(list)) throw new Error(`the DMS at ${src.endpoint} answered GET /v1/datasets without a "datasets" list`);
  return parseAll(list, "the DMS's");
}

/** The Proxy's copy of the schemas, read with the service's identity (Proxy mode without HD_DMS_*). */
export async function fetchProxySchemas(u: Extract<SqlUpstream, { kind: 'proxy' }>): Promise<Schema[]> {
  let list: unknown[];
  try {
    list = await fetchDatasets(u.url, controlCallOptions(u.headers, u.tls, undefined, ''));
  } catch (err) {
    throw new Error(`cannot read the schemas from the Proxy at ${u.url} (HD_PROXY_ENDPOINT; or set HD_DMS_* or HD_SQL_SCHEMA_DIR): ${(err as Error).message}`);
  }
  return parseAll(list, "the Proxy's");
}

function parseAll(list: readonly unknown[], whose: string): Schema[] {
  return list.map((s, i) => {
    try {
      return Schema.parse(s as object);
    } catch (err) {
      throw new Error(`${whose} dataset ${i + 1} (${JSON.stringify((s as { id?: unknown })?.id)}) is not a valid schema: ${(err as Error).message}`);
    }
  });
}
