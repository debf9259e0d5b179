/**
 * Writes the sample network-flow NDJSON used by `pipelines/examples/ndjson-to-hdwp.yaml`:
 * deterministic (a fixed-seed generator), time-ordered with a little jitter, spanning ten minutes
 * so a 60-second time index interval gives ten batches.
 *
 *   npx tsx pipelines/examples/data/generate.ts [lines] > pipelines/examples/data/flows.ndjson
 */
import { mulberry32 } from '../../../lib/mulberry32';

const START = 1_700_000_040; // a minute boundary, so the first batch is whole
const SPAN = 600;
const PROTOS = ['tcp', 'tcp', 'tcp', 'udp', 'udp', 'icmp'];
const PORTS = [22, 53, 80, 123, 443, 3306, 5432, 6987, 8080];

function main(): void {
  const lines = Number(process.argv[2] ?? 3000);
  const r = mulberry32(20261122);
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  const ip = (net: string): string => `${net}.${int(0, 255)}.${int(1, 254)}`;
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    // Time advances evenly; jitter of up to 2 s keeps neighbouring windows slightly interleaved.
    const ts = START + Math.min(SPAN - 1, Math.max(0, Math.floor((i * SPAN) / lines) + int(-2, 2)));
    const proto = PROTOS[int(0, PROTOS.length - 1)];
    const packets = int(1, 2000);
    out.push(
      JSON.stringify({
        ts,
        src_ip: ip('10.150'),
        dst_ip: ip('192.168'),
        src_port: proto === 'icmp' ? 0 : int(1024, 65535),
        dst_port: proto === 'icmp' ? 0 : PORTS[int(0, PORTS.length - 1)],
        proto,
        packets,
        bytes: packets * int(40, 1500),
        duration_ms: int(0, 120_000),
      }),
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

main();
