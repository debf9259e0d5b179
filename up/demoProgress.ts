/**
 * How far the demo ingest of a data directory got, so a first start that was interrupted at any
 * point resumes on the next one.
 *
 * The demo data is deterministic per data directory: its generators take fixed seeds, and the one
 * thing that varies, the end time its timestamps lead up to, is chosen on the first start and
 * kept in `<data-dir>/demo/plan.json`. So every start makes the same records in the same batches
 * (batch ids come from the time windows). Each batch the SCC acknowledges is appended to
 * `<data-dir>/demo/<dataset>.landed` and skipped by the next start; one acknowledged but not yet
 * written down is sent again, which a Storage Node accepts as the batch it already holds (same
 * records, same closing hash). `<data-dir>/demo.json` marks the demo complete.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { IngestSummary } from './demoIngest';

/** Which demo: `default` (flows + chess), `small` (a quick one for tests) or `none`. */
export type DemoSize = 'default' | 'small' | 'none';

/** What the first start chose, kept for the next. */
export interface DemoPlan {
  readonly demo: Exclude<DemoSize, 'none'>;
  /** Unix seconds the demo's timestamps lead up to. */
  readonly endTime: number;
}

/** The demo's state in one data directory. */
export class DemoProgress {
  private readonly dir: string;

  private constructor(
    readonly dataDir: string,
    /** The plan of this data directory, once a demo was started here. */
    readonly plan: DemoPlan | undefined,
    private complete: readonly IngestSummary[],
  ) {
    this.dir = path.join(dataDir, 'demo');
  }

  /**
   * Reads the demo state of `dataDir`. When no demo was started there and `demo` is not `none`,
   * makes the plan (end time `now`) and writes it before any record is sent. A data directory
   * that began with another demo size keeps it (its batches are already there).
   */
  static open(dataDir: string, demo: DemoSize, now = Math.floor(Date.now() / 1000)): DemoProgress {
    const marker = path.join(dataDir, 'demo.json');
    const done = existsSync(marker) ? (JSON.parse(readFileSync(marker, 'utf8')) as IngestSummary[]) : [];
    const planFile = path.join(dataDir, 'demo', 'plan.json');
    let plan: DemoPlan | undefined;
    if (existsSync(planFile)) plan = JSON.parse(readFileSync(planFile, 'utf8')) as DemoPlan;
    else if (demo !== 'none' && done.length === 0) {
      plan = { demo, endTime: now };
      mkdirSync(path.dirname(planFile), { recursive: true });
      writeFileSync(planFile, `${JSON.stringify(plan, null, 2)}\n`);
    }
    return new DemoProgress(dataDir, plan, done);
  }

  /** Datasets complete (from `demo.json`). */
  get done(): readonly IngestSummary[] {
    return this.complete;
  }

  /** Whether `dataset` is complete. */
  isDone(dataset: string): boolean {
    return this.done.some((s) => s.dataset === dataset);
  }

  /** Start times (unix seconds) of the windows of `dataset` whose batches landed already. */
  landed(dataset: string): Set<number> {
    const file = this.landedFile(dataset);
    if (!existsSync(file)) return new Set();
    // A line cut short by a kill does not parse as a number and is left out (that batch is sent again).
    return new Set(readFileSync(file, 'utf8').split('\n').filter((l) => /^\d+$/.test(l)).map(Number));
  }

  /** Writes down that the batch of `dataset`'s window starting at `windowStart` landed. */
  markLanded(dataset: string, windowStart: number): void {
    mkdirSync(this.dir, { recursive: true });
    appendFileSync(this.landedFile(dataset), `${windowStart}\n`);
  }

  /** Marks `summary`'s dataset complete (the next start does not ingest it again). */
  markDone(summary: IngestSummary): void {
    this.complete = [...this.complete.filter((s) => s.dataset !== summary.dataset), summary];
    writeFileSync(path.join(this.dataDir, 'demo.json'), `${JSON.stringify(this.complete, null, 2)}\n`);
  }

  private landedFile(dataset: string): string {
    return path.join(this.dir, `${dataset}.landed`);
  }
}
