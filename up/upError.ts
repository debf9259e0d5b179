/**
 * A fatal error of `hd up`: one line saying what went wrong, and the log that says more.
 */

/** Why `hd up` gives up, and the log to read (a node's, or hd up's own). */
export class UpError extends Error {
  /**
   * @param message one line: what went wrong (and, where it helps, what to do)
   * @param log the log file with the details
   */
  constructor(
    message: string,
    readonly log: string,
  ) {
    super(message);
    this.name = 'UpError';
  }
}

/** The one line `hd up` prints for a fatal error: the reason's first line and the log path. */
export function fatalLine(err: unknown, defaultLog: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const first = message.split('\n').find((l) => l.trim() !== '')?.trim() ?? 'failed';
  const log = err instanceof UpError ? err.log : defaultLog;
  return `hd up: ${first} — log: ${log}\n`;
}
