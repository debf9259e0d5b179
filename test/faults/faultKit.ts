/**
 * Helpers of the fault trials (test/faults): one real Storage Node process (`hd run
 * pipelines/storage-node.yaml`), fed as its SCC would feed it (HDWP, role scc) and queried as its
 * SCC would query it (a control connection and a result listener), plus the small file systems
 * the disk-fault trials store on (a tmpfs, an ext4 on a loop device). Those need mount(2), so root
 * with CAP_SYS_ADMIN; `mounts()` says whether this machine allows it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BatchID } from '../../engine-rs/index';
import { parseBbnReason } from '../../query/batchNotice';
import type { HdQuery } from '../../query/hdQuery';
import { HdwpClient } from '../../hdwp/hdwpClient';
import { freePort, startHd, waitForPort, type HdProcess } from '../support/hdProcess';
import { BLOCK, closingHash, ControlPeer, DS, R, recordsByBatch, SCHEMA, TestClient, untilOk } from '../nodes/storageNode/queryKit';

export { BLOCK, DS, R };

const HOST = '127.0.0.1';

/** A Storage Node process on its own ports and data directory. */
export interface FaultNode {
  readonly dir: string;
  readonly productionPort: number;
  readonly commandPort: number;
  readonly obsPort: number;
  proc: HdProcess;
  /** Where device d0 keeps the test dataset's segments. */
  readonly datasetDir: string;
  /** Stops the process (SIGTERM) and starts it again on the same ports and data. */
  restart(): Promise<void>;
  /** Stops the process; removes its directory unless `keep`. */
  stop(keep?: boolean): Promise<void>;
}

/**
 * Starts a Storage Node process whose device d0 is `deviceDir` (default: a directory of its own),
 * with the queryKit dataset schema (zone maps on every field) and sha256 chains of {@link BLOCK}.
 */
