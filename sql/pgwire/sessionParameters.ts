/**
 * The run-time parameters a PostgreSQL session has on hd_sql's wire door: their canonical names,
 * starting values, which ones are reported with ParameterStatus, and what a SET may change them to.
 * They live in the door only — DuckDB's own configuration is locked by the sandbox and no SET
 * reaches it. The rule (docs/sql.md, "Result names, types and protocol details"):
 *
 * - a client parameter whose value changes nothing hd_sql answers (application_name, search_path,
 *   statement_timeout, extra_float_digits, the planner's knobs...) is accepted and recorded;
 * - a parameter hd_sql honours with one value only (DateStyle ISO, TimeZone UTC, client_encoding
 *   UTF8, IntervalStyle postgres, bytea_output hex, standard_conforming_strings on) accepts that
 *   value and refuses any other with 22023 invalid_parameter_value, saying what it serves;
 * - a read-only one (server_version, integer_datetimes...) refuses with 55P02, as PostgreSQL does;
 * - any other name — DuckDB's settings included — with 42704 unrecognized configuration parameter.
 */
import { PG_STATE, PgSessionError } from './pgErrors';
import { SCRAM_ITERATIONS } from './scram';

/** What the server reports as server_version (drivers parse the leading number). */
export const SERVER_VERSION = '16.0 (hd_sql)';

/** One parameter. */
interface ParameterSpec {
  /** The spelling PostgreSQL uses (SHOW's column name, ParameterStatus). */
  readonly name: string;
  readonly initial: string;
  /** Sent as ParameterStatus at startup and whenever it changes (PostgreSQL's GUC_REPORT). */
  readonly reported?: true;
  readonly readOnly?: true;
  /** The value stored for what a SET gave; throws PgSessionError when hd_sql cannot honour it. Absent: any value. */
  readonly check?: (value: string, name: string) => string;
}

const invalid = (name: string, value: string, why: string): PgSessionError =>
  new PgSessionError(PG_STATE.invalidParameterValue, `invalid value for parameter "${name}": "${value}"`, why);

function bool(value: string, name: string): string {
  const v = value.trim().toLowerCase();
  if (['on', 'true', 'yes', '1', 't', 'y'].includes(v)) return 'on';
  if (['off', 'false', 'no', '0', 'f', 'n'].includes(v)) return 'off';
  throw invalid(name, value, `${name} requires a Boolean value`);
}

/** Accepts exactly `values` (case-insensitively), stored as `canonical`; else 22023 naming what is served. */
function only(canonical: string, values: readonly string[], why: string): (value: string, name: string) => string {
  return (value, name) => {
    if (values.includes(value.trim().toLowerCase())) return canonical;
    throw invalid(name, value, why);
  };
}

function oneOf(values: readonly string[]): (value: string, name: string) => string {
  return (value, name) => {
    const v = value.trim().toLowerCase().replace(/\s+/g, ' ');
    if (values.includes(v)) return v;
    throw invalid(name, value, `Available values: ${values.join(', ')}.`);
  };
}

function intRange(min: number, max: number): (value: string, name: string) => string {
  return (value, name) => {
    const n = Number(value.trim());
    if (!Number.isInteger(n) || n < min || n > max) throw new PgSessionError(PG_STATE.invalidParameterValue, `${value.trim()} is outside the valid range for parameter "${name}" (${min} .. ${max})`);
    return String(n);
  };
}

