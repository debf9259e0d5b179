import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { gpuStats } from '../../../engine-rs/index';
import { Observability } from '../../../lib/observability';
import { parseStorageNodeConfig } from '../../../nodes/storageNode/config';
import { chooseFilterDevice, filterDeviceLine, showFilterDevice } from '../../../roles/stages/filterDevice';

const config = (selector: string) =>
  parseStorageNodeConfig({ node_name: 'sn1', production_port: 7000, filter_device_selector: selector, storage_devices: [{ name: 'd0', address: '/tmp/hd-fd', type: 'dir' }] });

const choose = suite('filter_device_selector: what filters run on');

choose('cpu and host filter on the cpu kernel with nothing to say', async () => {
  for (const s of ['cpu', 'host']) {
    const d = await chooseFilterDevice(config(s), () => Promise.reject(new Error('never asked')));
    assert.equal(d, { selector: s, runsOn: 'cpu' });
    assert.is(filterDeviceLine('sn1', d), undefined);
  }
});

choose('gpu turns the host GPU on, or says why the cpu kernel filters', async () => {
  const d = await chooseFilterDevice(config('gpu'));
  assert.is(d.selector, 'gpu');
  if (d.runsOn === 'gpu') {
    assert.ok(gpuStats().enabled && gpuStats().device === d.detail);
    assert.match(filterDeviceLine('sn1', d) ?? '', /^storage node 'sn1': filter_device_selector 'gpu': scan steps of 16 MiB or more filter on .+; audits and smaller steps on the cpu kernel$/);
  } else {
    assert.match(d.detail ?? '', /no CUDA driver|no NVRTC|finds no GPU/);
    assert.is(gpuStats().enabled, false);
    assert.match(filterDeviceLine('sn1', d) ?? '', /^storage node 'sn1': filter_device_selector 'gpu': .+; query filters run on the cpu kernel$/);
  }
});

choose('a GPU that fails to open leaves the cpu kernel, with the reason', async () => {
  const d = await chooseFilterDevice(config('gpu'), () => Promise.reject(Object.assign(new Error('CUDA: CUDA_ERROR_NO_DEVICE'), { code: 'ERR_GPU_UNAVAILABLE' })));
  assert.equal(d, { selector: 'gpu', runsOn: 'cpu', detail: 'CUDA: CUDA_ERROR_NO_DEVICE' });
  assert.is(filterDeviceLine('sn1', d), "storage node 'sn1': filter_device_selector 'gpu': CUDA: CUDA_ERROR_NO_DEVICE; query filters run on the cpu kernel");
});

choose('/health shows the choice and the counters; /metrics the hd_sn_gpu_* series', async () => {
  const obs = new Observability({ role: 'storageNode', nodeName: 'sn1', host: '127.0.0.1', port: 0 });
  let device: { selector: 'gpu'; runsOn: 'cpu'; detail: string } | undefined;
  showFilterDevice(obs, () => device);
  const before = (await obs.health()).filterDevice as Record<string, unknown>;
  assert.is(before.selector, 'pending', 'before the GPU answered');
  device = { selector: 'gpu', runsOn: 'cpu', detail: 'no CUDA driver (libcuda.so) on this host' };
  const part = (await obs.health()).filterDevice as Record<string, unknown>;
  assert.is(part.selector, 'gpu');
  assert.is(part.detail, device.detail);
  for (const k of ['enabled', 'device', 'bytesFiltered', 'steps', 'cpuFallbacks', 'errors', 'lastError']) assert.ok(k in part, k);
  const text = await obs.registry.metrics();
  const s = gpuStats();
  assert.match(text, new RegExp(`^hd_sn_gpu_enabled ${s.enabled ? 1 : 0}$`, 'm'));
  assert.match(text, new RegExp(`^hd_sn_gpu_bytes_filtered_total ${s.bytesFiltered}$`, 'm'));
  for (const m of ['hd_sn_gpu_steps_total', 'hd_sn_gpu_cpu_fallbacks_total', 'hd_sn_gpu_errors_total']) assert.match(text, new RegExp(`^${m} \\d+$`, 'm'));
  // Registering twice (two scan stages in one process) keeps one set of series.
  showFilterDevice(obs, () => device);
  assert.is((await obs.registry.metrics()).match(/^hd_sn_gpu_enabled /gm)?.length, 1);
});

choose.run();