export async function startFaultNode(opts: { deviceDir?: string; reserveBytes?: number } = {}): Promise<FaultNode> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-faults-'));
  const schemaDir = path.join(dir, 'schemas');
  mkdirSync(schemaDir);
  writeFileSync(path.join(schemaDir, `${DS}.json`), JSON.stringify(SCHEMA));
  const device = opts.deviceDir ?? path.join(dir, 'd0');
  const [productionPort, commandPort, obsPort] = [await freePort(), await freePort(), await freePort()];
  const configFile = path.join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      node_name: 'sn-faults',
      production_ip: HOST,
      production_port: productionPort,
      command_port: commandPort,
      observability_port: obsPort,
      reserve_bytes: opts.reserveBytes ?? 0,
      storage_devices: [{ name: 'd0', address: device, type: 'dir' }],
    }),
  );
  const start = async (): Promise<HdProcess> => {
    const p = startHd(['run', 'pipelines/storage-node.yaml', '--config', configFile], {
      HASH_ALGORITHM: 'sha256',
      HASH_CHAIN_BLOCK_SIZE: String(BLOCK),
      RECORD_SIZE: String(R),
      SCHEMA_DIR: schemaDir,
    });
    await waitForPort(HOST, productionPort, p, 60_000);
    await waitForPort(HOST, commandPort, p, 60_000);
    return p;
  };
  const node: FaultNode = {
    dir,
    productionPort,
    commandPort,
    obsPort,
    proc: await start(),
    datasetDir: path.join(device, DS),
    async restart() {
      await node.proc.stop();
      node.proc = await start();
    },
    async stop(keep = false) {
      await node.proc.stop();
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
  return node;
}

/** What the node answered to one batch's eob: acknowledged, or refused with an error frame. */
export type EobOutcome = { ok: true } | { ok: false; code: number | undefined; message: string };

/** Sends batches as the SCC would (records, then eob with the closing hash) on one connection. */
export async function ingest(node: FaultNode, batches: readonly { id: BatchID; data: Buffer }[]): Promise<EobOutcome[]> {
  const c = await HdwpClient.connect({ host: HOST, port: node.productionPort, role: 'scc', datasetId: DS, recordSize: R });
  const out: EobOutcome[] = [];
  try {
    for (const b of batches) {
      try {
        await c.sendRecords(b.id, b.data);
        await c.sendEob(b.id, b.data.length / R, await closingHash(b.id, b.data));
        out.push({ ok: true });
      } catch (err) {
        out.push({ ok: false, code: (err as { frameCode?: number }).frameCode, message: (err as Error).message });
      }
    }
  } finally {
    await c.close().catch(() => undefined);
  }
  return out;
}

/** One batch's end in a query: its records when it ended with eob, or the bbn code and reason. */
export type BatchAnswer = { kind: 'eob'; records: Buffer } | { kind: 'bbn'; code: number; reason: string };

/** Runs one query on the node's command port, as its SCC would, and collects each batch's answer. */
export async function queryNode(node: FaultNode, client: TestClient, batches: readonly BatchID[], extra: Partial<HdQuery> = {}): Promise<Map<string, BatchAnswer>> {
  const { auth, json, results } = client.query(batches, extra);
  const { scc, ends } = await ControlPeer.ask(node.commandPort, auth, json, batches.length);
  try {
    const eobs = ends.filter((f) => f.kind === 'eob').length;
    await untilOk(() => results.filter((r) => r.kind === 'batch').length >= eobs);
    const got = recordsByBatch(results);
    const out = new Map<string, BatchAnswer>();
    for (const f of ends) {
      if (f.kind === 'bbn') out.set(f.batchId.toHex(), { kind: 'bbn', code: parseBbnReason(f.reason).code, reason: f.reason });
      else if (f.kind === 'eob') out.set(f.batchId.toHex(), { kind: 'eob', records: got.get(f.batchId.toHex()) ?? Buffer.alloc(0) });
    }
    return out;
  } finally {
    scc.close();
  }
}

/** Whether this process may mount file systems (root with CAP_SYS_ADMIN); the reason when not. */
export function mounts(): { ok: true } | { ok: false; why: string } {
  const probe = mkdtempSync(path.join(os.tmpdir(), 'hd-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return { ok: true };
  } catch (err) {
    return { ok: false, why: (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message };
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** A mounted file system of the trials, unmounted (and its loop device detached) by `remove()`. */
export interface Mounted {
  readonly dir: string;
  remove(): void;
}

const quiet = (f: () => void): void => {
  try {
    f();
  } catch {
    /* already gone */
  }
};

/** A tmpfs of `bytes` at a new directory. */
export function mountTmpfs(bytes: number): Mounted {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], { stdio: 'pipe' });
  return {
    dir,
    remove() {
      quiet(() => execFileSync('umount', ['-l', dir], { stdio: 'pipe' }));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An ext4 file system of `fsBytes` on a loop device whose backing file lives on a tmpfs of only
 * `backingBytes`: once `fillBacking()` has used up the tmpfs, ext4 still reports free space and
 * takes writes into the page cache, but writeback to the loop device fails, so the next fsync(2)
 * fails the way it does on a dying disk (the kernel reports the write-back error: EIO or ENOSPC).
 */
export function mountFailingExt4(fsBytes: number, backingBytes: number): Mounted & { fillBacking(): void; freeBacking(): void } {
  const back = mountTmpfs(backingBytes);
  const img = path.join(back.dir, 'disk.img');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-ext4-'));
  let loop = '';
  try {
    execFileSync('truncate', ['-s', String(fsBytes), img]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0', img], { stdio: 'pipe' });
    loop = execFileSync('losetup', ['-f', '--show', img], { stdio: 'pipe' }).toString().trim();
    execFileSync('mount', ['-o', 'errors=continue', loop, dir], { stdio: 'pipe' });
  } catch (err) {
    if (loop) quiet(() => execFileSync('losetup', ['-d', loop], { stdio: 'pipe' }));
    back.remove();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const filler = path.join(back.dir, 'filler');
  return {
    dir,
    fillBacking() {
      // dd stops with ENOSPC once the tmpfs is full: that is the point.
      quiet(() => execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M', `count=${Math.ceil(backingBytes / 2 ** 20) + 1}`], { stdio: 'pipe' }));
    },
    freeBacking() {
      rmSync(filler, { force: true });
    },
    remove() {
      quiet(() => execFileSync('umount', ['-l', dir], { stdio: 'pipe' }));
      quiet(() => execFileSync('losetup', ['-d', loop], { stdio: 'pipe' }));
      rmSync(dir, { recursive: true, force: true });
      back.remove();
    },
  };
}

/** Names of the files in `dir` (none when it does not exist). */
export function filesIn(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}