/** A duration in ms or with a unit (`5s`, `'1min'`), stored as written. */
function duration(value: string, name: string): string {
  if (/^\s*\d+(\.\d+)?\s*(us|ms|s|min|h|d)?\s*$/i.test(value)) return value.trim();
  throw invalid(name, value, 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".');
}

/** DateStyle: the output style must be ISO (what hd_sql writes); the field order only steers input. */
function dateStyle(value: string, name: string): string {
  let style = 'ISO';
  let order = 'MDY';
  for (const word of value.split(/[\s,]+/).filter(Boolean)) {
    const w = word.toLowerCase();
    if (['iso', 'sql', 'postgres', 'german'].includes(w)) style = word.toUpperCase();
    else if (['mdy', 'us', 'noneuropean', 'non-european'].includes(w)) order = 'MDY';
    else if (['dmy', 'euro', 'european'].includes(w)) order = 'DMY';
    else if (w === 'ymd') order = 'YMD';
    else if (w !== 'default') throw invalid(name, value, `Unrecognized key word: "${word}".`);
  }
  if (style !== 'ISO') throw invalid(name, value, 'hd_sql writes dates and times in the ISO style only: DateStyle must start with ISO');
  return `ISO, ${order}`;
}

const UTC_ZONES = ['utc', 'etc/utc', 'gmt', 'etc/gmt', 'uct', 'etc/uct', 'universal', 'etc/universal', 'zulu', 'etc/zulu', 'z', 'greenwich', 'etc/greenwich', 'gmt0', 'etc/gmt0', 'gmt+0', 'gmt-0', 'etc/gmt+0', 'etc/gmt-0', 'utc0', '0', '+0', '-0', '00:00', '+00', '+00:00', 'local', 'default'];

const BOOL = { check: bool } as const;
const ISOLATION = oneOf(['serializable', 'repeatable read', 'read committed', 'read uncommitted']);
const MESSAGE_LEVELS = ['debug5', 'debug4', 'debug3', 'debug2', 'debug1', 'debug', 'log', 'info', 'notice', 'warning', 'error'];

/** Every parameter the door knows, by lower-cased name. */
const SPECS: ReadonlyMap<string, ParameterSpec> = new Map(
  (
    [
      { name: 'server_version', initial: SERVER_VERSION, reported: true, readOnly: true },
      { name: 'server_version_num', initial: '160000', readOnly: true },
      { name: 'server_encoding', initial: 'UTF8', reported: true, readOnly: true },
      { name: 'client_encoding', initial: 'UTF8', reported: true, check: only('UTF8', ['utf8', 'utf-8', 'unicode', 'default'], 'hd_sql speaks UTF8 only') },
      { name: 'DateStyle', initial: 'ISO, MDY', reported: true, check: dateStyle },
      { name: 'TimeZone', initial: 'UTC', reported: true, check: only('UTC', UTC_ZONES, 'hd_sql answers in UTC only: TimeZone accepts UTC (and its aliases)') },
      { name: 'IntervalStyle', initial: 'postgres', reported: true, check: only('postgres', ['postgres', 'default'], 'hd_sql writes intervals in the postgres style only') },
      { name: 'integer_datetimes', initial: 'on', reported: true, readOnly: true },
      { name: 'standard_conforming_strings', initial: 'on', reported: true, check: only('on', ['on', 'true', 'yes', '1', 'default'], 'string literals are always standard conforming here (backslashes are literal)') },
      { name: 'is_superuser', initial: 'off', reported: true, readOnly: true },
      { name: 'session_authorization', initial: '', reported: true, readOnly: true },
      { name: 'application_name', initial: '', reported: true },
      { name: 'default_transaction_read_only', initial: 'on', reported: true, ...BOOL },
      { name: 'in_hot_standby', initial: 'off', reported: true, readOnly: true },
      { name: 'scram_iterations', initial: String(SCRAM_ITERATIONS), reported: true, check: intRange(1, 2147483647) },
      { name: 'transaction_read_only', initial: 'on', ...BOOL },
      { name: 'transaction_isolation', initial: 'read committed', check: ISOLATION },
      { name: 'default_transaction_isolation', initial: 'read committed', check: ISOLATION },
      { name: 'transaction_deferrable', initial: 'off', ...BOOL },
      { name: 'default_transaction_deferrable', initial: 'off', ...BOOL },
      { name: 'search_path', initial: '"$user", public' },
      { name: 'extra_float_digits', initial: '1', check: intRange(-15, 3) },
      { name: 'bytea_output', initial: 'hex', check: only('hex', ['hex', 'default'], 'hd_sql writes bytea in the hex format only') },
      { name: 'client_min_messages', initial: 'notice', check: oneOf(MESSAGE_LEVELS) },
      { name: 'statement_timeout', initial: '0', check: duration },
      { name: 'lock_timeout', initial: '0', check: duration },
      { name: 'idle_in_transaction_session_timeout', initial: '0', check: duration },
      { name: 'idle_session_timeout', initial: '0', check: duration },
      { name: 'max_identifier_length', initial: '63', readOnly: true },
      { name: 'max_index_keys', initial: '32', readOnly: true },
      { name: 'max_function_args', initial: '100', readOnly: true },
      { name: 'block_size', initial: '8192', readOnly: true },
      { name: 'lc_collate', initial: 'C', readOnly: true },
      { name: 'lc_ctype', initial: 'C', readOnly: true },
      { name: 'lc_messages', initial: 'C' },
      { name: 'lc_monetary', initial: 'C' },
      { name: 'lc_numeric', initial: 'C' },
      { name: 'lc_time', initial: 'C' },
      { name: 'role', initial: 'none' },
      // The planner's and resources' knobs: they change how PostgreSQL would run a statement, never the answer.
      ...['work_mem', 'maintenance_work_mem', 'temp_buffers', 'effective_cache_size', 'random_page_cost', 'seq_page_cost', 'cpu_tuple_cost', 'cpu_index_tuple_cost', 'cpu_operator_cost', 'jit', 'geqo', 'from_collapse_limit', 'join_collapse_limit', 'cursor_tuple_fraction', 'max_parallel_workers_per_gather', 'parallel_setup_cost', 'parallel_tuple_cost', 'plan_cache_mode', 'default_statistics_target', 'synchronous_commit', 'row_security', 'check_function_bodies', 'escape_string_warning', 'array_nulls', 'quote_all_identifiers', 'default_text_search_config', 'timezone_abbreviations', 'xmlbinary', 'xmloption', 'default_table_access_method', 'default_tablespace', 'temp_tablespaces', 'transaction_timeout', 'gin_fuzzy_search_limit'].map((name) => ({ name, initial: '' })),
      // The planner's switches (PostgreSQL 16's enable_*).
      ...['async_append', 'bitmapscan', 'gathermerge', 'hashagg', 'hashjoin', 'incremental_sort', 'indexscan', 'indexonlyscan', 'material', 'memoize', 'mergejoin', 'nestloop', 'parallel_append', 'parallel_hash', 'partition_pruning', 'partitionwise_join', 'partitionwise_aggregate', 'presorted_aggregate', 'seqscan', 'sort', 'tidscan'].map((n) => ({ name: `enable_${n}`, initial: 'on', ...BOOL })),
    ] satisfies ParameterSpec[]
  ).map((s) => [s.name.toLowerCase(), s]),
);

/** The parameter `name` names (any case), or undefined. */
export function parameterSpec(name: string): ParameterSpec | undefined {
  const key = name.toLowerCase();
  // Custom `prefix.name` placeholders, which PostgreSQL keeps for applications.
  if (!SPECS.has(key) && /^[a-z_][\w$]*\.[a-z_][\w$]*$/.test(key)) return { name: key, initial: '' };
  return SPECS.get(key);
}

/** The canonical spelling of a parameter (`datestyle` → `DateStyle`); the name itself when unknown. */
export function canonicalName(name: string): string {
  return SPECS.get(name.toLowerCase())?.name ?? name;
}

/** The parameters a session starts with, `user` its session_authorization. */
export function initialParameters(user: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, s] of SPECS) out.set(key, key === 'session_authorization' ? user : s.initial);
  return out;
}

