/**
 * The SDK's calls to the HD Proxy (docs/proxy.md): `GET /v1/topology` for `discoverSccTargets` and
 * `POST /v1/query` for Proxy mode. Both are control-plane requests: they carry the client's control
 * headers (an ingress's identity headers, or `Authorization: Bearer <JWT>`) and, once the client has
 * registered with the DMS, its certificate (mutual TLS).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { peerRoleProblem } from '../net/peerRole';
import { proxyAgent } from './proxyAgents';
import type { SccTarget } from './sccTargets';
import { traceHeaders } from '../lib/tracing/traceContext';

/** TLS material of the Proxy calls; every part optional. */
export interface ControlTls {
  /** CA bundle the Proxy's certificate must chain to (default: PLATFORM_CA_CERT_PEM, else the system's roots). */
  readonly ca?: string;
  /** Client certificate and key (mutual TLS); registerWithDms fills them in. */
  readonly cert?: string;
  readonly key?: string;
  /** Name the Proxy's certificate must carry when the URL names an address. */
  readonly servername?: string;
}

/** How one Proxy call is made. */
export interface ProxyCallOptions {
  readonly tls: ControlTls;
  /** Control headers (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** Local address of the request (the client's control-plane interface); empty: any. */
  readonly localAddress?: string;
  /** Longest wait for the answer; default 60 s (a query's dispatch may take the Proxy's 30 s deadline). */
  readonly timeoutMs?: number;
}

/** The Proxy's topology: the primary cluster's SCCs (named). */
export interface ProxyTopology {
  readonly primaryCluster: string | null;
  readonly targets: readonly SccTarget[];
  /** Node names of `targets`, same order (the result event's `dispatch.scc` is one of them). */
  readonly names: readonly string[];
}

/** The query result event the Proxy answers (the parts the client reads). */
export interface ProxyResultEvent {
  readonly query_id: number;
  readonly dataset: string;
  readonly batch_ids: readonly string[];
  readonly would_exclude_batches: readonly string[];
  readonly bloomrf_mode: string;
  readonly policy_version?: number;
  readonly rewrite?: { readonly hidden_fields?: readonly string[]; readonly field_mask?: string | null };
  readonly dispatch: { readonly scc: string; readonly batches?: number; readonly nodes?: readonly string[]; readonly missing_batch_ids: readonly string[] };
}

/**
 * The Proxy refused a request (`status` 0: it could not be reached or its answer was not one).
 * The message says what went wrong and what to do.
 */
export class ProxyError extends Error {
  override readonly name = 'ProxyError';
  constructor(
    message: string,
    /** HTTP status; 0 when there was no usable answer. */
    readonly status: number,
    /** The Proxy's error code (`unknown_dataset`, ...), or `unreachable` / `bad_answer`. */
    readonly code: string,
  ) {
    super(message);
  }
}

/** What to do about each of the Proxy's error answers. */
const HINTS: Record<number, string> = {
  400: 'fix the query (the message names the key)',
  401: 'give an identity: addControlHeader("X-Forwarded-Role", ...) and ("X-Forwarded-Email", ...) behind an ingress, or addControlHeader("Authorization", "Bearer <JWT>") when the Proxy verifies JWTs',
  403: 'the identity may not make this call; use an identity the policy allows',
  404: 'query a dataset the DMS distributes (GET /v1/topology lists them), or register the dataset with the DMS',
  409: 'retry with a newer version',
  500: 'the Proxy failed closed (a policy that cannot decide lets nothing through); ask the administrator to fix the policy',
  502: 'no SCC of the primary cluster took the query; check that the SCCs run and the DMS topology names them',
  503: 'the Proxy is not ready (no policy installed yet, or the SCCs admit no more queries); retry later',
  504: 'the SCC did not answer in time (PROXY_DISPATCH_TIMEOUT_MS); retry, or ask for fewer batches',
};

