/**
 * The SCC's own result stream to a client (docs/query.md, "What the SCC does", step 8): batches the
 * SCC gave up on (no replica left to try, a query timeout, a node refusing the query) never reach
 * the client from a Storage Node, so the SCC opens a stream to the return address — hello role 3
 * with the query block — and sends one bbn per such batch, its reason opening with the code. The
 * client's listener then hears about every batch exactly once.
 */
import type tls from 'node:tls';
import { TlsSessionCache } from '../../lib/tlsSessions';
import { BatchID } from '../../engine-rs/batchId';
import { encodeFrame } from '../../engine-rs/hdwp';
import { FrameDecoder } from '../../engine-rs/hdwpDecoder';
import { HDWP_VERSION, type Frame, type QueryAuth } from '../../engine-rs/hdwpFrame';
import { bbnReason } from '../../query/batchNotice';
import type { ReturnAddress } from '../../query/hdQuery';
import { dial, dialTls } from '../../transport/processNic';

/** One batch the SCC reports as failed. */
export interface BatchNotice {
  /** 128 hex digits. */
  readonly batchId: string;
  readonly code: number;
  readonly detail: string;
}

/** TLS sessions of the SCC's notice streams, resumed per client listener (lib/tlsSessions.ts). */
const noticeSessions = new TlsSessionCache();

/** Options of {@link sendBatchNotices}. */
export interface NoticeTarget {
  readonly returnAddress: ReturnAddress;
  readonly auth: QueryAuth;
  readonly dataset: string;
  readonly recordSize: number;
  /** Give up on the stream after this long; default 5 s. */
  readonly timeoutMs?: number;
  /** The SCC's TLS client options, for a return address that asks for mutual TLS (`return_address.tls`). */
  readonly tls?: tls.ConnectionOptions;
}

/**
 * Sends the notices on one stream and closes it. Resolves with undefined once the listener took
 * them (its hello and credit came back and it closed after our end), or with why it did not.
 */
export function sendBatchNotices(target: NoticeTarget, notices: readonly BatchNotice[]): Promise<string | undefined> {
  if (notices.length === 0) return Promise.resolve(undefined);
  const { auth } = target;
  const frames: Buffer[] = [encodeFrame({ kind: 'hello', version: HDWP_VERSION, role: 'scc', datasetId: target.dataset, recordSize: target.recordSize, auth })];
  for (const n of notices) {
    frames.push(encodeFrame({ kind: 'bbn', batchId: BatchID.fromHex(n.batchId), reason: bbnReason(n.code, n.detail), auth }));
  }
  const { host, port, tls: wantsTls } = target.returnAddress;
  if (wantsTls && !target.tls) return Promise.resolve('the client asked for a mutual-TLS result stream (return_address.tls), and this SCC has no certificate: register it with the DMS (DMS_URL)');
  return new Promise((resolve) => {
    const socket = wantsTls && target.tls ? dialTls({ ...target.tls, host, port }, (o) => noticeSessions.connect(o)) : dial(host, port);
    const decoder = new FrameDecoder();
    let accepted = false;
    let refusal: string | undefined;
    const timer = setTimeout(() => {
      refusal ??= `no answer from the listener within ${target.timeoutMs ?? 5000} ms`;
      socket.destroy();
    }, target.timeoutMs ?? 5000);
    socket.on(wantsTls ? 'secureConnect' : 'connect', () => socket.end(Buffer.concat(frames)));
    socket.on('data', (chunk: Buffer) => {
      let got: Frame[] = [];
      try {
        got = decoder.push(chunk);
      } catch {
        refusal ??= 'malformed answer from the listener';
      }
      for (const f of got) {
        if (f.kind === 'credit') accepted = true;
        if (f.kind === 'error') refusal ??= `refused: error ${f.code}: ${f.message}`;
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (refusal ??= `connect ${err.code ?? err.message}`));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(refusal ?? (accepted ? undefined : 'the listener closed without accepting the stream'));
    });
  });
}