/** The names (canonical) of the parameters reported with ParameterStatus. */
export const REPORTED_PARAMETERS: readonly string[] = [...SPECS.values()].filter((s) => s.reported).map((s) => s.name);

/**
 * The value to store when a SET gives `value` (null: DEFAULT) to `name`, or the PgSessionError
 * PostgreSQL's SQLSTATE names: 42704 unknown, 55P02 read-only, 22023 a value hd_sql cannot honour.
 * `initial` is what DEFAULT restores.
 */
export function checkedValue(name: string, value: string | null, initial: string | undefined): { key: string; value: string } {
  const spec = parameterSpec(name);
  if (!spec) throw new PgSessionError(PG_STATE.undefinedObject, `unrecognized configuration parameter "${name}"`, 'hd_sql accepts PostgreSQL\'s client parameters (application_name, search_path, DateStyle, TimeZone, extra_float_digits, statement_timeout...); the engine\'s own settings cannot be changed');
  const key = spec.name.toLowerCase();
  if (spec.readOnly) throw new PgSessionError(PG_STATE.cantChangeRuntimeParam, `parameter "${spec.name}" cannot be changed`);
  if (value === null) return { key, value: initial ?? spec.initial };
  return { key, value: spec.check ? spec.check(value, spec.name) : value };
}

/**
 * Startup parameters applied as PostgreSQL applies them, but leniently: a value hd_sql cannot
 * honour (pgjdbc's TimeZone=America/New_York, say) or an unknown name is ignored rather than
 * refusing the connection; ParameterStatus then tells the client the value in force.
 */
export function startupValues(params: Readonly<Record<string, string>>): [string, string][] {
  const out: [string, string][] = [];
  const given = Object.entries(params).filter(([k]) => !['user', 'database', 'replication', 'options'].includes(k));
  // `options`: command-line style `-c name=value` / `--name=value` (PGOPTIONS).
  for (const m of (params['options'] ?? '').matchAll(/(?:-c\s*|--)([\w.]+)=((?:\\.|\S)*)/g)) given.push([m[1] as string, (m[2] as string).replace(/\\(.)/g, '$1')]);
  for (const [name, value] of given) {
    try {
      const c = checkedValue(name, value, undefined);
      out.push([c.key, c.value]);
    } catch {
      // not honoured: the value in force stays and is reported
    }
  }
  return out;
}
