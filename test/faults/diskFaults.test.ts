/**
 * Disk faults under a real Storage Node process, on real file systems mounted for the trial:
 *
 * - **full disk**: the node's only device is a 2 MiB tmpfs. Batches are sent until the node
 *   refuses one; every refusal must be an error frame naming the cause (no space / full), no
 *   refused batch may leave a file behind, and every batch acknowledged before must read back
 *   whole (verify_hash) — also after a restart.
 * - **fsync failure**: the device is an ext4 file system on a loop device whose backing file sits
 *   on a small tmpfs. Once that tmpfs is filled, ext4 still takes writes into the page cache but
 *   writeback fails, so the segment writer's fsync(2) fails as on a dying disk. The node must
 *   refuse those batches (never acknowledge them), keep what it acknowledged before, and take
 *   batches again once the backing store has room.
 *
 * Mounting needs root with CAP_SYS_ADMIN and a free loop device; without them the trial says so
 * loudly and passes nothing off as tested.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { batchOf, TestClient, untilOk } from '../nodes/storageNode/queryKit';
import { filesIn, ingest, mountFailingExt4, mounts, mountTmpfs, queryNode, startFaultNode, type EobOutcome, type FaultNode, type Mounted } from './faultKit';

const can = mounts();

/** Checks that every batch of `acked` reads back whole with verify_hash. */
async function allReadBack(node: FaultNode, client: TestClient, acked: readonly { id: ReturnType<typeof batchOf>['id']; data: Buffer }[]): Promise<void> {
  const answers = await queryNode(
    node,
    client,
    acked.map((b) => b.id),
    { verifyHash: true },
  );
  for (const b of acked) {
    const a = answers.get(b.id.toHex());
    assert.ok(a?.kind === 'eob' && a.records.equals(b.data), `acknowledged batch ${b.id.toHex().slice(0, 16)}… reads back whole: ${JSON.stringify(a?.kind === 'bbn' ? a.reason : a?.kind)}`);
  }
}

const full = suite('faults: a full disk under a Storage Node process');
let fs1: Mounted | undefined;
let node1: FaultNode | undefined;
let client: TestClient | undefined;
full.after(async () => {
  await client?.close();
  await node1?.stop();
  fs1?.remove();
});

if (!can.ok) {
  full(`SKIPPED: mounting a test file system is not possible here (${can.why}); the disk-fault trials did not run`, () => {
    console.warn(`diskFaults: SKIPPED, cannot mount: ${can.why}`);
  });
} else {
  full('batches are refused with a clear error once the disk is full; nothing acknowledged is lost', async () => {
    fs1 = mountTmpfs(2 * 2 ** 20);
    node1 = await startFaultNode({ deviceDir: fs1.dir });
    client = await TestClient.start();
    const acked: ReturnType<typeof batchOf>[] = [];
    const refused: { n: number; outcome: EobOutcome }[] = [];
    // ~45 kB a segment: the disk holds a few dozen; send until three in a row were refused.
    for (let n = 0; n < 200 && (refused.length < 3 || refused.length < n - acked.length); n++) {
      const b = batchOf(900 + n, 1000);
      const [o] = await ingest(node1, [b]);
      if (o.ok) {
        assert.is(refused.length, 0, `batch ${n} acknowledged after a refusal: the disk had room again?`);
        acked.push(b);
      } else refused.push({ n, outcome: o });
      if (refused.length >= 3) break;
    }
    assert.ok(acked.length > 10, `${acked.length} batches fit before the disk was full`);
    assert.is(refused.length, 3);
    for (const r of refused) {
      assert.ok(!r.outcome.ok);
      if (!r.outcome.ok) {
        assert.ok(r.outcome.code === 6 || r.outcome.code === 7, `error code ${r.outcome.code}`);
        assert.match(r.outcome.message, /ENOSPC|no space left|full/i);
      }
    }
    const dir = node1.datasetDir;
    assert.equal(
      filesIn(dir).filter((f) => f.endsWith('.partial')),
      [],
      'no partial segment left behind',
    );
    assert.is(filesIn(dir).filter((f) => f.endsWith('.hdseg')).length, acked.length, 'one segment per acknowledged batch, none for a refused one');
    await allReadBack(node1, client, acked);
    await node1.restart();
    await untilOk(() => /recovery: /.test(node1?.proc.output() ?? ''));
    assert.match(node1.proc.output(), new RegExp(`recovery: ${acked.length} complete segments verified`));
    await allReadBack(node1, client, acked);
    console.log(`diskFaults: full disk: ${acked.length} batches acknowledged, then refused with: ${refused[0].outcome.ok ? '' : `error ${refused[0].outcome.code}: ${refused[0].outcome.message}`}`);
  });
}
full.run();

const sync = suite('faults: fsync failing under a Storage Node process (ext4 on a loop device whose backing store is full)');
let fs2: (Mounted & { fillBacking(): void; freeBacking(): void }) | undefined;
let node2: FaultNode | undefined;
let client2: TestClient | undefined;
sync.after(async () => {
  await client2?.close();
  await node2?.stop();
  fs2?.remove();
});

let loopWhy = '';
if (can.ok) {
  try {
    fs2 = mountFailingExt4(64 * 2 ** 20, 12 * 2 ** 20);
  } catch (err) {
    loopWhy = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
  }
}
if (!fs2) {
  sync(`SKIPPED: no loop-mounted ext4 here (${can.ok ? loopWhy : can.why}); the fsync-failure trial did not run`, () => {
    console.warn(`diskFaults: fsync trial SKIPPED: ${can.ok ? loopWhy : can.why}`);
  });
} else {
  const mounted = fs2;
  sync('a failing fsync refuses the batch; what was acknowledged stays; batches are taken again once the disk has room', async () => {
    node2 = await startFaultNode({ deviceDir: path.join(mounted.dir, 'd0') });
    client2 = await TestClient.start();
    const before = Array.from({ length: 4 }, (_, i) => batchOf(950 + i, 500));
    assert.ok((await ingest(node2, before)).every((o) => o.ok));
    mounted.fillBacking();
    const during = Array.from({ length: 3 }, (_, i) => batchOf(960 + i, 2000));
    const outcomes = await ingest(node2, during);
    for (const o of outcomes) {
      assert.not.ok(o.ok, 'a batch whose fsync failed is never acknowledged');
      if (!o.ok) {
        assert.is(o.code, 7);
        assert.match(o.message, /could not be committed|failed/);
        assert.match(o.message, /EIO|ENOSPC|i\/o error|no space/i);
      }
    }
    const dir = node2.datasetDir;
    for (const b of during) assert.not.ok(existsSync(path.join(dir, `${b.id.toHex()}.hdseg`)), 'no segment of a refused batch');
    assert.equal(
      filesIn(dir).filter((f) => f.endsWith('.partial')),
      [],
    );
    await allReadBack(node2, client2, before);
    mounted.freeBacking();
    const after = [batchOf(970, 500)];
    assert.ok((await ingest(node2, after)).every((o) => o.ok), 'taken again once the disk has room');
    await allReadBack(node2, client2, [...before, ...after]);
    const first = outcomes[0];
    console.log(`diskFaults: fsync failure: ${outcomes.length} batches refused with: ${first.ok ? '' : `error ${first.code}: ${first.message}`}`);
  });
}
sync.run();
