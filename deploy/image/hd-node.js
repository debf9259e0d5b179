#!/usr/bin/env node
// The container's entrypoint: `hd-node <role>` runs one HD role (`hd run pipelines/<role>.yaml`) from
// the reference's container variables (docs/deploy.md, "Container variables"):
//
//   PLATFORM_NODE_NAME             the node's name (NODE_NAME; a Storage Node's config.json node_name)
//   PLATFORM_DMS_URL               the DMS (DMS_URL)
//   PLATFORM_BOOTSTRAP_TOKEN       the node's single-use registration token (read by the node itself); or
//                                  HD_BOOTSTRAP_TOKEN_DIR/<node name>, a Secret mounted as files
//   PLATFORM_CA_CERT_PEM           the DMS-CA bundle, PEM text or a file (read by the node itself)
//   PLATFORM_CONTROL_PLANE_SUBNET  CIDR: the local address in it carries the command port (COMMAND_INTERFACE)
//   PLATFORM_DATA_PLANE_SUBNET     CIDR: the local address in it carries the production port (PRODUCTION_IP,
//                                  a Storage Node's production_ip; hd_sql reads it itself for its return address)
//   MASTER_CPUSET                  CPUs every thread of the SCC or Storage Node is pinned to (docs/scc.md, "CPU pinning")
//
// A variable the operator set outright (NODE_NAME, DMS_URL, COMMAND_INTERFACE, PRODUCTION_IP, ...) wins.
// A Storage Node without a config.json (CONFIG_FILE, default /etc/hd/config.json) gets one written
// under HD_DATA_DIR from these variables (storage device: a directory on the data volume).
// `hd-node --print-env <role>` prints the environment the role would get and exits (tests, debugging).
// HD_NODE_SOURCES=1 runs the TypeScript sources through tsx instead of dist/ (a development tree:
// the multi-host test); the image has no sources and never sets it.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROLES = { dms: 'dms', proxy: 'proxy', scc: 'scc', 'storage-node': 'storage-node', sql: 'sql', ingester: 'ingester' };
const root = process.env.HD_HOME || path.resolve(__dirname, '..', '..');

/** The local IPv4 address inside `cidr`, or undefined; throws on a malformed CIDR, naming `variable`. */
function addressIn(cidr, variable) {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr.trim());
  if (!m || !net.isIPv4(m[1]) || Number(m[2]) > 32) throw new Error(`${variable} must be an IPv4 CIDR such as 10.150.0.0/24, got "${cidr}"`);
  const block = new net.BlockList();
  block.addSubnet(m[1], Number(m[2]), 'ipv4');
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && block.check(a.address, 'ipv4')) return a.address;
  }
  return undefined;
}

/** The environment `role` runs with: the container variables mapped onto the role's own. */
function roleEnv(role, env) {
  const out = { ...env };
  const set = (name, value) => {
    if (value !== undefined && value !== '' && (out[name] === undefined || out[name] === '')) out[name] = value;
  };
  set('NODE_NAME', env.PLATFORM_NODE_NAME);
  set('DMS_URL', env.PLATFORM_DMS_URL);
  // Per-node tokens from one Secret mounted as files, one per node name (a StatefulSet's pods share its env).
  if (env.HD_BOOTSTRAP_TOKEN_DIR && out.NODE_NAME && !out.PLATFORM_BOOTSTRAP_TOKEN) {
    const file = path.join(env.HD_BOOTSTRAP_TOKEN_DIR, out.NODE_NAME);
    if (fs.existsSync(file)) set('PLATFORM_BOOTSTRAP_TOKEN', fs.readFileSync(file, 'utf8').trim());
  }
  const cp = env.PLATFORM_CONTROL_PLANE_SUBNET ? addressIn(env.PLATFORM_CONTROL_PLANE_SUBNET, 'PLATFORM_CONTROL_PLANE_SUBNET') : undefined;
  const dp = env.PLATFORM_DATA_PLANE_SUBNET ? addressIn(env.PLATFORM_DATA_PLANE_SUBNET, 'PLATFORM_DATA_PLANE_SUBNET') : undefined;
  if (env.PLATFORM_CONTROL_PLANE_SUBNET && !cp) throw new Error(`no local IPv4 address in PLATFORM_CONTROL_PLANE_SUBNET ${env.PLATFORM_CONTROL_PLANE_SUBNET}`);
  if (env.PLATFORM_DATA_PLANE_SUBNET && !dp && (role === 'scc' || role === 'storage-node')) throw new Error(`no local IPv4 address in PLATFORM_DATA_PLANE_SUBNET ${env.PLATFORM_DATA_PLANE_SUBNET}`);
  if (role === 'scc' || role === 'dms' || role === 'proxy') set('COMMAND_INTERFACE', cp);
  if (role === 'scc') {
    set('PRODUCTION_IP', dp);
    // Peers reach the SCC at its data-plane address; its certificate names it.
    set('ADVERTISE_HOST', dp);
    // Registered, the replica set comes from the DMS: SN_TARGETS (required by scc.yaml) is left empty.
    if (out.DMS_URL && out.SN_TARGETS === undefined) out.SN_TARGETS = '';
  }
  if (role === 'dms') set('DMS_SERVER_NAMES', [out.NODE_NAME || 'dms-core', cp, env.HD_DMS_EXTRA_NAMES].filter(Boolean).join(','));
  if (role === 'storage-node' && !out.CONFIG_FILE) out.CONFIG_FILE = storageNodeConfig(out, dp);
  const data = env.HD_DATA_DIR || '/var/lib/hd';
  if (role === 'dms') set('DMS_DATA_DIR', path.join(data, 'dms'));
  if (role === 'scc' || role === 'proxy') set('STATE_DIR', path.join(data, 'identity'));
  return out;
}

