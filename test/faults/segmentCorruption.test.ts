/**
 * Corrupted segments on a real Storage Node process: one byte flipped (XOR with a random non-zero
 * value) in the header, the records, the block index, the zone maps, the batch filter, the batch
 * summary (format 2) or the tail
 * of a stored segment, the file truncated, or another batch's whole segment in its place, while
 * the node runs. Every such batch must come
 * back as a bad batch notice — never as an eob with rows other than the ones stored — in plain,
 * filtered (zone maps in play) and verify_hash queries, and the node's next start must quarantine
 * it. Untouched batches must keep answering correctly. The trial prints `corruptions: N injected,
 * N caught` and its seed (HD_FAULT_SEED replays it; HD_FAULT_CORRUPTIONS sets how many).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mulberry32 } from '../../lib/mulberry32';
import { batchOf, TestClient, untilOk } from '../nodes/storageNode/queryKit';
import { filesIn, ingest, queryNode, R, startFaultNode, type BatchAnswer, type FaultNode } from './faultKit';

const REGIONS = ['header', 'records', 'block index', 'zone maps', 'batch filter', 'batch summary', 'tail', 'truncate', 'misplaced'] as const;
type Region = (typeof REGIONS)[number];

const SEED = Number(process.env.HD_FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CORRUPTIONS = Number(process.env.HD_FAULT_CORRUPTIONS ?? 24);
const CONTROLS = 3;
const RECORDS = 100; // 7 chain blocks of 16 (the last one short)

/** The byte range of `region` in a segment file (docs/segment.md), from the file's own tail. */
function regionOf(s: Buffer, region: Exclude<Region, 'truncate' | 'misplaced'>): [number, number] {
  const h = s.readUInt32LE(24);
  const t = s.length - 128;
  const f = Number(s.readBigUInt64LE(t + 24));
  const z = Number(s.readBigUInt64LE(t + 32));
  const q = Number(s.readBigUInt64LE(t + 40));
  // The batch filter holds 16 bytes per zone field; format 2's batch summary follows it up to the tail.
  const s0 = q + 16 * s.readUInt16LE(20);
  const ranges: Record<typeof region, [number, number]> = {
    header: [0, h],
    records: [h, f],
    'block index': [f, z],
    'zone maps': [z, q],
    'batch filter': [q, s0],
    'batch summary': [s0, t],
    tail: [t, s.length],
  };
  return ranges[region];
}

/** Records of `data` whose int32 `price` (offset 16) is above 0: the filtered query's right answer. */
function pricePositive(data: Buffer): Buffer {
  const out: Buffer[] = [];
  for (let o = 0; o < data.length; o += R) if (data.readInt32LE(o + 16) > 0) out.push(data.subarray(o, o + R));
  return Buffer.concat(out);
}

interface Injected {
  readonly batch: number;
  readonly region: Region;
  readonly detail: string;
}

const trial = suite('faults: corrupted segments on a Storage Node process');
let node: FaultNode;
let client: TestClient;
const batches = Array.from({ length: CORRUPTIONS + CONTROLS }, (_, i) => batchOf(700 + i, RECORDS));
const injected: Injected[] = [];

trial.before(async () => {
  console.log(`segmentCorruption: seed ${SEED} (HD_FAULT_SEED=${SEED} replays it), ${CORRUPTIONS} corruptions`);
  node = await startFaultNode();
  client = await TestClient.start();
});
trial.after(async () => {
  await client?.close();
  await node?.stop();
});

trial('every batch is acknowledged, then one corruption per batch is injected in place', async () => {
  const acks = await ingest(node, batches);
  assert.ok(
    acks.every((a) => a.ok),
    JSON.stringify(acks),
  );
  const rnd = mulberry32(SEED);
  for (let i = 0; i < CORRUPTIONS; i++) {
    const file = path.join(node.datasetDir, `${batches[i].id.toHex()}.hdseg`);
    const s = readFileSync(file);
    const region = REGIONS[i % REGIONS.length];
    if (region === 'truncate') {
      const to = Math.floor(rnd() * s.length);
      writeFileSync(file, s.subarray(0, to));
      injected.push({ batch: i, region, detail: `cut to ${to} of ${s.length} bytes` });
    } else if (region === 'misplaced') {
      // A whole, valid segment of another batch of the dataset where this batch's should be.
      const other = CORRUPTIONS + (i % CONTROLS);
      writeFileSync(file, readFileSync(path.join(node.datasetDir, `${batches[other].id.toHex()}.hdseg`)));
      injected.push({ batch: i, region, detail: `holds batch ${other}'s segment` });
    } else {
      const [a, b] = regionOf(s, region);
      const at = a + Math.floor(rnd() * (b - a));
      const x = 1 + Math.floor(rnd() * 255);
      s[at] ^= x;
      writeFileSync(file, s);
      injected.push({ batch: i, region, detail: `byte ${at} ^= 0x${x.toString(16)}` });
    }
  }
});

