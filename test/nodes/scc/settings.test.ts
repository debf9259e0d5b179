import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseCpuset, parseHashQueueBytes, parseSnTargets, readSccSettings, SCC_VARIABLES, SccSettingsError } from '../../../nodes/scc/settings';

const TARGETS = 'sn1:10.0.0.11:6986:6987,sn2:10.0.0.12:6986:6987';
/** Runs readSccSettings and returns the problems it refused with. */
const refused = (env: Record<string, string>): { variable: string; expected: string }[] => {
  try {
    readSccSettings({ SN_TARGETS: TARGETS, ...env });
  } catch (err) {
    assert.instance(err, SccSettingsError);
    return [...(err as SccSettingsError).problems];
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
};

const defaults = suite('readSccSettings: defaults');
defaults('every reference default applies when only SN_TARGETS is set', () => {
  const s = readSccSettings({ SN_TARGETS: TARGETS });
  assert.is(s.productionIp, '0.0.0.0');
  assert.is(s.productionPort, 6987);
  assert.is(s.commandPort, 6986);
  assert.is(s.observabilityPort, 8080);
  assert.is(s.recordSize, 150);
  assert.is(s.hashAlgorithm, 'sha512');
  assert.is(s.maxHashQueueBytes, 64 * 1024 * 1024);
  assert.is(s.batchTimeoutMs, 60000);
  assert.is(s.timeoutAction, 'EOB');
  assert.is(s.hashChainBlockSize, 64);
  assert.is(s.logLevel, 'info');
  assert.is(s.dmsUrl, 'https://dms-core:6986');
  assert.is(s.masterCpuset, undefined, 'unset MASTER_CPUSET pins nothing (docs/scc.md, "CPU pinning")');
  assert.is(s.transportCores, 1);
  assert.is(s.mtuMode, 'standard');
  assert.is(s.platformOptIn, false);
  assert.equal(s.snTargets, [
    { name: 'sn1', host: '10.0.0.11', controlPort: 6986, prodPort: 6987 },
    { name: 'sn2', host: '10.0.0.12', controlPort: 6986, prodPort: 6987 },
  ]);
});
defaults('values are taken as written; an empty variable means its default', () => {
  const s = readSccSettings({ SN_TARGETS: TARGETS, PRODUCTION_IP: '127.0.0.1', PRODUCTION_PORT: '0', HASH_ALGORITHM: 'blake3', TIMEOUT_ACTION: 'bbn', LOG_LEVEL: 'DEBUG', MAX_HASH_QUEUE_BYTES: '', BATCH_TIMEOUT_MS: '0' });
  assert.is(s.productionIp, '127.0.0.1');
  assert.is(s.productionPort, 0);
  assert.is(s.hashAlgorithm, 'blake3');
  assert.is(s.timeoutAction, 'BBN');
  assert.is(s.logLevel, 'debug');
  assert.is(s.maxHashQueueBytes, 64 * 1024 * 1024);
  assert.is(s.batchTimeoutMs, 0);
  const t = readSccSettings({ SN_TARGETS: TARGETS, MASTER_CPUSET: '1-3', MTU_MODE: 'Jumbo' });
  assert.equal(t.masterCpuset, [1, 2, 3]);
  assert.is(t.mtuMode, 'jumbo');
});
defaults('every variable of the reference table is known', () => {
  const names = SCC_VARIABLES.map((v) => v.name);
  for (const n of ['COMMAND_INTERFACE', 'OBSERVABILITY_INTERFACE', 'LOG_LEVEL', 'OTEL_GRPC_URL', 'PRODUCTION_INTERFACE', 'PRODUCTION_IP', 'PRODUCTION_PORT', 'RECORD_SIZE', 'HASH_ALGORITHM', 'MAX_HASH_QUEUE_BYTES', 'BATCH_TIMEOUT_MS', 'TIMEOUT_ACTION', 'MASTER_CPUSET', 'TRANSPORT_CORES', 'KV_CORES', 'SN_TARGETS', 'DMS_URL', 'PLATFORM_BOOTSTRAP_TOKEN', 'K8S_SERVICEACCOUNT_TOKEN', 'PLATFORM_CLIENT_CERT_FILE', 'PLATFORM_CLIENT_KEY_FILE', 'PLATFORM_PKI_WRAP_KEY', 'NODE_NAME', 'COMMAND_PORT', 'OBSERVABILITY_PORT', 'PLATFORM_OPT_IN', 'TRACKER_DSN', 'HASH_CHAIN_BLOCK_SIZE']) {
    assert.ok(names.includes(n), n);
  }
});
defaults.run();

const errors = suite('readSccSettings: a bad value names its variable');
errors('each bad value is refused with its variable and what it expects', () => {
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ PRODUCTION_PORT: 'http' }, 'PRODUCTION_PORT', /port 0\.\.65535/],
    [{ PRODUCTION_PORT: '70000' }, 'PRODUCTION_PORT', /port/],
    [{ COMMAND_PORT: '-1' }, 'COMMAND_PORT', /port/],
    [{ OBSERVABILITY_PORT: '80.5' }, 'OBSERVABILITY_PORT', /port/],
    [{ PRODUCTION_IP: '10.0.0.300' }, 'PRODUCTION_IP', /address/],
    [{ PRODUCTION_INTERFACE: 'dpdk:net_tap0,,' }, 'PRODUCTION_INTERFACE', /is not dpdk:<vdev>/],
    [{ PRODUCTION_INTERFACE: 'nosuch9' }, 'PRODUCTION_INTERFACE', /a kernel network interface of this host \(.*lo.*\) or an IP address.*a PCIe address of a NIC bound to vfio-pci.*dpdk:<vdev>/],
    [{ RECORD_SIZE: '0' }, 'RECORD_SIZE', /1\.\.65535/],
    [{ HASH_ALGORITHM: 'md5' }, 'HASH_ALGORITHM', /sha512, sha256, blake3/],
    [{ MAX_HASH_QUEUE_BYTES: '67108864' }, 'MAX_HASH_QUEUE_BYTES', /plain integer counts MiB/],
    [{ MAX_HASH_QUEUE_BYTES: '64 parsecs' }, 'MAX_HASH_QUEUE_BYTES', /MiB/],
    [{ BATCH_TIMEOUT_MS: 'soon' }, 'BATCH_TIMEOUT_MS', /integer 0\.\./],
    [{ TIMEOUT_ACTION: 'DROP' }, 'TIMEOUT_ACTION', /EOB, BBN/],
    [{ HASH_CHAIN_BLOCK_SIZE: '0' }, 'HASH_CHAIN_BLOCK_SIZE', /integer 1\.\./],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL', /debug, info, warn, error/],
    [{ SN_TARGETS: '' }, 'SN_TARGETS', /at least one/],
    [{ SN_TARGETS: 'sn1:10.0.0.1:6986' }, 'SN_TARGETS', /has 3 fields/],
    [{ SN_TARGETS: 'sn1:nohost:6986:6987' }, 'SN_TARGETS', /not an IPv4 address/],
    [{ SN_TARGETS: 'sn1:10.0.0.1:6986:0' }, 'SN_TARGETS', /ports .* 1\.\.65535/],
    [{ SN_TARGETS: 'sn1:10.0.0.1:6986:6987,sn1:10.0.0.2:6986:6987' }, 'SN_TARGETS', /appears twice/],
    [{ DMS_URL: 'dms-core:6986' }, 'DMS_URL', /URL/],
    [{ OTEL_GRPC_URL: 'ftp://x' }, 'OTEL_GRPC_URL', /URL/],
    [{ MASTER_CPUSET: '3-1' }, 'MASTER_CPUSET', /backwards/],
    [{ TRANSPORT_CORES: '0' }, 'TRANSPORT_CORES', /integer 1\.\./],
    [{ KV_CORES: 'two' }, 'KV_CORES', /integer/],
    [{ MTU_MODE: '9000' }, 'MTU_MODE', /one of standard, jumbo/],
    [{ PLATFORM_OPT_IN: 'yes' }, 'PLATFORM_OPT_IN', /true, false/],
    [{ NODE_NAME: 'my scc' }, 'NODE_NAME', /without spaces/],
    [{ PLATFORM_CLIENT_CERT_FILE: '/etc/hd/cert.pem' }, 'PLATFORM_CLIENT_KEY_FILE', /together/],
  ];
  for (const [env, variable, re] of cases) {
    const ps = refused(env);
    assert.is(ps.length, 1, JSON.stringify(env));
    assert.is(ps[0].variable, variable);
    assert.match(ps[0].expected, re);
  }
});
errors('several bad values are all reported, and the message names each', () => {
  try {
    readSccSettings({ SN_TARGETS: TARGETS, PRODUCTION_PORT: 'x', HASH_ALGORITHM: 'md5' });
    assert.unreachable();
  } catch (err) {
    const msg = (err as Error).message;
    assert.match(msg, /^HASH_ALGORITHM="md5": expected/m);
    assert.match(msg, /^PRODUCTION_PORT="x": expected a port/m);
  }
});
errors.run();

