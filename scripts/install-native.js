#!/usr/bin/env node
// The package's install script (package.json "install"): makes sure engine-rs/index.node loads where
// hdstore was installed from its tarball (`npm install ./hdstore-<version>.tgz`, docs/deploy.md).
//
// - In a source checkout (no dist/ yet) it does nothing: `prepare` builds the addon and the TypeScript.
// - The tarball ships the addon built where it was packed (one platform, as `npm pack` left it). If that
//   addon loads here, nothing is built.
// - Otherwise (another OS, CPU or libc) it builds the addon from the engine-rs sources the tarball
//   also ships, with cargo, and puts it at engine-rs/index.node — the same file `neon dist` writes.
// HD_BUILD_NATIVE=1 forces the build from source even when the shipped addon loads.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const engine = path.join(root, 'engine-rs');
const addon = path.join(engine, 'index.node');

/** Why the addon at `file` does not load here, or undefined when it does. */
function loadProblem(file) {
  if (!fs.existsSync(file)) return 'it is not there';
  // In a child, so a crash of a foreign binary cannot take the install down with it.
  const probe = spawnSync(process.execPath, ['-e', `const a = require(${JSON.stringify(file)}); if (typeof a !== 'object' || Object.keys(a).length === 0) process.exit(3);`], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  return (probe.stderr || `exit ${probe.status}`).trim().split('\n').find((l) => l.includes('Error')) ?? `exit ${probe.status}`;
}

/** The cdylib cargo writes for hd-engine-node on this platform. */
function cdylibName() {
  if (process.platform === 'win32') return 'hd_engine_node.dll';
  if (process.platform === 'darwin') return 'libhd_engine_node.dylib';
  return 'libhd_engine_node.so';
}

function buildFromSource(why) {
  const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
  if (cargo.status !== 0) {
    console.error(`hdstore: the prebuilt engine addon does not load on ${process.platform}-${process.arch} (${why}), and building it needs a Rust toolchain: install cargo (e.g. 'apt-get install cargo' or rustup) and a C compiler, then reinstall`);
    process.exit(1);
  }
  const hadTarget = fs.existsSync(path.join(engine, 'target'));
  console.error(`hdstore: building the engine addon from source for ${process.platform}-${process.arch} (${why}); this takes a few minutes`);
  const build = spawnSync('cargo', ['build', '--release', '--locked', '-p', 'hd-engine-node'], { cwd: engine, stdio: 'inherit' });
  if (build.status !== 0) {
    console.error(`hdstore: 'cargo build --release -p hd-engine-node' in ${engine} failed (exit ${build.status})`);
    process.exit(1);
  }
  fs.copyFileSync(path.join(engine, 'target', 'release', cdylibName()), addon);
  // The build tree is hundreds of megabytes and of no use once the addon is in place (one this
  // script did not make, a developer's, stays).
  if (!hadTarget) fs.rmSync(path.join(engine, 'target'), { recursive: true, force: true });
  const after = loadProblem(addon);
  if (after) {
    console.error(`hdstore: the addon built from source does not load either: ${after}`);
    process.exit(1);
  }
}

if (!fs.existsSync(path.join(root, 'dist', 'index.js'))) process.exit(0);
const problem = process.env.HD_BUILD_NATIVE === '1' ? 'HD_BUILD_NATIVE=1' : loadProblem(addon);
if (problem) buildFromSource(problem);
