/**
 * The headers `addControlHeader` collects for every later control-plane request (both SDK clients).
 */

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Accumulating HTTP headers (the reference: they accumulate and none can be cleared). */
export class ControlHeaders {
  private readonly headers: Record<string, string> = {};

  /** Adds one header; a name that is not an HTTP token throws naming it. */
  add(name: string, value: string): void {
    if (!TOKEN.test(name)) throw new RangeError(`"${name}" is not an HTTP header name`);
    this.headers[name.toLowerCase()] = value;
  }

  /** The headers so far, lower-case names. */
  get all(): Readonly<Record<string, string>> {
    return this.headers;
  }
}

/** Counters in the Prometheus text format: `[name, help, value]` rows. */
export function counterText(rows: readonly (readonly [string, string, number])[]): string {
  return `${rows.map(([n, h, v]) => `# HELP ${n} ${h}\n# TYPE ${n} counter\n${n} ${v}`).join('\n')}\n`;
}
