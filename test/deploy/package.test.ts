/**
 * hdstore as users install it (docs/deploy.md, "Installing the package"): `npm pack` of this tree,
 * `npm install ./hdstore-<version>.tgz` into a fresh project, then, from that project only, the `hd`
 * command, `import { PlatformQueryClient } from 'hdstore'` (ESM and CommonJS), and an SDK ingest and
 * query against a real SCC and Storage Node run by the installed package's own `hd`.
 *
 * The tarball carries the addon `npm ci` built here (engine-rs/index.node) and dist/ compiled afresh
 * from the tree (`npm run build:ts`): the pack runs with --ignore-scripts, so no Rust is compiled again. The build-from-
 * source fallback of scripts/install-native.js is checked for its refusal without cargo only (a real
 * Rust build takes minutes).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, waitForPort } from '../support/hdProcess';

const root = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string; version: string };
const HOST = '127.0.0.1';

const installed = suite('npm pack → npm install into a fresh project');
let work = '';
let app = '';
let hdPkg = '';
const procs: ChildProcess[] = [];

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Runs the installed `hd` (node_modules/.bin/hd) in the background. */
function startInstalledHd(args: string[], env: Record<string, string>): { proc: ChildProcess; output(): string } {
  const proc = spawn(path.join(app, 'node_modules', '.bin', 'hd'), args, { cwd: app, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  procs.push(proc);
  return { proc, output: () => out };
}

async function waitUp(port: number, output: () => string): Promise<void> {
  try {
    await waitForPort(HOST, port, undefined, 30_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${output()}`);
  }
}

installed.before(() => {
  if (!existsSync(path.join(root, 'engine-rs/index.node'))) throw new Error(`engine-rs/index.node is missing: run 'npm ci' (or 'npm run build:native') first — the tarball ships the addon it built`);
  // dist/ compiled from the tree as it is now (a dist/ older than the sources would ship stale code).
  const built = run('npm', ['run', 'build:ts'], root);
  assert.is(built.status, 0, built.out);
  work = mkdtempSync(path.join(os.tmpdir(), 'hd-pack-'));
  const packed = run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], root);
  assert.is(packed.status, 0, packed.out);
  const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
  assert.is(tgz, `${pkg.name}-${pkg.version}.tgz`);
  app = path.join(work, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), `${JSON.stringify({ name: 'hd-user-app', version: '1.0.0', private: true })}\n`);
  const inst = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `../${tgz as string}`], app);
  assert.is(inst.status, 0, inst.out);
  hdPkg = path.join(app, 'node_modules', pkg.name);
});

installed.after(async () => {
  for (const p of procs) {
    if (p.exitCode === null && p.signalCode === null) {
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 15_000);
      await new Promise((r) => p.once('exit', r));
      clearTimeout(t);
    }
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

installed('the tarball holds the built package and the engine sources, not the tests or the build tree', () => {
  for (const f of ['dist/index.js', 'dist/index.d.ts', 'bin/hd.js', 'engine-rs/index.node', 'engine-rs/Cargo.lock', 'engine-rs/core/src/lib.rs', 'engine-rs/node/Cargo.toml', 'pipelines/scc.yaml', 'pipelines/storage-node.yaml', 'up/demo', 'scripts/install-native.js']) {
    assert.ok(existsSync(path.join(hdPkg, f)), `${f} is installed`);
  }
  for (const f of ['test', 'bench', 'engine-rs/target', 'engine-rs/fuzz', 'node_modules/.bin/tsx']) assert.not.ok(existsSync(path.join(hdPkg, f)), `${f} is not shipped`);
});

installed('`hd --help` and `hd --version` through the bin link', () => {
  const help = run(path.join(app, 'node_modules', '.bin', 'hd'), ['--help'], app);
  assert.is(help.status, 0, help.out);
  assert.match(help.out, /Usage: hd <command>/);
  assert.match(help.out, /\bup\b/);
  const version = run(path.join(app, 'node_modules', '.bin', 'hd'), ['--version'], app);
  assert.is(version.status, 0, version.out);
  assert.ok(version.out.includes(pkg.version), version.out);
});

installed('`import { PlatformQueryClient } from "hdstore"` (ESM) and require (CommonJS) resolve the installed package, whose engine addon loads', () => {
  writeFileSync(
    path.join(app, 'load.mjs'),
    `import { PlatformQueryClient, PlatformIngestClient } from '${pkg.name}';\nimport { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\nconst cjs = require('${pkg.name}');\nconst ingest = new PlatformIngestClient();\nconst id = ingest.generateBatchIdString('from-the-installed-package');\nawait ingest.stop();\nconsole.log(JSON.stringify({ q: typeof PlatformQueryClient, same: cjs.PlatformQueryClient === PlatformQueryClient, resolved: require.resolve('${pkg.name}'), id: id.toHex() }));\n`,
  );
  const r = run(process.execPath, ['load.mjs'], app);
  assert.is(r.status, 0, r.out);
  const got = JSON.parse(r.out.trim().split('\n').pop() as string) as { q: string; same: boolean; resolved: string; id: string };
  assert.is(got.q, 'function');
  assert.ok(got.same, 'one module for both loaders');
  assert.is(got.resolved, path.join(hdPkg, 'dist', 'index.js'));
  assert.match(got.id, /^[0-9a-f]{32,}$/, 'a batch id computed by the installed addon');
});

installed('an SDK ingest and query from the fresh project against an SCC and a Storage Node run by the installed `hd`', async () => {
  const [snProd, snCmd, snObs, sccProd, sccCmd, sccObs, sccGrpc] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const snDir = path.join(work, 'sn1');
  mkdirSync(snDir);
  const snConfig = path.join(snDir, 'config.json');
  writeFileSync(snConfig, JSON.stringify({ node_name: 'sn1', production_ip: HOST, production_port: snProd, command_port: snCmd, observability_port: snObs, reserve_bytes: 0, storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }] }));
  const schemaDir = path.join(work, 'schemas');
  mkdirSync(schemaDir);
  const schemaFile = path.join(hdPkg, 'pipelines', 'examples', 'data', 'flows.schema.json');
  copyFileSync(schemaFile, path.join(schemaDir, 'flows.json'));
  const sn = startInstalledHd(['run', path.join(hdPkg, 'pipelines', 'storage-node.yaml'), '--config', snConfig, '--quiet'], { RECORD_SIZE: '64', SCHEMA_DIR: schemaDir });
  await waitUp(snProd, sn.output);
  const scc = startInstalledHd(['run', path.join(hdPkg, 'pipelines', 'scc.yaml'), '--quiet'], {
    PRODUCTION_IP: HOST,
    PRODUCTION_PORT: String(sccProd),
    COMMAND_PORT: String(sccCmd),
    OBSERVABILITY_PORT: String(sccObs),
    QUERY_GRPC_PORT: String(sccGrpc),
    RECORD_SIZE: '64',
    NODE_NAME: 'scc-pack',
    SN_TARGETS: `sn1:${HOST}:${snCmd}:${snProd}`,
  });
  await waitUp(sccProd, scc.output);
  await waitUp(sccGrpc, scc.output);
  // The user's program: only the installed package, nothing of this tree.
  writeFileSync(
    path.join(app, 'query.mjs'),
    `import { readFileSync } from 'node:fs';
import { PlatformIngestClient, PlatformQueryClient } from '${pkg.name}';
const schema = readFileSync(${JSON.stringify(schemaFile)}, 'utf8');
const T0 = 1_700_000_000 - (1_700_000_000 % 60);
const ingest = new PlatformIngestClient();
ingest.loadDatasetSchema(schema);
ingest.setSccTargets(['${HOST}:${sccProd}']);
const id = ingest.generateBatchIdTime(T0, T0 + 60);
const recs = Array.from({ length: 1000 }, (_, i) => ingest.convertRecordToBinary({ ts: String(T0 + (i % 60)), src_ip: '10.0.0.1', dst_ip: '10.0.0.2', src_port: '1000', dst_port: String([443, 80, 53, 22][i % 4]), proto: 'tcp', packets: '1', bytes: String(i), duration_ms: '5' }));
if (!(await ingest.streamInsert(id, recs)) || !(await ingest.sendEob(id))) throw new Error(ingest.lastError);
await ingest.stop();
const q = new PlatformQueryClient('', '${HOST}', '', { listenPort: 0, log: () => undefined });
await q.ready();
q.loadDatasetSchema(schema);
q.setSccTargets([{ host: '${HOST}', port: ${sccProd}, grpcPort: ${sccGrpc} }]);
const t = await q.executeDataset({ start_time: T0, end_time: T0 + 59, sub_queries: [{ filters: [{ field: 'dst_port', op: 'eq', value: '443' }] }] });
const bytes = t.toArray().reduce((s, r) => s + Number(r.bytes), 0);
console.log(JSON.stringify({ rows: t.numRows, bytes, errors: q.hadErrors(), found: q.getFoundBatchIds().map((b) => b.toHex()), id: id.toHex() }));
await q.stop();
`,
  );
  const r = run(process.execPath, ['query.mjs'], app);
  assert.is(r.status, 0, `${r.out}\nSCC:\n${scc.output()}\nSN:\n${sn.output()}`);
  const got = JSON.parse(r.out.trim().split('\n').pop() as string) as { rows: number; bytes: number; errors: boolean; found: string[]; id: string };
  let bytes = 0;
  for (let i = 0; i < 1000; i += 4) bytes += i;
  assert.is(got.rows, 250, 'every record with dst_port 443');
  assert.is(got.bytes, bytes);
  assert.not.ok(got.errors);
  assert.equal(got.found, [got.id]);
});

installed('install-native.js: the shipped addon loads here, so nothing is built; one that does not load and no cargo is a clear refusal', () => {
  const ok = run(process.execPath, [path.join(hdPkg, 'scripts', 'install-native.js')], hdPkg);
  assert.is(ok.status, 0, ok.out);
  assert.is(ok.out, '', 'nothing built, nothing said');
  // A copy of the installed package whose addon is not a loadable library, on a PATH without cargo.
  const foreign = path.join(work, 'foreign');
  cpSync(hdPkg, foreign, { recursive: true, dereference: true });
  writeFileSync(path.join(foreign, 'engine-rs', 'index.node'), 'not an ELF file');
  const bin = path.join(work, 'bin-without-cargo');
  mkdirSync(bin);
  const nodeLink = path.join(bin, 'node');
  symlinkSync(process.execPath, nodeLink);
  const refused = run(nodeLink, [path.join(foreign, 'scripts', 'install-native.js')], foreign, { ...process.env, PATH: bin });
  assert.is(refused.status, 1, refused.out);
  assert.match(refused.out, /prebuilt engine addon does not load on linux-/);
  assert.match(refused.out, /needs a Rust toolchain: install cargo/);
});

installed.run();