/** A Storage Node's config.json: /etc/hd/config.json when mounted, else one written from the variables. */
function storageNodeConfig(env, dataPlaneAddress) {
  const mounted = '/etc/hd/config.json';
  if (fs.existsSync(mounted)) return mounted;
  const name = env.NODE_NAME;
  if (!name) throw new Error('a Storage Node needs PLATFORM_NODE_NAME (or NODE_NAME, or a config.json at /etc/hd/config.json)');
  const data = env.HD_DATA_DIR || '/var/lib/hd';
  const devices = (env.HD_STORAGE_DEVICES || path.join(data, 'd0')).split(',').filter(Boolean);
  for (const d of devices) fs.mkdirSync(d, { recursive: true });
  const config = {
    node_name: name,
    production_ip: env.PRODUCTION_IP || dataPlaneAddress || '0.0.0.0',
    production_port: Number(env.PRODUCTION_PORT || 6987),
    command_port: Number(env.COMMAND_PORT || 6986),
    observability_ip: env.OBSERVABILITY_INTERFACE || '0.0.0.0',
    observability_port: Number(env.OBSERVABILITY_PORT || 8080),
    filter_device_selector: 'cpu',
    storage_devices: devices.map((address, i) => ({ name: `d${i}`, address, type: 'dir' })),
  };
  const file = path.join(data, 'config.json');
  fs.mkdirSync(data, { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

function main(argv) {
  const printOnly = argv[0] === '--print-env';
  const role = printOnly ? argv[1] : argv[0];
  if (!role || !(role in ROLES)) {
    process.stderr.write(`usage: hd-node [--print-env] <${Object.keys(ROLES).join('|')}>\n`);
    return process.exit(2);
  }
  let env;
  try {
    env = roleEnv(role, process.env);
  } catch (err) {
    process.stderr.write(`hd-node ${role}: ${err.message}\n`);
    return process.exit(2);
  }
  if (printOnly) {
    const keys = Object.keys(env).filter((k) => env[k] !== process.env[k]).sort();
    process.stdout.write(`${JSON.stringify(Object.fromEntries(keys.map((k) => [k, env[k]])))}\n`);
    return undefined;
  }
  const hd = ['run', path.join(root, 'pipelines', `${ROLES[role]}.yaml`), ...(role === 'storage-node' ? ['--config', env.CONFIG_FILE] : [])];
  const args =
    env.HD_NODE_SOURCES === '1'
      ? ['-r', 'tsx/cjs', '-e', "require('./bin/cli').main(process.argv.slice(1)).then((c) => process.exit(c ?? 0), (e) => { console.error(e); process.exit(1); })", ...hd]
      : [path.join(root, 'bin', 'hd.js'), ...hd];
  const child = spawn(process.execPath, args, { env, stdio: 'inherit', cwd: root });
  // PID 1 in a container: pass the stop signals on and leave with the child's status.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
  return undefined;
}

main(process.argv.slice(2));
