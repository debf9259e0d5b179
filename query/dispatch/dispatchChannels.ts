/**
 * gRPC QueryDispatch clients kept open per SCC address, for a caller that sends query after query
 * (the SDK's query client, and through it hd_sql): a channel per query paid a connection, the HTTP/2
 * preface and settings exchange and, toward a registered SCC, a TLS handshake (docs/control-plane.md)
 * on every query. A channel is kept for the credentials it was made with; new credentials (a renewed
 * certificate) get a new channel, and the old one is closed once any call on it has had its deadline.
 */
import { QueryDispatchClient, type QueryDispatchClientOptions } from './dispatchClient';

/** Default time a replaced channel stays open for calls still on it: the client's 30 s deadline and a second. */
const DEFAULT_RETIRE_AFTER_MS = 31_000;

/** Open dispatch clients by SCC address; see the module doc. */
export class DispatchChannels {
  private readonly open = new Map<string, { readonly client: QueryDispatchClient; readonly identity: string }>();
  /** Replaced channels, closed when their timer fires (or at {@link close}). */
  private readonly retiring = new Map<NodeJS.Timeout, QueryDispatchClient>();
  private closed = false;

  /** @param retireAfterMs how long a replaced channel stays open for calls already on it */
  constructor(private readonly retireAfterMs = DEFAULT_RETIRE_AFTER_MS) {}

  /**
   * The client for `address` (`host:port`) made with the credentials `identity` names (a stable
   * key of them, such as the certificate; '' for plain). `options` builds the client's options
   * (credentials, deadline, channel options) when a new channel is needed.
   */
  client(address: string, identity: string, options: () => QueryDispatchClientOptions): QueryDispatchClient {
    if (this.closed) throw new Error('the dispatch channels are closed');
    const cur = this.open.get(address);
    if (cur?.identity === identity) return cur.client;
    if (cur) this.retire(cur.client);
    const client = new QueryDispatchClient(address, options());
    this.open.set(address, { client, identity });
    return client;
  }

  /** Channels open now. */
  get size(): number {
    return this.open.size;
  }

  /** Closes every channel, retiring ones included. */
  close(): void {
    this.closed = true;
    for (const { client } of this.open.values()) client.close();
    this.open.clear();
    for (const [t, client] of this.retiring) {
      clearTimeout(t);
      client.close();
    }
    this.retiring.clear();
  }

  private retire(client: QueryDispatchClient): void {
    const t = setTimeout(() => {
      this.retiring.delete(t);
      client.close();
    }, this.retireAfterMs);
    t.unref();
    this.retiring.set(t, client);
  }
}
