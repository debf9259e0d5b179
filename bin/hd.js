#!/usr/bin/env node
// The `hd` command. Runs the compiled CLI from dist/ (built by `npm install`).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
// Native tasks (scans, hashing, decoding) run on libuv's pool: size it to the cores this process is
// given (at least libuv's default of 4) before anything uses it, unless the environment says otherwise.
if (!process.env.UV_THREADPOOL_SIZE) {
  process.env.UV_THREADPOOL_SIZE = String(Math.min(1024, Math.max(4, require('node:os').availableParallelism())));
}
const compiled = path.join(__dirname, '..', 'dist', 'bin', 'cli.js');
if (!fs.existsSync(compiled)) {
  console.error(`hd: ${compiled} is missing; run 'npm install' (or 'npm run build') in ${path.join(__dirname, '..')} first`);
  process.exit(1);
}
require(compiled).main(process.argv.slice(2)).then(
  (code) => process.exit(code ?? 0),
  (err) => {
    console.error(`hd: ${err && err.message ? err.message : err}`);
    process.exit(1);
  },
);
