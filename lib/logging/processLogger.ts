/**
 * The one logger of this process, set up from the environment when a node starts (`hd run`,
 * each child of `hd up`), and the `log(line, level)` callbacks the roles and nodes take, routed
 * through it. Each call site states its line's level ({@link LogFn}); only lines from code that
 * still logs a bare `log(line)` (the SDK, libraries, a few files listed in docs/observability.md)
 * get one guessed from their words ({@link levelOfLine}), as a fallback.
 */
import { Logger, parseLogFormat, parseLogLevel, type LogLevel, type LogSink } from './logger';

let current = new Logger();

/** The process logger (until {@link configureProcessLogger} runs: info, text, on stderr). */
export function processLogger(): Logger {
  return current;
}

/** The environment settings the logger reads. */
export interface LoggingEnv {
  readonly LOG_LEVEL?: string;
  readonly LOG_FORMAT?: string;
  readonly NODE_NAME?: string;
}

/** What {@link configureProcessLogger} did, and the setting values it could not use. */
export interface LoggingSetup {
  readonly logger: Logger;
  /** Problems with LOG_LEVEL / LOG_FORMAT (the default was used instead). */
  readonly problems: readonly string[];
}

/**
 * Replaces the process logger with one built from LOG_LEVEL, LOG_FORMAT and the node name
 * (`node`, else NODE_NAME), writing to `sink` (default process.stderr); a bad value falls back to
 * the default and is reported in `problems`.
 */
export function configureProcessLogger(env: LoggingEnv, node?: string, sink?: LogSink): LoggingSetup {
  const problems: string[] = [];
  const level = env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : parseLogLevel(env.LOG_LEVEL);
  if (level === undefined) problems.push(`LOG_LEVEL '${env.LOG_LEVEL ?? ''}' is not one of debug, info, warn, error; using info`);
  const format = env.LOG_FORMAT === undefined || env.LOG_FORMAT === '' ? 'text' : parseLogFormat(env.LOG_FORMAT);
  if (format === undefined) problems.push(`LOG_FORMAT '${env.LOG_FORMAT ?? ''}' is not one of text, json; using text`);
  current = new Logger({ level: level ?? 'info', format: format ?? 'text', node: node ?? (env.NODE_NAME || undefined), sink });
  return { logger: current, problems };
}

/**
 * A log callback whose caller states each line's level, e.g. `log('replica sn2 is down', 'warn')`.
 * A one-argument `(line) => …` (a test's collector) is one too.
 */
export type LogFn = (line: string, level: LogLevel) => void;

/**
 * A {@link LogFn} that also takes a bare `log(line)` from code that states no level (the
 * fallback: the level is then guessed with {@link levelOfLine}).
 */
export type LineLog = (line: string, level?: LogLevel) => void;

const WARNING_WORDS = /\b(fail(s|ed|ing|ure)?|error|errors|refused|refuses|cannot|can't|could not|unreachable|lost|(is|are|went|goes) down|timed out|timeout|denied|rejected|gave up|giving up|retrying|corrupt|discarded)\b/i;

/**
 * The level guessed for a line that came without one: `warn` when its words report a failure,
 * else `info`. Only the fallback of {@link logLine} and {@link guessLevels}; HD's own call sites
 * state their level.
 */
export function levelOfLine(line: string): LogLevel {
  return WARNING_WORDS.test(line) ? 'warn' : 'info';
}

/**
 * A `log(line, level)` callback writing through the process logger (read at each call, so a
 * callback made before the logger is configured still honours LOG_LEVEL); `prefix` is put before
 * each line. A call without a level (code that logs bare lines) falls back to {@link levelOfLine}.
 *
 * @example
 * const log = logLine('dms: ');
 * log('listening on 127.0.0.1:6986', 'info');
 */
export function logLine(prefix = ''): LineLog {
  return (line, level) => {
    const text = prefix + line;
    current.log(level ?? levelOfLine(text), text);
  };
}

/**
 * `log` for code that logs bare lines (`(line: string) => void`: the SDK's query client, the SQL
 * doors, the files docs/observability.md lists): each line's level is guessed ({@link levelOfLine}).
 */
export function guessLevels(log: LogFn): (line: string) => void {
  return (line) => log(line, levelOfLine(line));
}
