/**
 * Kept-alive Proxy connections (sdk/proxyAgents.ts, sdk/proxyClient.ts): calls to one Proxy with one
 * identity share a connection instead of a new one (and a TLS handshake) each; other material gets
 * its own; a kept connection the Proxy closed as it was reused is retried once on a new one.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closeProxyAgents, MAX_AGENTS, proxyAgent, proxyAgentCount } from '../../sdk/proxyAgents';
import { fetchDatasets } from '../../sdk/proxyClient';

/** A stand-in Proxy answering /v1/datasets; counts connections; `dropSecond`: destroys a connection's second request unanswered. */
async function standIn(dropSecond = false): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const perSocket = new WeakMap<Socket, number>();
  const server = http.createServer((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    if (dropSecond && n === 2) return void req.socket.destroy();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ datasets: [{ id: 'flows' }] }));
  });
  server.on('connection', () => void connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const opts = { tls: {}, headers: {} };
const s = suite('Proxy connections');
s.after.each(() => closeProxyAgents());

s('calls to one Proxy reuse one kept connection', async () => {
  const p = await standIn();
  for (let i = 0; i < 5; i++) assert.equal(await fetchDatasets(p.url, opts), [{ id: 'flows' }]);
  assert.is(p.connections(), 1);
  closeProxyAgents();
  await p.close();
});

s('a kept connection dropped as it is reused: the call goes once more on a new connection and answers', async () => {
  const p = await standIn(true);
  assert.equal(await fetchDatasets(p.url, opts), [{ id: 'flows' }]);
  assert.equal(await fetchDatasets(p.url, opts), [{ id: 'flows' }]);
  assert.is(p.connections(), 2, 'the dropped one and the fresh one');
  closeProxyAgents();
  await p.close();
});

s('other TLS material or another origin is another agent; at most MAX_AGENTS are kept', () => {
  const a = proxyAgent(true, 'https://p:6986', ['ca', 'cert1', 'key1', undefined]);
  assert.is(proxyAgent(true, 'https://p:6986', ['ca', 'cert1', 'key1', undefined]), a);
  assert.is.not(proxyAgent(true, 'https://p:6986', ['ca', 'cert2', 'key2', undefined]), a, 'a renewed certificate');
  assert.is.not(proxyAgent(true, 'https://q:6986', ['ca', 'cert1', 'key1', undefined]), a);
  assert.is.not(proxyAgent(true, 'https://p:6986', ['ca', 'cert1', 'key1', undefined], '10.0.0.2'), a, 'another local address');
  for (let i = 0; i < MAX_AGENTS * 2; i++) proxyAgent(false, `http://h${i}:1`, []);
  assert.is(proxyAgentCount(), MAX_AGENTS);
  assert.is.not(proxyAgent(true, 'https://p:6986', ['ca', 'cert1', 'key1', undefined]), a, 'the oldest went first');
});

s.run();
