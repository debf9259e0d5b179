#!/usr/bin/env node
/**
 * Runs one uvu test file (TypeScript, through tsx) and exits once its suites are done, with uvu's
 * exit code. A file that leaves a socket or timer open would otherwise keep the process alive; here it
 * is named on stderr (so it gets fixed) instead of stalling the whole run (scripts/test.sh).
 */
const path = require('node:path');
require('tsx/cjs');

const file = path.resolve(process.argv[2] || '');
globalThis.UVU_DEFER = 1;
const uvu = require('uvu');
globalThis.UVU_QUEUE.push([path.relative(process.cwd(), file)]);
globalThis.UVU_INDEX = 0;
require(file);
uvu.exec(false).then(
  () => {
    // A short grace for teardown that finishes on its own, then exit whatever is still open.
    setTimeout(() => {
      const open = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'Timeout');
      if (open.length > 0) process.stderr.write(`uvu-file: ${path.relative(process.cwd(), file)} left open: ${[...new Set(open)].join(', ')}\n`);
      process.exit(process.exitCode ?? 0);
    }, 500).unref();
  },
  (err) => {
    process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