/** Checks one query's answers: controls exact; corrupted batches a bbn or exactly the stored rows. */
function judge(answers: Map<string, BatchAnswer>, expected: (data: Buffer) => Buffer, what: string): { caught: Set<number>; wrong: string[] } {
  const caught = new Set<number>();
  const wrong: string[] = [];
  batches.forEach((b, i) => {
    const a = answers.get(b.id.toHex());
    const name = i < CORRUPTIONS ? `batch ${i} (${injected[i].region}: ${injected[i].detail})` : `control batch ${i}`;
    if (!a) wrong.push(`${what}: ${name}: no answer`);
    else if (a.kind === 'bbn') {
      if (i >= CORRUPTIONS) wrong.push(`${what}: ${name}: bbn ${a.reason}`);
      else caught.add(i);
    } else if (!a.records.equals(expected(b.data))) wrong.push(`${what}: ${name}: an eob with ${a.records.length / R} altered or missing records`);
  });
  return { caught, wrong };
}

const tally = { plain: new Set<number>(), filtered: new Set<number>(), verify: new Set<number>(), recovery: new Set<number>() };

trial('queries: a corrupted batch ends with a bad batch notice, never with altered rows', async () => {
  const ids = batches.map((b) => b.id);
  const plain = judge(await queryNode(node, client, ids), (d) => d, 'plain');
  const filtered = judge(await queryNode(node, client, ids, { subQueries: [{ filters: [{ field: 'price', op: 'gt', value: '0' }] }] }), pricePositive, 'price > 0');
  const verify = judge(await queryNode(node, client, ids, { verifyHash: true }), (d) => d, 'verify_hash');
  assert.equal([...plain.wrong, ...filtered.wrong, ...verify.wrong], [], 'no wrong answer');
  tally.plain = plain.caught;
  tally.filtered = filtered.caught;
  tally.verify = verify.caught;
  const missed = injected.filter((x) => !verify.caught.has(x.batch));
  assert.equal(missed, [], 'verify_hash reports every corruption');
});

trial('restart: recovery quarantines every corrupted segment and keeps every untouched one', async () => {
  await node.restart();
  await untilOk(() => /recovery: .* quarantined/.test(node.proc.output()));
  const quarantined = filesIn(path.join(node.datasetDir, 'quarantine'));
  for (const x of injected) if (quarantined.some((n) => n.startsWith(batches[x.batch].id.toHex()))) tally.recovery.add(x.batch);
  assert.equal(
    injected.filter((x) => !tally.recovery.has(x.batch)),
    [],
    'every corrupted segment quarantined',
  );
  assert.match(node.proc.output(), new RegExp(`recovery: ${CONTROLS} complete segments verified.*${CORRUPTIONS} quarantined`));
  // The node no longer holds them: bbn 13 (the SCC tries another replica); the controls still answer.
  const again = judge(await queryNode(node, client, batches.map((b) => b.id), { verifyHash: true }), (d) => d, 'after restart');
  assert.equal(again.wrong, []);
  assert.is(again.caught.size, CORRUPTIONS);
  const caught = injected.filter((x) => tally.verify.has(x.batch) && tally.recovery.has(x.batch)).length;
  const byRegion = REGIONS.map((r) => {
    const of = injected.filter((x) => x.region === r);
    return `${r} ${of.filter((x) => tally.verify.has(x.batch) && tally.recovery.has(x.batch)).length}/${of.length}`;
  }).join(', ');
  console.log(
    `corruptions: ${injected.length} injected, ${caught} caught (${byRegion}); bbn in plain queries ${tally.plain.size}, filtered ${tally.filtered.size}, verify_hash ${tally.verify.size}; quarantined at restart ${tally.recovery.size}; wrong answers 0`,
  );
});

trial.run();
