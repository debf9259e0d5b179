/**
 * The process logger every HD node writes through. LOG_LEVEL (`debug`, `info`, `warn`, `error`;
 * default `info`) drops the lines below it; LOG_FORMAT picks `text` (default: human-readable
 * `time level node: message`) or `json` (one object a line: `level`, `time`, `node`, `message`,
 * and `trace_id` / `span_id` when a span is active). See docs/observability.md, "Logs".
 */
import { activeTraceIds } from './traceIds';

/** Log levels, most verbose first (LOG_LEVEL's values). */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];
/** Output formats (LOG_FORMAT's values). */
export const LOG_FORMATS = ['text', 'json'] as const;
/** One of {@link LOG_FORMATS}. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Extra structured fields of one line (JSON format: merged into the object; text: appended as k=v). */
export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;

/** Where lines go: anything with a `write(string)` (process.stderr by default). */
export interface LogSink {
  write(line: string): unknown;
}

/** Options of {@link Logger}. */
export interface LoggerOptions {
  /** Lowest level written (default `info`). */
  readonly level?: LogLevel;
  /** Line format (default `text`). */
  readonly format?: LogFormat;
  /** The node's name, in every line (default: none). */
  readonly node?: string;
  /** Where lines go (default process.stderr). */
  readonly sink?: LogSink;
  /** The clock (tests); default `Date.now`. */
  readonly now?: () => number;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Parses a LOG_LEVEL value (any case); undefined when it names no level. */
export function parseLogLevel(text: string | undefined): LogLevel | undefined {
  const t = (text ?? '').trim().toLowerCase();
  return (LOG_LEVELS as readonly string[]).includes(t) ? (t as LogLevel) : undefined;
}

/** Parses a LOG_FORMAT value (any case); undefined when it names no format. */
export function parseLogFormat(text: string | undefined): LogFormat | undefined {
  const t = (text ?? '').trim().toLowerCase();
  return (LOG_FORMATS as readonly string[]).includes(t) ? (t as LogFormat) : undefined;
}

/**
 * A leveled logger writing one line per call.
 *
 * @example
 * const log = new Logger({ level: 'warn', format: 'json', node: 'sn1' });
 * log.info('started');             // dropped
 * log.warn('replica down', { replica: 'sn2' }); // {"level":"warn","time":"…","node":"sn1","message":"replica down","replica":"sn2"}
 */
export class Logger {
  /** The lowest level written. */
  readonly level: LogLevel;
  /** The line format. */
  readonly format: LogFormat;
  /** The node name in every line, if any. */
  readonly node: string | undefined;
  private readonly sink: LogSink;
  private readonly now: () => number;

  /** @param opts level, format, node name, sink */
  constructor(opts: LoggerOptions = {}) {
    this.level = opts.level ?? 'info';
    this.format = opts.format ?? 'text';
    this.node = opts.node;
    this.sink = opts.sink ?? process.stderr;
    this.now = opts.now ?? Date.now;
  }

  /** Whether a line at `level` would be written. */
  enabled(level: LogLevel): boolean {
    return RANK[level] >= RANK[this.level];
  }

  /** Writes `message` at `level` when the level is enabled. */
  log(level: LogLevel, message: string, fields?: LogFields): void {
    if (!this.enabled(level)) return;
    this.sink.write(`${this.format === 'json' ? this.json(level, message, fields) : this.text(level, message, fields)}\n`);
  }

  /** {@link log} at `debug`. */
  debug(message: string, fields?: LogFields): void {
    this.log('debug', message, fields);
  }

  /** {@link log} at `info`. */
  info(message: string, fields?: LogFields): void {
    this.log('info', message, fields);
  }

  /** {@link log} at `warn`. */
  warn(message: string, fields?: LogFields): void {
    this.log('warn', message, fields);
  }

  /** {@link log} at `error`. */
  error(message: string, fields?: LogFields): void {
    this.log('error', message, fields);
  }

  private json(level: LogLevel, message: string, fields: LogFields | undefined): string {
    const ids = activeTraceIds();
    return JSON.stringify({
      level,
      time: new Date(this.now()).toISOString(),
      ...(this.node !== undefined ? { node: this.node } : {}),
      message,
      ...(ids ? { trace_id: ids.traceId, span_id: ids.spanId } : {}),
      ...fields,
    });
  }

  private text(level: LogLevel, message: string, fields: LogFields | undefined): string {
    const extra = fields ? Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => ` ${k}=${String(v)}`).join('') : '';
    const ids = this.enabled('debug') ? activeTraceIds() : undefined;
    const trace = ids ? ` trace_id=${ids.traceId} span_id=${ids.spanId}` : '';
    return `${new Date(this.now()).toISOString()} ${level.toUpperCase().padEnd(5)} ${this.node !== undefined ? `${this.node}: ` : ''}${message}${extra}${trace}`;
  }
}
