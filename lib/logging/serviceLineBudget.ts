/**
 * How many lines a long-running service (an SCC, a Storage Node) prints through `hd run`: a budget
 * per minute, so a noisy spell cannot flood the terminal and a node never goes quiet for good (a
 * lifetime cap, as stages have for data problems, silenced replica and query events after 20 lines).
 */

/** Lines a service may print per minute before the rest of that minute is counted instead. */
export const MAX_SERVICE_LINES_PER_MINUTE = 120;

/** A per-service budget of lines per minute; what goes over is counted and said once the minute ends. */
export class ServiceLineBudget {
  private readonly windows = new Map<string, { start: number; lines: number; suppressed: number }>();

  /** @param onSuppressed told, when a minute with suppressed lines is over, how many there were */
  constructor(
    private readonly perMinute: number,
    private readonly onSuppressed: (id: string, suppressed: number) => void,
  ) {}

  /** Whether `id` may print a line now. */
  take(id: string, now = Date.now()): boolean {
    let w = this.windows.get(id);
    if (!w || now - w.start >= 60_000) {
      if (w && w.suppressed > 0) this.onSuppressed(id, w.suppressed);
      w = { start: now, lines: 0, suppressed: 0 };
      this.windows.set(id, w);
    }
    if (w.lines < this.perMinute) {
      w.lines++;
      return true;
    }
    w.suppressed++;
    return false;
  }
}
