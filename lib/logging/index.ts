/** The logging of HD nodes: {@link Logger}, the process logger and `log(line, level)` callbacks. */
export { LOG_FORMATS, LOG_LEVELS, Logger, parseLogFormat, parseLogLevel, type LogFields, type LogFormat, type LogLevel, type LoggerOptions, type LogSink } from './logger';
export { configureProcessLogger, guessLevels, levelOfLine, logLine, processLogger, type LineLog, type LogFn, type LoggingEnv, type LoggingSetup } from './processLogger';
export { activeTraceIds, type TraceIds } from './traceIds';
