/**
 * The data `hd up` loads once the platform answers: the demo datasets (resumed where an earlier,
 * interrupted start left them: up/demoProgress.ts) and the user's `--ingest` file, through the
 * normal ingest path with a progress bar. It runs while the platform already serves queries,
 * which see each batch as it lands.
 */
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Progress, type ProgressStream } from '../lib/progress';
import { chessDataset, flowsDataset, type DemoDataset } from './demoData';
import { ingestNdjson, type IngestSummary } from './demoIngest';
import { DemoProgress, type DemoSize } from './demoProgress';

/**
 * A test hook: with this set to a file path, the demo ingest holds after each batch while that
 * file exists, so a test can interrupt `hd up` at a known point of its first start.
 */
export const HOLD_ENV = 'HD_UP_TEST_HOLD_INGEST';

/** What to load. */
export interface LoadPlanOptions {
  readonly dataDir: string;
  /** The demo asked for (a data directory keeps the size its first start chose). */
  readonly demo: DemoSize;
  /** The user's NDJSON file and its schema file (ingested at every start that names them). */
  readonly ingest?: { readonly file: string; readonly schema: string };
}

/** Where to load it, and how to report. */
export interface LoadRunOptions {
  readonly scc: { readonly host: string; readonly port: number };
  /** hd up's messages. */
  readonly log: (line: string) => void;
  /** Where the progress bars go. */
  readonly progressStream: ProgressStream;
  /** Stops the load between batches. */
  readonly signal: AbortSignal;
}

/** One dataset to load. */
export interface LoadItem {
  readonly name: string;
  /** Records it will hold, where known up front (undefined for a file, or chess before its games are played). */
  readonly rows: number | undefined;
  /** Whether it is a demo dataset (resumable), not the user's file. */
  readonly demo: boolean;
}

/** The demo's datasets of size `demo`, their timestamps leading up to the plan's end time. */
export function demoDatasets(demo: DemoSize): DemoDataset[] {
  if (demo === 'none') return [];
  if (demo === 'small') return [flowsDataset(20_000, 3600), chessDataset(10, 2, 3600)];
  return [flowsDataset(2_000_000), chessDataset(150, 20)];
}

/** What is loaded in this data directory already, and what a start still has to load. */
export class DataLoad {
  private readonly progress: DemoProgress;

  /** Reads (or, on a first start with a demo, makes) the data directory's demo plan. */
  constructor(private readonly opts: LoadPlanOptions) {
    this.progress = DemoProgress.open(opts.dataDir, opts.demo);
  }

  /** Datasets complete from earlier starts. */
  get done(): readonly IngestSummary[] {
    return this.progress.done;
  }

  /** The demo datasets this data directory's plan holds (its own size, which the first start chose). */
  private datasets(): DemoDataset[] {
    return this.progress.plan ? demoDatasets(this.progress.plan.demo) : [];
  }

  /** What this start loads: the demo datasets not complete yet, then the `--ingest` file. */
  pending(): LoadItem[] {
    const items: LoadItem[] = this.datasets()
      .filter((d) => !this.progress.isDone(d.id))
      .map((d) => ({ name: d.id, rows: d.plannedRows, demo: true }));
    if (this.opts.ingest) items.push({ name: path.basename(this.opts.ingest.file), rows: undefined, demo: false });
    return items;
  }

  /** Whether the demo was started here before and is not complete (this start resumes it). */
  resuming(): boolean {
    return this.datasets().some((d) => !this.progress.isDone(d.id) && this.progress.landed(d.id).size > 0);
  }

  /** Loads what {@link pending} lists, one after the other; resolves with every summary, earlier ones included. */
  async run(o: LoadRunOptions): Promise<IngestSummary[]> {
    const plan = this.progress.plan;
    const work: { name: string; schemaJson: string; blocks: Iterable<string> | AsyncIterable<string>; lagSec: number; demo: boolean }[] = [];
    for (const d of this.datasets()) {
      if (!this.progress.isDone(d.id) && plan) work.push({ name: d.id, schemaJson: d.schemaJson, blocks: d.blocks(plan.endTime), lagSec: d.id === 'chess' ? 600 : 0, demo: true });
    }
    if (this.opts.ingest) {
      const { file, schema } = this.opts.ingest;
      work.push({ name: path.basename(file), schemaJson: readFileSync(schema, 'utf8'), blocks: createReadStream(file, { encoding: 'utf8', highWaterMark: 4 << 20 }), lagSec: 3600, demo: false });
    }
    const summaries: IngestSummary[] = [...this.progress.done];
    const hold = process.env[HOLD_ENV];
    let heldOnce = false;
    for (const w of work) {
      const landed = w.demo ? this.progress.landed(w.name) : new Set<number>();
      if (landed.size > 0) o.log(`hd up: resuming the ${w.name} demo: ${landed.size} batches landed on an earlier start, sending the rest`);
      const bar = new Progress({ stream: o.progressStream, label: `ingest ${w.name}` });
      bar.start();
      let shown = 0;
      try {
        const s = await ingestNdjson(w.blocks, {
          scc: o.scc,
          schemaJson: w.schemaJson,
          lagSec: w.lagSec,
          progress: bar,
          skip: landed,
          signal: o.signal,
          onRejected: (line, reason) => {
            if (shown++ < 5) o.log(`hd up: ${w.name} line ${line}: ${reason}`);
          },
          onLanded: async (start) => {
            if (!w.demo) return;
            this.progress.markLanded(w.name, start);
            if (hold && existsSync(hold)) {
              if (!heldOnce) o.log(`hd up: holding the demo ingest while ${hold} exists (${HOLD_ENV})`);
              heldOnce = true;
              while (existsSync(hold) && !o.signal.aborted) await new Promise((r) => setTimeout(r, 50));
            }
          },
        });
        if (w.demo) this.progress.markDone(s);
        summaries.push(s);
      } finally {
        bar.stop();
      }
    }
    return summaries;
  }
}
