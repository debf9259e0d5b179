#!/usr/bin/env node
// The image's HEALTHCHECK: exits 0 when the node's /health (OBSERVABILITY_PORT, default 8080) answers
// `ok` or `degraded` on loopback or on any local IPv4 address (a node may bind its observability port
// to one interface only), 1 otherwise.
'use strict';
const os = require('node:os');

const port = Number(process.env.OBSERVABILITY_PORT || 8080);
const hosts = ['127.0.0.1', ...Object.values(os.networkInterfaces()).flat().filter((a) => a && a.family === 'IPv4' && !a.internal).map((a) => a.address)];

async function healthy(host) {
  try {
    const r = await fetch(`http://${host}:${port}/health`, { signal: AbortSignal.timeout(2000) });
    const status = (await r.json()).status;
    return status === 'ok' || status === 'degraded';
  } catch {
    return false;
  }
}

(async () => {
  for (const h of hosts) if (await healthy(h)) process.exit(0);
  process.exit(1);
})();
