/**
 * A Storage Node's link to a peer replica's observability port, for cold-boot synchronisation
 * (docs/storage-node.md, "Cold-boot synchronisation"): list what the peer holds (`GET /v1/batches`)
 * and download one whole segment (`GET /v1/segment`). Mutual TLS with the node's DMS identity when
 * it has one (the peer must present a `storageNode` certificate of the same CA), plain HTTP
 * otherwise — as the SCC ↔ Storage Node links. Every call is bounded by a timeout.
 */
import { createWriteStream } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';
import type { ReplicaAddress } from '../../control/api';
import { clientTlsOptions, type MtlsIdentity } from '../../net/mtls';

/** One peer replica: its node name and observability address. */
export interface SyncPeer {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

/** The role a peer's certificate must carry. */
export const SYNC_PEER_ROLE = 'storageNode';

/**
 * Parses `name:host:port,...` (the `sync_peers` setting, SYNC_PEERS): each peer's node name and
 * observability address. Throws a message naming the bad entry.
 */
export function parseSyncPeers(text: string): SyncPeer[] {
  if (text.trim() === '') return [];
  const seen = new Set<string>();
  return text.split(',').map((entry) => {
    const parts = entry.trim().split(':');
    if (parts.length !== 3) throw new Error(`sync peer '${entry}' must be node_name:host:observability_port (${parts.length} fields)`);
    const [name, host, portText] = parts as [string, string, string];
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) throw new Error(`sync peer '${entry}': '${name}' is not a node name`);
    if (host === '') throw new Error(`sync peer '${entry}': the host is empty`);
    const port = Number(portText);
    if (!/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) throw new Error(`sync peer '${entry}': port must be 1..65535, got '${portText}'`);
    if (seen.has(name)) throw new Error(`sync peer '${name}' is named twice`);
    seen.add(name);
    return { name, host, port };
  });
}

/**
 * The sync peers of node `self` from its replica set on the DMS (the registration answer's and
 * `GET /v1/nodes/{name}/config`'s `replicas`): every other Storage Node of its cluster that
 * registered an observability address, at that address.
 */
export function syncPeersOf(replicas: readonly ReplicaAddress[], self: string): SyncPeer[] {
  return replicas.flatMap((r) => (r.name !== self && r.observability ? [{ name: r.name, host: r.observability.host, port: r.observability.port }] : []));
}

/** A peer answered with something other than 200 (its status and error text). */
export class PeerAnswerError extends Error {
  override readonly name = 'PeerAnswerError';
  /** @param status the HTTP status */
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Calls on one peer. */
export class PeerLink {
  /** @param peer where it is; @param identity this node's mTLS identity (absent: plain HTTP); @param timeoutMs per call */
  constructor(
    readonly peer: SyncPeer,
    private readonly identity: MtlsIdentity | undefined,
    private readonly timeoutMs = 30_000,
  ) {}

  /** `GET path` answered as JSON; a non-200 answer throws {@link PeerAnswerError}. */
  async json(path: string): Promise<unknown> {
    const res = await this.get(path);
    const body = await bodyOf(res);
    if (res.statusCode !== 200) throw this.answerError(res.statusCode ?? 0, body);
    return body;
  }

  /** `GET path` written to `file`; resolves with the bytes written; a short body (cut transfer) throws. */
  async download(path: string, file: string): Promise<number> {
    const res = await this.get(path);
    if (res.statusCode !== 200) {
      throw this.answerError(res.statusCode ?? 0, await bodyOf(res));
    }
    const expected = Number(res.headers['content-length']);
    let got = 0;
    res.on('data', (d: Buffer) => (got += d.length));
    await pipeline(res, createWriteStream(file, { flags: 'wx', mode: 0o644 }));
    if (!Number.isFinite(expected) || got !== expected) throw new Error(`${this.describe(path)}: the transfer was cut (${got} of ${String(res.headers['content-length'])} bytes)`);
    return got;
  }

  /** `http(s)://host:port` of the peer, for messages. */
  describe(path = ''): string {
    return `${this.identity ? 'https' : 'http'}://${this.peer.host}:${this.peer.port}${path} (${this.peer.name})`;
  }

  private answerError(status: number, body: unknown): PeerAnswerError {
    const why = typeof body === 'object' && body !== null && 'error' in body ? String((body as { error: unknown }).error) : String(body).slice(0, 200);
    return new PeerAnswerError(status, `${this.describe()} answered ${status}: ${why}`);
  }

  private get(path: string): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const common = { host: this.peer.host, port: this.peer.port, path, method: 'GET', agent: false as const, timeout: this.timeoutMs };
      const req = this.identity ? https.request({ ...common, ...clientTlsOptions(this.identity, this.peer.name, [SYNC_PEER_ROLE]) }, resolve) : http.request(common, resolve);
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (err) => reject(new Error(`${this.describe(path)}: ${err.message}`)));
      req.end();
    });
  }
}

/** A whole answer body: its JSON, or its text when it is not JSON (kept for the message). */
async function bodyOf(res: AsyncIterable<unknown>): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const d of res) parts.push(d as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
