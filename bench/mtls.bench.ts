/**
 * The cost of mutual TLS on the data plane: HDWP records throughput over one connection (150-byte
 * records in 4 MiB sends, one eob per 16 MiB batch, the server acknowledging without storing), plain
 * TCP beside mutual TLS with DMS-CA certificates (RSA-4096 and RSA-2048 keys); then connection
 * set-up (TCP or TLS handshake plus the HDWP hello exchange). Medians of 5. Both ends in this process
 * on loopback, so the figures are the CPU cost of TLS (AES-GCM with AES-NI) on this machine.
 * Run: `npx tsx bench/mtls.bench.ts [MiB]` (default 128).
 */
import tls from 'node:tls';
import { clientTlsOptions, MtlsIdentity, serverTlsOptions } from '../net/mtls';
import { CertificateAuthority } from '../net/pki/certificateAuthority';
import { generateRsaKey } from '../net/pki/x509';
import { generateBatchIdNumber } from '../engine-rs/batchId';
import { HdwpClient } from '../hdwp/hdwpClient';
import { HdwpServer } from '../hdwp/hdwpServer';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const MIB = Number(process.argv[2] ?? 128);
const RUNS = 5;
const RECORD = 150;
const SEND = Math.floor((4 << 20) / RECORD) * RECORD;
const BATCH_BYTES = 16 << 20;
const CONNECTS = 30;

const records = Math.floor((MIB << 20) / RECORD);
const data = Buffer.alloc(records * RECORD);
for (let i = 0, x = 7; i < data.length; i++) {
  x = (x * 1103515245 + 12345) >>> 0;
  data[i] = x >>> 24;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function identities(dir: string, bits: number): Promise<{ server: MtlsIdentity; client: MtlsIdentity }> {
  const ca = await CertificateAuthority.open({ dir: path.join(dir, `ca${bits}`), keyBits: 4096 });
  const make = async (name: string, role: string): Promise<MtlsIdentity> => {
    const kp = await generateRsaKey(bits);
    const c = ca.issue({ commonName: name, role, publicKeyPem: kp.publicKeyPem, lifetimeMs: 3_600_000 });
    return new MtlsIdentity({ keyPem: kp.privateKeyPem, certPem: c.certPem, caPem: ca.certPem, crlPem: ca.crl([], 1) });
  };
  return { server: await make('sn-1', 'storageNode'), client: await make('scc-1', 'scc') };
}

async function startServer(tlsOpts?: tls.TlsOptions): Promise<{ server: HdwpServer; port: number }> {
  const server = new HdwpServer({
    host: '127.0.0.1',
    port: 0,
    role: 'storageNode',
    creditWindow: 32 << 20,
    ...(tlsOpts && { tls: tlsOpts }),
    onConnection: (conn) => ({ onFrame: (f) => (f.kind === 'eob' ? conn.send(f) : undefined) }),
  });
  const { port } = await server.listen();
  return { server, port };
}

async function throughput(port: number, clientTls?: tls.ConnectionOptions): Promise<number> {
  const c = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'b', recordSize: RECORD, ...(clientTls && { tls: clientTls }) });
  const t = process.hrtime.bigint();
  let batch = 1;
  let inBatch = 0;
  for (let off = 0; off < data.length; off += SEND) {
    const part = data.subarray(off, Math.min(off + SEND, data.length));
    await c.sendRecords(generateBatchIdNumber(batch), part);
    inBatch += part.length / RECORD;
    if (inBatch * RECORD >= BATCH_BYTES || off + SEND >= data.length) {
      await c.sendEob(generateBatchIdNumber(batch), inBatch);
      batch++;
      inBatch = 0;
    }
  }
  const s = Number(process.hrtime.bigint() - t) / 1e9;
  await c.close();
  return s;
}

async function connects(port: number, clientTls?: tls.ConnectionOptions): Promise<number> {
  const t = process.hrtime.bigint();
  for (let i = 0; i < CONNECTS; i++) {
    const c = await HdwpClient.connect({ host: '127.0.0.1', port, role: 'scc', datasetId: 'b', recordSize: RECORD, ...(clientTls && { tls: clientTls }) });
    await c.close();
  }
  return Number(process.hrtime.bigint() - t) / 1e6 / CONNECTS;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-mtls-bench-'));
  try {
    const ids4096 = await identities(dir, 4096);
    const ids2048 = await identities(dir, 2048);
    const cases: { name: string; server?: tls.TlsOptions; client?: tls.ConnectionOptions }[] = [
      { name: 'plain TCP' },
      { name: 'mTLS, RSA-4096 keys', server: serverTlsOptions(ids4096.server), client: clientTlsOptions(ids4096.client, 'sn-1') },
      { name: 'mTLS, RSA-2048 keys', server: serverTlsOptions(ids2048.server), client: clientTlsOptions(ids2048.client, 'sn-1') },
    ];
    console.log(`HDWP over loopback, one connection, ${MIB} MiB of ${RECORD}-byte records (${records} records), medians of ${RUNS}`);
    console.log('| transport | MB/s | M records/s | vs plain | connect + hello, ms |');
    console.log('|---|---|---|---|---|');
    // Runs interleave the transports (plain, TLS, TLS, plain, ...) so load from other work on the
    // machine falls on all of them alike.
    const servers = [];
    for (const c of cases) servers.push(await startServer(c.server));
    for (let i = 0; i < cases.length; i++) await throughput(servers[i].port, cases[i].client); // warm-up
    const secs: number[][] = cases.map(() => []);
    const conn: number[][] = cases.map(() => []);
    for (let r = 0; r < RUNS; r++) {
      for (let i = 0; i < cases.length; i++) {
        secs[i].push(await throughput(servers[i].port, cases[i].client));
        conn[i].push(await connects(servers[i].port, cases[i].client));
      }
    }
    for (const s of servers) await s.server.close();
    const plainMbs = data.length / 1e6 / median(secs[0]);
    cases.forEach((c, i) => {
      const sec = median(secs[i]);
      const mbs = data.length / 1e6 / sec;
      console.log(`| ${c.name} | ${mbs.toFixed(0)} | ${(records / sec / 1e6).toFixed(2)} | ${(mbs / plainMbs).toFixed(2)} | ${median(conn[i]).toFixed(2)} |`);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
