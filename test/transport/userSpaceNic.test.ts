/**
 * A user-space NIC (DPDK's net_tap virtual device: a kernel tap interface on the other side of
 * DPDK) carrying TCP, TLS and HDWP to and from the kernel's own sockets. Needs root, /dev/net/tun
 * and a build with DPDK; without them the suite says SKIPPED and why.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { HdwpServer } from '../../hdwp/hdwpServer';
import { setProcessNic } from '../../transport/processNic';
import { parseSubnet, type Subnet } from '../../transport/productionInterface';
import { UserSpaceNic, userSpaceNicUnavailable } from '../../transport/userSpaceNic';
import type { UserNicSocket } from '../../transport/userNicSocket';
import { batch, recordsOf } from '../sources/hdwpKit';

const TAP = 'hdnic0';
const KERNEL_IP = '198.18.60.1';
const NIC_IP = '198.18.60.2';
const key = fs.readFileSync(path.join(__dirname, '../sources/fixtures/tls-test.key'));
const cert = fs.readFileSync(path.join(__dirname, '../sources/fixtures/tls-test.crt'));
// Mutual TLS with one self-signed certificate as the CA and both sides' certificate; the
// certificate names 127.0.0.1, so the host name check is left out.
const serverTls: tls.TlsOptions = { key, cert, ca: cert, requestCert: true, rejectUnauthorized: true };
const clientTls: tls.ConnectionOptions = { key, cert, ca: cert, checkServerIdentity: () => undefined };

const subnet = parseSubnet('198.18.60.0/24') as Subnet;

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' });
}

let nic: UserSpaceNic | undefined;
const skipped: string | undefined = userSpaceNicUnavailable({ tap: true });

const t = suite('user-space NIC (DPDK net_tap)');

t.before(async () => {
  if (skipped) return;
  nic = await UserSpaceNic.open({ device: 'net_tap0', pci: [], vdevs: [`net_tap0,iface=${TAP}`], cores: [], ip: NIC_IP, subnet, ipMtu: 1500 });
  ip('addr', 'add', `${KERNEL_IP}/24`, 'dev', TAP);
  ip('link', 'set', TAP, 'up');
});

t.after(() => {
  nic?.close();
  setProcessNic(undefined);
});

/** Runs `body` unless the suite is skipped (said once per test, with the reason). */
function live(name: string, body: (n: UserSpaceNic) => Promise<void>): void {
  t(name, async () => {
    if (skipped || !nic) {
      console.log(`SKIPPED ${name}: ${skipped ?? 'no NIC'}`);
      return;
    }
    await body(nic);
  });
}

function collect(s: net.Socket | UserNicSocket): Promise<Buffer> {
  const parts: Buffer[] = [];
  s.on('data', (b: Buffer) => parts.push(b));
  return new Promise((resolve, reject) => {
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('error', reject);
  });
}

live('the kernel connects to the NIC: bytes both ways, in order, and an orderly close', async (n) => {
  const accepted = new Promise<UserNicSocket>((resolve) => {
    const l = n.listen(7100, (s) => {
      l.close();
      resolve(s);
    });
  });
  const data = recordsOf(150, 30_000, 3); // 4.5 MB: many windows' worth
  const k = net.connect({ host: NIC_IP, port: 7100 });
  const s = await accepted;
  assert.is(s.remoteAddress, KERNEL_IP);
  const atKernel = collect(k);
  k.write(data);
  const parts: Buffer[] = [];
  let got = 0;
  await new Promise<void>((resolve) =>
    s.on('data', (b: Buffer) => {
      parts.push(b);
      got += b.length;
      if (got >= data.length) resolve();
    }),
  );
  assert.ok(Buffer.concat(parts).equals(data), 'the kernel stream reached the NIC whole');
  // The NIC answers and closes; the kernel reads the answer, then the end, and closes its side.
  s.end(Buffer.from('answer'));
  assert.is((await atKernel).toString(), 'answer');
  await new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())));
});

live('many kernel connections at once: each is accepted and echoed whole', async (n) => {
  const l = n.listen(7101, (s) => s.pipe(s));
  try {
    const one = async (i: number): Promise<void> => {
      const data = recordsOf(100, 1000, i);
      const k = net.connect({ host: NIC_IP, port: 7101 });
      const echoed = collect(k);
      k.end(data);
      assert.ok((await echoed).equals(data), `connection ${i} echoed whole`);
    };
    await Promise.all(Array.from({ length: 40 }, (_, i) => one(i)));
    assert.ok(n.counts.accepted >= 41);
  } finally {
    l.close();
  }
});

