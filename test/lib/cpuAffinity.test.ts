import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { threadAffinity } from '../../engine-rs/index';
import { cpusetSetting } from '../../roles/services/nodeHost';
import { applyCpuPinning, CpuPinningError, formatCpuList, parseCpuList, planCpuPinning } from '../../lib/cpuAffinity';

const lists = suite('cpuset lists');
lists('parse and format round-trip; bad lists say what is expected', () => {
  assert.equal(parseCpuList('0,2,4-7'), { ok: true, value: [0, 2, 4, 5, 6, 7] });
  assert.equal(parseCpuList(' 3 , 1-2 ,2'), { ok: true, value: [1, 2, 3] });
  assert.is(formatCpuList([7, 0, 1, 2, 5, 6]), '0-2,5-7');
  assert.is(formatCpuList([4]), '4');
  for (const t of ['', 'a', '1-', '3-1', '0-1024', '1;2']) {
    const r = parseCpuList(t);
    assert.not.ok(r.ok, t);
  }
  assert.match(JSON.stringify(parseCpuList('3-1')), /runs backwards/);
  assert.match(JSON.stringify(parseCpuList('0-1024')), /up to 1023/);
});
lists.run();

const plan = suite('planCpuPinning');
plan('the event loop on the first TRANSPORT_CORES, the workers on the last KV_CORES', () => {
  assert.equal(planCpuPinning({ masterCpuset: [1, 2, 3], transportCores: 1, kvCores: 1 }, [0, 1, 2, 3]), { all: [1, 2, 3], transport: [1], workers: [3] });
  assert.equal(planCpuPinning({ masterCpuset: [0, 1, 2, 3], transportCores: 2, kvCores: 2 }, [0, 1, 2, 3]), { all: [0, 1, 2, 3], transport: [0, 1], workers: [2, 3] });
  // One CPU: both groups share it.
  assert.equal(planCpuPinning({ masterCpuset: [5], transportCores: 1, kvCores: 1 }, [5]), { all: [5], transport: [5], workers: [5] });
});
plan('CPUs the process may not use, and more cores than the set, are refused naming the setting', () => {
  const refused = (f: () => unknown): string => {
    try {
      f();
    } catch (err) {
      assert.instance(err, CpuPinningError);
      return (err as Error).message;
    }
    throw new Error('not refused');
  };
  assert.match(refused(() => planCpuPinning({ masterCpuset: [1, 2, 3], transportCores: 1, kvCores: 1 }, [0, 1])), /MASTER_CPUSET=1-3 names CPUs 2-3, which this process may not use \(it may use 0-1/);
  assert.match(refused(() => planCpuPinning({ masterCpuset: [0], transportCores: 2, kvCores: 1 }, [0, 1])), /TRANSPORT_CORES=2 asks for more cores than MASTER_CPUSET=0 has \(1\)/);
  assert.match(refused(() => planCpuPinning({ masterCpuset: [0, 1], transportCores: 1, kvCores: 3 }, [0, 1])), /KV_CORES=3 asks for more cores/);
});
plan.run();

const live = suite('applyCpuPinning on this process (real sched_getaffinity)');
live('unset MASTER_CPUSET pins nothing; a set beyond the process is refused before anything is pinned', async () => {
  const before = threadAffinity.threadCpus(process.pid);
  const none = await applyCpuPinning({ masterCpuset: undefined, transportCores: 1, kvCores: 1 }, threadAffinity);
  assert.is(none.plan, undefined);
  const h = none.health() as { pinned: boolean; groups: Record<string, { requested: string | null; actual: string[] }> };
  assert.is(h.pinned, false);
  assert.is(h.groups.event_loop.requested, null);
  assert.equal(h.groups.event_loop.actual, [formatCpuList(before)]);
  const beyond = Math.max(...before) + 1;
  try {
    await applyCpuPinning({ masterCpuset: [before[0], beyond], transportCores: 1, kvCores: 1 }, threadAffinity);
    assert.unreachable('a CPU the process may not use was accepted');
  } catch (err) {
    assert.instance(err, CpuPinningError);
    assert.match((err as Error).message, new RegExp(`names CPU ${beyond}, which this process may not use`));
  }
  for (const [tid] of threadAffinity.processThreads()) assert.equal(threadAffinity.threadCpus(tid), before, `thread ${tid} kept its CPUs`);
});
live('the engine refuses CPUs the kernel does not have and threads that do not exist', () => {
  const code = (f: () => unknown): string | undefined => {
    try {
      f();
    } catch (err) {
      return (err as { code?: string }).code;
    }
    return undefined;
  };
  assert.is(code(() => threadAffinity.setThreadCpus(0, [1023])), 'EINVAL');
  assert.is(code(() => threadAffinity.setThreadCpus(0, [1024])), 'ERR_RANGE');
  assert.is(code(() => threadAffinity.threadCpus(2 ** 30)), 'ESRCH');
  assert.is(code(() => threadAffinity.setWorkerCpus([1024])), 'ERR_RANGE');
});
live('a pool-pinning round with a set the engine refuses rejects', async () => {
  const err = await threadAffinity.pinPoolWorkers([1024], 1, 10).then(() => undefined, (e: unknown) => e);
  assert.instance(err, Error);
  assert.match((err as Error).message, /bad CPU set \[1024\]/);
});
live("the Storage Node's master_cpuset setting: empty pins nothing, a bad list says what it expects", () => {
  const s = cpusetSetting('doc');
  const at = { value: '', pos: { line: 1, col: 1 }, substituted: true };
  assert.equal(s.parse(at, { baseDir: '.' }), { ok: true, value: undefined });
  assert.equal(s.parse({ ...at, value: '0,2-3' }, { baseDir: '.' }), { ok: true, value: [0, 2, 3] });
  assert.equal(s.parse({ ...at, value: '3-1' }, { baseDir: '.' }), { ok: false, expected: "a cpuset list such as '1-3' or '0,2,4-7'; '3-1' runs backwards" });
});
live.run();
