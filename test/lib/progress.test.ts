import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { formatBytes, formatDuration, Progress } from '../../lib/progress';

const sink = (isTTY: boolean) => {
  const s = { text: '', isTTY, columns: 100, write: (x: string) => (s.text += x) };
  return s;
};

const fmt = suite('progress formatting');
fmt('bytes and durations', () => {
  assert.is(formatBytes(512), '512 B');
  assert.is(formatBytes(1536), '1.5 KiB');
  assert.is(formatBytes(3 * 1024 ** 3), '3.0 GiB');
  assert.is(formatDuration(65), '1:05');
  assert.is(formatDuration(3725), '1:02:05');
});
fmt.run();

const p = suite('Progress');
p('terminal: a bar with percent, bytes, records, rate and ETA, redrawn in place', () => {
  let t = 0;
  const s = sink(true);
  const pr = new Progress({ stream: s, label: 'demo', now: () => t });
  pr.addTotal(4096);
  pr.addBytes(1024);
  pr.addRecords(10);
  t = 1000;
  pr.tick();
  assert.ok(s.text.startsWith('\r\x1b[2K'));
  assert.match(s.text, /demo  \[#+-+\]  25%  1\.0 KiB of 4\.0 KiB  10 records  1\.0 KiB\/s  ETA 0:03/);
  pr.addBytes(3072);
  pr.stop();
  assert.match(s.text, /100%.*elapsed 0:01\n$/);
});
p('not a terminal: plain summary lines at the line interval, no escape codes', () => {
  let t = 0;
  const s = sink(false);
  const pr = new Progress({ stream: s, label: 'demo', now: () => t, lineMs: 5000 });
  pr.addBytes(100);
  t = 1000;
  pr.tick();
  assert.is(s.text, '', 'nothing before the interval');
  t = 6000;
  pr.tick();
  assert.match(s.text, /^demo  100 B  0 records/);
  pr.stop();
  assert.is(s.text.split('\n').length, 3);
  assert.not.match(s.text, /\x1b/);
});
p('unknown total: no bar and no ETA', () => {
  const s = sink(true);
  const pr = new Progress({ stream: s, label: 'x', now: () => 0 });
  pr.addBytes(10);
  assert.not.match(pr.line(true), /\[|ETA/);
});
p.run();