/** The CA bundle of PLATFORM_CA_CERT_PEM (PEM text or a file), or undefined. */
export function envCaPem(env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  const raw = env.PLATFORM_CA_CERT_PEM;
  if (!raw) return undefined;
  if (raw.includes('-----BEGIN')) return raw;
  try {
    return readFileSync(raw, 'utf8');
  } catch (err) {
    throw new ProxyError(`PLATFORM_CA_CERT_PEM names '${raw}', which cannot be read: ${(err as Error).message}`, 0, 'bad_setting');
  }
}

/** Checks a Proxy URL (`https://host:port` or `http://…` behind an ingress); throws naming it. */
export function checkProxyUrl(proxyUrl: string): URL {
  let u: URL;
  try {
    u = new URL(proxyUrl);
  } catch {
    throw new RangeError(`proxy URL "${proxyUrl}" is not a URL; give https://<proxy-host>:6986`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new RangeError(`proxy URL "${proxyUrl}" must be https:// (or http:// behind an ingress)`);
  return u;
}

/** One JSON request to the Proxy; resolves with status and body text, rejects (ProxyError 0) when unreachable. */
function call(method: 'GET' | 'POST', proxyUrl: string, route: string, opts: ProxyCallOptions, body?: unknown, fresh = false): Promise<{ status: number; text: string }> {
  const u = new URL(route, checkProxyUrl(proxyUrl));
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const what = `${method} ${u.origin}${route}`;
  return new Promise((resolve, reject) => {
    const secure = u.protocol === 'https:';
    const ca = opts.tls.ca ?? envCaPem();
    const sn = opts.tls.servername;
    const req = (secure ? https : http).request(
      {
        method,
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port === '' ? (secure ? 443 : 80) : Number(u.port),
        path: `${u.pathname}${u.search}`,
        // A DMS-CA certificate (O=HD) must be the Proxy's (OU=proxy): a registered `client` cannot pose as it; an ingress's own certificate is checked by name only.
        ...(secure && { ca, cert: opts.tls.cert, key: opts.tls.key, ...(sn && { servername: sn }), checkServerIdentity: (h: string, c: PeerCertificate) => checkServerIdentity(sn ?? h, c) ?? (c.subject?.O === 'HD' ? peerRoleProblem(c, ['proxy']) : undefined) }),
        ...(opts.localAddress && { localAddress: opts.localAddress }),
        // A kept connection of this origin and material when one is idle (sdk/proxyAgents.ts).
        agent: fresh ? false : proxyAgent(secure, u.origin, secure ? [ca, opts.tls.cert, opts.tls.key, sn] : [], opts.localAddress),
        headers: { accept: 'application/json', ...opts.headers, ...(payload && { 'content-type': 'application/json', 'content-length': String(payload.length) }) },
        timeout: timeoutMs,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', (err) => reject(new ProxyError(`${what}: the answer broke off: ${err.message}`, 0, 'unreachable')));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => {
      // A kept connection the Proxy closed as it was reused: the request never reached it, so it goes once more on a new one.
      if (req.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET' && !fresh) return void call(method, proxyUrl, route, opts, body, true).then(resolve, reject);
      reject(new ProxyError(`the Proxy could not be reached (${what}): ${err.message}; check the proxy URL, that the Proxy runs, and its CA (PLATFORM_CA_CERT_PEM or registerWithDms)`, 0, 'unreachable'));
    });
    req.end(payload);
  });
}
/** The error of a non-200 answer: the Proxy's `{error, message}` plus what to do. */
function errorOf(what: string, status: number, text: string): ProxyError {
  let code = `http_${status}`;
  let message = text.slice(0, 300);
  try {
    const b = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof b.error === 'string') code = b.error;
    if (typeof b.message === 'string') message = b.message;
  } catch {
    // Not the Proxy's error shape (an ingress page): keep the text.
  }
  const hint = HINTS[status];
  return new ProxyError(`the Proxy refused ${what}: HTTP ${status} ${code}: ${message}${hint ? `; ${hint}` : ''}`, status, code);
}

function port(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65535 ? v : undefined;
}

/**
 * Reads the topology answer: `scc_targets` of `{name, host, port, grpc_port?}`. Throws ProxyError
 * (`bad_answer`) naming what is wrong; an empty list is returned as it is (the caller decides).
 */
export function parseTopology(text: string): ProxyTopology {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ProxyError(`the Proxy's topology is not JSON: ${(err as Error).message}`, 200, 'bad_answer');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ProxyError('the Proxy\'s topology is not a JSON object', 200, 'bad_answer');
  const o = doc as Record<string, unknown>;
  if (!Array.isArray(o.scc_targets)) throw new ProxyError(`the Proxy's topology has no scc_targets list (got ${JSON.stringify(o.scc_targets) ?? 'nothing'})`, 200, 'bad_answer');
  const targets: SccTarget[] = [];
  const names: string[] = [];
  o.scc_targets.forEach((t: unknown, i) => {
    const e = (typeof t === 'object' && t !== null ? t : {}) as Record<string, unknown>;
    const p = port(e.port);
    if (typeof e.host !== 'string' || e.host === '' || p === undefined) throw new ProxyError(`the Proxy's topology scc_targets[${i}] is not {host, port}: ${JSON.stringify(t)?.slice(0, 200)}`, 200, 'bad_answer');
    if (e.grpc_port !== undefined && port(e.grpc_port) === undefined) throw new ProxyError(`the Proxy's topology scc_targets[${i}].grpc_port is not a port: ${JSON.stringify(e.grpc_port)}`, 200, 'bad_answer');
    const g = port(e.grpc_port);
    targets.push(g === undefined ? { host: e.host, port: p } : { host: e.host, port: p, grpcPort: g });
    names.push(typeof e.name === 'string' ? e.name : `${e.host}:${p}`);
  });
  return { primaryCluster: typeof o.primary_cluster === 'string' ? o.primary_cluster : null, targets, names };
}

/** Reads a query result event; throws ProxyError (`bad_answer`) naming the key that is wrong. */
export function parseResultEvent(text: string): ProxyResultEvent {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ProxyError(`the Proxy's query answer is not JSON: ${(err as Error).message}`, 200, 'bad_answer');
  }
  const bad = (key: string): ProxyError => new ProxyError(`the Proxy's query answer has no valid '${key}'`, 200, 'bad_answer');
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ProxyError("the Proxy's query answer is not a JSON object", 200, 'bad_answer');
  const o = doc as Record<string, unknown>;
  const ids = (v: unknown): v is string[] => Array.isArray(v) && v.every((b) => typeof b === 'string' && /^[0-9a-fA-F]{128}$/.test(b));
  if (!Number.isInteger(o.query_id)) throw bad('query_id');
  if (typeof o.dataset !== 'string') throw bad('dataset');
  if (!ids(o.batch_ids)) throw bad('batch_ids');
  if (!ids(o.would_exclude_batches)) throw bad('would_exclude_batches');
  if (typeof o.bloomrf_mode !== 'string') throw bad('bloomrf_mode');
  const d = o.dispatch as Record<string, unknown> | null | undefined;
  if (typeof d !== 'object' || d === null || typeof d.scc !== 'string') throw bad('dispatch');
  if (d.missing_batch_ids !== undefined && !ids(d.missing_batch_ids)) throw bad('dispatch.missing_batch_ids');
  return { ...(o as unknown as ProxyResultEvent), dispatch: { ...(d as unknown as ProxyResultEvent['dispatch']), missing_batch_ids: (d.missing_batch_ids as string[] | undefined) ?? [] } };
}

/**
 * How a client calls the Proxy: TLS from `given` (the client's options) over `registered` (what
 * registerWithDms returned), the control headers, and the control-plane interface as local address.
 */
export function controlCallOptions(headers: Readonly<Record<string, string>>, given: ControlTls | undefined, registered: ControlTls | undefined, localAddress: string): ProxyCallOptions {
  const tls: ControlTls = { ...registered, ...Object.fromEntries(Object.entries(given ?? {}).filter(([, v]) => v !== undefined)) };
  return { tls, headers, ...(localAddress && { localAddress }) };
}

/**
 * The primary cluster's SCCs from the Proxy at `proxyUrl` (empty: none given). Throws ProxyError when
 * there is no URL, the Proxy is unreachable or refuses, the answer is no topology, or it names no SCC.
 */
export async function discoverTargets(proxyUrl: string, opts: ProxyCallOptions): Promise<ProxyTopology> {
  if (!proxyUrl) throw new ProxyError('no Proxy URL: give one (the client constructor, options.proxyUrl or the discoverSccTargets argument) or set HD_PROXY_ENDPOINT', 0, 'no_url');
  const topo = await fetchTopology(proxyUrl, opts);
  if (topo.targets.length === 0) throw new ProxyError(`the Proxy at ${proxyUrl} names no SCC of the primary cluster (${topo.primaryCluster ?? 'none set'}); every send and query fails until the DMS topology has one`, 200, 'no_targets');
  return topo;
}

/** `GET {proxyUrl}/v1/topology`. Throws ProxyError saying why (unreachable, refused, not a topology). */
export async function fetchTopology(proxyUrl: string, opts: ProxyCallOptions): Promise<ProxyTopology> {
  const r = await call('GET', proxyUrl, '/v1/topology', opts);
  if (r.status !== 200) throw errorOf('the topology request', r.status, r.text);
  return parseTopology(r.text);
}

/** `GET {proxyUrl}/v1/datasets`: the dataset schemas the Proxy holds (the DMS's), as JSON objects. Throws ProxyError. */
export async function fetchDatasets(proxyUrl: string, opts: ProxyCallOptions): Promise<unknown[]> {
  const r = await call('GET', proxyUrl, '/v1/datasets', opts);
  if (r.status !== 200) throw errorOf('the datasets request', r.status, r.text);
  let doc: unknown;
  try {
    doc = JSON.parse(r.text);
  } catch {
    throw new ProxyError(`the Proxy at ${proxyUrl} answered GET /v1/datasets with something that is not JSON`, 200, 'bad_answer');
  }
  const list = (doc as { datasets?: unknown } | null)?.datasets;
  if (!Array.isArray(list)) throw new ProxyError(`the Proxy at ${proxyUrl} answered GET /v1/datasets without a "datasets" list`, 200, 'bad_answer');
  return list;
}

/**
 * `POST {proxyUrl}/v1/query/cancel` (ours): the Proxy relays CancelQuery to `scc` (or every SCC of
 * the primary cluster). Resolves with where it landed; throws ProxyError (404 `not_found` when no
 * SCC runs the query, 404 with another code from a Proxy without the route).
 */
export async function postCancel(proxyUrl: string, body: { query_id: number; token: string; scc?: string }, opts: ProxyCallOptions): Promise<{ cancelled: boolean; scc: string; nodes: number }> {
  const r = await call('POST', proxyUrl, '/v1/query/cancel', opts, body);
  if (r.status !== 200) throw errorOf(`the cancel of query ${body.query_id}`, r.status, r.text);
  try {
    const doc = JSON.parse(r.text) as { cancelled?: unknown; scc?: unknown; nodes?: unknown };
    if (typeof doc.cancelled === 'boolean' && typeof doc.scc === 'string' && typeof doc.nodes === 'number') return { cancelled: doc.cancelled, scc: doc.scc, nodes: doc.nodes };
  } catch {
    // answered below
  }
  throw new ProxyError(`the Proxy at ${proxyUrl} answered POST /v1/query/cancel with something that is not a cancel answer`, 200, 'bad_answer');
}

/**
 * `POST {proxyUrl}/v1/query` with an HDQuery (wire form; a `start`/`end` window may replace
 * `batch_ids`). Resolves with the result event and its text as received; throws ProxyError.
 */
export async function postQuery(proxyUrl: string, body: Record<string, unknown>, opts: ProxyCallOptions): Promise<{ event: ProxyResultEvent; json: string }> {
  // The active span (the SDK's hd.dispatch) travels as W3C traceparent / tracestate headers.
  const r = await call('POST', proxyUrl, '/v1/query', { ...opts, headers: { ...opts.headers, ...traceHeaders() } }, body);
  if (r.status !== 200) throw errorOf(`query ${String(body.query_id)}`, r.status, r.text);
  return { event: parseResultEvent(r.text), json: r.text };
}
