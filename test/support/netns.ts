/**
 * Runs a test file inside its own network namespace (`unshare --net`, as root or with
 * `--map-root-user`): loopback up with multicast on and 224.0.0.0/4 routed to it, and optionally
 * induced loss on the NORM port — `tc netem` where the kernel has it, else an nftables rule
 * dropping that share of UDP datagrams at random. The file re-executes itself there; the outer run
 * has one test that asserts the inner run passed.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** Set in the re-executed run. */
export const IN_NETNS = process.env.HD_TEST_NETNS === '1';

/** The loss mechanism the namespace got ('netem' or 'nft'), in the re-executed run. */
export const NETNS_LOSS = process.env.HD_TEST_NETNS_LOSS ?? '';

/**
 * Runs `file` (a uvu test file) under `scripts/uvu-file.js` in a fresh network namespace; returns
 * its exit status and output. `lossPercent` of the UDP datagrams to `udpPort` are dropped.
 */
export function runInNetns(file: string, opts: { lossPercent: number; udpPort: number; timeoutMs: number }): { status: number | null; output: string } {
  const root = path.resolve(__dirname, '..', '..');
  const loss = opts.lossPercent;
  const setup = [
    'set -e',
    'ip link set lo up',
    'ip link set lo multicast on',
    'ip route add 224.0.0.0/4 dev lo',
    'LOSS=none',
    `if [ ${loss} -gt 0 ]; then`,
    `  if tc qdisc add dev lo root netem loss ${loss}% 2>/dev/null; then LOSS=netem;`,
    `  elif nft add table inet hdloss && nft add chain inet hdloss in '{ type filter hook input priority 0; }' && nft add rule inet hdloss in udp dport ${opts.udpPort} numgen random mod 100 '<' ${loss} drop; then LOSS=nft;`,
    "  else echo 'netns: neither tc netem nor nft can induce loss here (install iproute2 / nftables)' >&2; exit 3; fi",
    'fi',
    'export HD_TEST_NETNS=1 HD_TEST_NETNS_LOSS=$LOSS',
    'exec "$0" scripts/uvu-file.js "$1"',
  ].join('\n');
  const args = process.getuid?.() === 0 ? ['--net'] : ['--net', '--map-root-user'];
  const r = spawnSync('unshare', [...args, 'sh', '-c', setup, process.execPath, file], { cwd: root, encoding: 'utf8', timeout: opts.timeoutMs, env: process.env });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`;
  return { status: r.status, output };
}