live('the NIC connects to the kernel; a closed port is refused', async (n) => {
  const server = net.createServer((c) => c.pipe(c));
  await new Promise<void>((r) => server.listen(0, KERNEL_IP, () => r()));
  const port = (server.address() as net.AddressInfo).port;
  const s = n.connect(KERNEL_IP, port);
  await new Promise<void>((r, j) => {
    s.once('connect', () => r());
    s.once('error', j);
  });
  const echoed = collect(s);
  const data = recordsOf(100, 20_000, 5);
  s.end(data);
  assert.ok((await echoed).equals(data), 'the echo came back whole');
  server.close();

  const refused = n.connect(KERNEL_IP, port);
  const err = await new Promise<NodeJS.ErrnoException>((r) => refused.once('error', r));
  assert.is(err.code, 'ECONNREFUSED');
  assert.match(err.message, /refused or unanswered/);
  assert.throws(() => n.connect('192.0.2.1', 80), /outside 198\.18\.60\.2's data-plane subnet/);
});

live('an HDWP server on the NIC address takes mutual-TLS streams from the kernel', async (n) => {
  setProcessNic(n);
  try {
    const got: Buffer[] = [];
    let conns = 0;
    const server = new HdwpServer({
      host: NIC_IP,
      port: 6987,
      role: 'storageNode',
      tls: serverTls,
      onConnection: (conn) => {
        conns++;
        return {
          onFrame: (f) => {
            if (f.kind === 'records') got.push(Buffer.from(f.payload));
            if (f.kind === 'eob') return conn.send(f);
            return undefined;
          },
        };
      },
    });
    assert.equal(await server.listen(), { host: NIC_IP, port: 6987 });
    const anyPort = new HdwpServer({ host: NIC_IP, port: 0, role: 'storageNode', onConnection: () => ({ onFrame: () => undefined }) });
    await anyPort.listen().then(
      () => assert.unreachable('port 0 on the NIC address'),
      (e: Error) => assert.match(e.message, /user-space NIC's address 198\.18\.60\.2 needs a port/),
    );
    // The client is the kernel's: this process's NIC would take a connection to its own subnet.
    setProcessNic(undefined);
    const client = await HdwpClient.connect({ host: NIC_IP, port: 6987, role: 'scc', datasetId: 'flows', recordSize: 150, tls: clientTls });
    const records = recordsOf(150, 20_000, 7);
    await client.sendRecords(batch(1), records);
    assert.is((await client.sendEob(batch(1), 20_000)).recordCount, 20_000);
    assert.ok(Buffer.concat(got).equals(records));
    await client.close();
    // A client without a certificate of the CA is refused in the handshake.
    const err = await HdwpClient.connect({ host: NIC_IP, port: 6987, role: 'scc', datasetId: 'flows', recordSize: 150, tls: { ca: cert, checkServerIdentity: () => undefined } }).catch((e: unknown) => e as Error);
    assert.instance(err, Error);
    assert.is(conns, 1, 'the refused client never reached HDWP');
    await server.close();
    assert.equal(n.health().listening, [], 'closing the server stops listening on the NIC');
  } finally {
    setProcessNic(undefined);
  }
});

live('HDWP clients reach a kernel server in the subnet through the NIC, over mutual TLS', async (n) => {
  const got: Buffer[] = [];
  const server = new HdwpServer({
    host: KERNEL_IP,
    port: 0,
    role: 'storageNode',
    tls: serverTls,
    onConnection: (conn) => ({
      onFrame: (f) => {
        if (f.kind === 'records') got.push(Buffer.from(f.payload));
        if (f.kind === 'eob') return conn.send(f);
        return undefined;
      },
    }),
  });
  const { port } = await server.listen();
  setProcessNic(n);
  try {
    const before = n.counts.connected;
    const client = await HdwpClient.connect({ host: KERNEL_IP, port, role: 'scc', datasetId: 'flows', recordSize: 150, tls: clientTls });
    assert.is(n.counts.connected, before + 1, 'the connection went through the NIC');
    const records = recordsOf(150, 20_000, 9);
    await client.sendRecords(batch(2), records);
    assert.is((await client.sendEob(batch(2), 20_000)).recordCount, 20_000);
    assert.ok(Buffer.concat(got).equals(records));
    await client.close();
  } finally {
    setProcessNic(undefined);
    await server.close();
  }
});

t.run();
