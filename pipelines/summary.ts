/** The counter table `hd run` prints at the end of a run. */
import type { CounterSnapshot } from '../stream/stageCounters';
import type { Pipeline } from './load';

/** One row per stage: id, type, unit, received, sent, dropped, held (when not 0), errors, controls. */
export function formatCounters(pipeline: Pipeline, counters: ReadonlyMap<string, CounterSnapshot>): string {
  const head = ['stage', 'type', 'unit', 'received', 'sent', 'dropped', 'held', 'errors', 'eob/bbn'];
  const rows: string[][] = [];
  for (const [id, s] of pipeline.stages) {
    const c = counters.get(id);
    if (!c) continue;
    const n = (x: number): string => x.toLocaleString('en-US');
    rows.push([id, s.type.name, c.unit, n(c.received), n(c.sent), n(c.dropped), n(c.held), n(c.errors), n(c.controls)]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  // Text columns align left, numbers right, so the counters line up for reading down.
  const fmt = (r: string[]): string => r.map((v, i) => (i < 3 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ').trimEnd();
  return `${[fmt(head), ...rows.map(fmt)].join('\n')}\n`;
}
