/**
 * Progress display for long commands (`hd run`). On a terminal: one bar redrawn in place with bytes
 * and records done, rate and, when the total is known, an ETA. Elsewhere (a log file, CI): a plain
 * summary line now and then, no escape codes.
 */

/** The stream progress is written to (normally stderr). */
export interface ProgressStream {
  write(s: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** Options of {@link Progress}. */
export interface ProgressOptions {
  readonly stream: ProgressStream;
  /** Leads every line (the pipeline's name). */
  readonly label: string;
  /** Terminal redraw interval (default 100 ms). */
  readonly redrawMs?: number;
  /** Interval between summary lines when not a terminal (default 5000 ms). */
  readonly lineMs?: number;
  /** Clock, for tests (default `Date.now`). */
  readonly now?: () => number;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `1536` → `1.5 KiB`. */
export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${UNITS[u]}`;
}

/** Seconds → `m:ss` or `h:mm:ss`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** Progress of one run; implements the runner's `ProgressReporter`. */
export class Progress {
  private total = 0;
  private bytes = 0;
  private records = 0;
  private readonly started: number;
  private timer: NodeJS.Timeout | undefined;
  private lastLine = 0;
  private readonly now: () => number;
  private readonly tty: boolean;

  /** Starts the clock; call {@link start} to begin drawing. */
  constructor(private readonly opts: ProgressOptions) {
    this.now = opts.now ?? Date.now;
    this.started = this.now();
    this.lastLine = this.started;
    this.tty = opts.stream.isTTY === true;
  }

  /** More input of known size is expected. */
  addTotal(bytes: number): void {
    this.total += bytes;
  }

  /** Input bytes consumed. */
  addBytes(bytes: number): void {
    this.bytes += bytes;
  }

  /** Records written. */
  addRecords(records: number): void {
    this.records += records;
  }

  /** Begins periodic drawing; the timer never keeps the process alive. */
  start(): void {
    if (this.timer) return;
    const every = this.tty ? (this.opts.redrawMs ?? 100) : Math.min(this.opts.lineMs ?? 5000, 1000);
    this.timer = setInterval(() => this.tick(), every);
    this.timer.unref();
  }

  /** Stops drawing and writes the final state on its own line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.tty) this.opts.stream.write(`\r\x1b[2K${this.line(true)}\n`);
    else this.opts.stream.write(`${this.line(false)}\n`);
  }

  /** Draws now if due (called by the timer; exposed for tests). */
  tick(): void {
    const t = this.now();
    if (this.tty) {
      this.opts.stream.write(`\r\x1b[2K${this.line(true)}`);
    } else if (t - this.lastLine >= (this.opts.lineMs ?? 5000)) {
      this.lastLine = t;
      this.opts.stream.write(`${this.line(false)}\n`);
    }
  }

  /** The current state as one line; `bar` adds the bar drawn on terminals. */
  line(bar: boolean): string {
    const elapsed = Math.max(1e-3, (this.now() - this.started) / 1000);
    const rate = this.bytes / elapsed;
    const parts: string[] = [this.opts.label];
    const known = this.total > 0;
    const frac = known ? Math.min(1, this.bytes / this.total) : 0;
    if (bar && known) {
      const width = Math.max(10, Math.min(30, (this.opts.stream.columns ?? 80) - 70));
      const filled = Math.round(frac * width);
      parts.push(`[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}%`);
    } else if (known) {
      parts.push(`${(frac * 100).toFixed(0)}%`);
    }
    parts.push(known ? `${formatBytes(this.bytes)} of ${formatBytes(this.total)}` : formatBytes(this.bytes));
    parts.push(`${this.records.toLocaleString('en-US')} records`);
    parts.push(`${formatBytes(rate)}/s`);
    if (known && rate > 0 && frac < 1) parts.push(`ETA ${formatDuration((this.total - this.bytes) / rate)}`);
    else parts.push(`elapsed ${formatDuration(elapsed)}`);
    return parts.join('  ');
  }
}
