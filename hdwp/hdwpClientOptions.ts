/**
 * The options of an HdwpClient (hdwp/hdwpClient.ts), its counters, and the one place its sockets come
 * from, so TLS is a matter of options.
 */
import type net from 'node:net';
import type tls from 'node:tls';
import type { TlsSessionCache } from '../lib/tlsSessions';
import { dial, dialTls } from '../transport/processNic';
import type { HdwpRole, QueryAuth } from '../engine-rs/hdwpFrame';

/** Default largest records frame the client writes (header included): 1 MiB. */
export const DEFAULT_CLIENT_FRAME_BYTES = 1024 * 1024;
/** Default time to connect and complete the hello exchange. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Options of {@link HdwpClient.connect}. */
export interface HdwpClientOptions {
  readonly host: string;
  readonly port: number;
  /** This side's role in hello: 'ingestClient', 'ingester', or 'scc' when replicating. */
  readonly role: HdwpRole;
  /** Dataset id (the schema id) the stream carries. */
  readonly datasetId: string;
  /** Bytes per record, 1..65535; every records frame uses it. */
  readonly recordSize: number;
  /** Time to connect and exchange hello; default {@link DEFAULT_CONNECT_TIMEOUT_MS}. */
  readonly connectTimeoutMs?: number;
  /** Largest records frame written, header included; default {@link DEFAULT_CLIENT_FRAME_BYTES} (capped by the server's window). */
  readonly maxFrameBytes?: number;
  /** Largest frame payload accepted from the server; default 16 MiB. */
  readonly maxPayload?: number;
  /** TLS connect options; when given the stream runs over TLS. */
  readonly tls?: tls.ConnectionOptions;
  /** With `tls`: resume sessions remembered here (lib/tlsSessions.ts) for connections opened again and again to one listener. */
  readonly tlsSessions?: TlsSessionCache;
  /** A query result stream (Storage Node → client listener): every frame sent carries this query block. */
  readonly auth?: QueryAuth;
  /**
   * Whether the receiver acknowledges eob / bbn by echoing them (default true, as on ingest). With
   * false (result streams), `sendEob` / `sendBbn` resolve once the frame is written.
   */
  readonly acks?: boolean;
}

/** Counters of what the client has done so far. */
export interface HdwpClientStats {
  /** Records frame bytes written (each frame's full length, the unit of credit). */
  readonly recordsBytesSent: number;
  /** Records frames written. */
  readonly recordsFramesSent: number;
  /** Credit granted by the server in total. */
  readonly creditGranted: number;
}

/**
 * The one place sockets come from, so TLS is a matter of options. A destination in the subnet of
 * this process's user-space NIC is reached through it (transport/processNic.ts).
 */
export function openSocket(o: HdwpClientOptions): net.Socket {
  if (!o.tls) return dial(o.host, o.port);
  const options = { ...o.tls, host: o.host, port: o.port };
  const sessions = o.tlsSessions;
  return sessions ? dialTls(options, (x) => sessions.connect(x)) : dialTls(options);
}