const parsers = suite('settings parsers');
parsers('MAX_HASH_QUEUE_BYTES: plain integer is MiB, units as written', () => {
  assert.equal(parseHashQueueBytes('64'), { ok: true, value: 64 * 1024 ** 2 });
  assert.equal(parseHashQueueBytes('64MiB'), { ok: true, value: 64 * 1024 ** 2 });
  assert.equal(parseHashQueueBytes('2 GiB'), { ok: true, value: 2 * 1024 ** 3 });
  assert.equal(parseHashQueueBytes('100MB'), { ok: true, value: 100e6 });
  assert.equal(parseHashQueueBytes('1048576b'), { ok: true, value: 1024 ** 2 });
  assert.is(parseHashQueueBytes('512KiB').ok, false, 'below 1 MiB');
  assert.is(parseHashQueueBytes('65GiB').ok, false, 'above 64 GiB');
  assert.is(parseHashQueueBytes('-1').ok, false);
});
parsers('SN_TARGETS: spaces around items are allowed', () => {
  const r = parseSnTargets(' a:127.0.0.1:1:2 , b:127.0.0.2:3:4 ');
  assert.equal(r, { ok: true, value: [{ name: 'a', host: '127.0.0.1', controlPort: 1, prodPort: 2 }, { name: 'b', host: '127.0.0.2', controlPort: 3, prodPort: 4 }] });
});
parsers('MASTER_CPUSET lists and ranges', () => {
  assert.equal(parseCpuset('0,2,4-6'), { ok: true, value: [0, 2, 4, 5, 6] });
  assert.is(parseCpuset('1-').ok, false);
  assert.is(parseCpuset('').ok, false);
});
parsers.run();
