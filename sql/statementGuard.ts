/**
 * The statement guard: before a SELECT is planned, its whole parse tree (DuckDB's own, from
 * `json_serialize_sql`) is searched for anything that would make the SQL server read or write
 * something other than the datasets on a user's behalf — a file, a URL, an extension, the server's
 * settings or environment. Such a statement is refused as `unsupported_statement` (0A000) before
 * any of it runs, so the answer never depends on whether a named path exists.
 *
 * It is the second wall: the embedded DuckDB itself runs with external access off and its settings
 * locked (`sandboxConfig` in local/localSql.ts). The guard makes the refusal explicit, the same
 * on every door, and independent of what a future DuckDB adds (table functions are allow-listed).
 * Non-SELECT statements (COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL, EXPORT, CREATE SECRET...)
 * never get here: `json_serialize_sql` serializes SELECTs only, and the planner refuses the rest.
 */
import type { BigJsonValue } from './bigJson';
import { isNode, type Node } from './pushdown';
import { SqlError } from './sqlError';

/**
 * The table functions a statement may call: they compute rows from their arguments alone, or list
 * the engine's own functions, types and keywords (no paths, settings or data in them). Anything
 * else in a FROM — `read_text`, `read_csv`, `glob`, `read_parquet`, `query`, `query_table`,
 * `json_execute_serialized_sql`, `arrow_scan` (raw pointers), `duckdb_settings`, `pragma_*`,
 * `enable_logging`, table macros that take a table *name* (`histogram`) — is refused.
 */
export const ALLOWED_TABLE_FUNCTIONS: ReadonlySet<string> = new Set(['range', 'generate_series', 'unnest', 'json_each', 'json_tree', 'repeat', 'repeat_row', 'pg_timezone_names', 'duckdb_functions', 'duckdb_types', 'duckdb_keywords']);

/**
 * Functions refused wherever they appear (select list, WHERE, arguments): they reveal the server's
 * settings (temp and extension folders, allowed directories), its environment, or run SQL text the
 * guard cannot see. The file readers are listed too, so a scalar spelling is refused the same way.
 */
export const DENIED_FUNCTIONS: ReadonlySet<string> = new Set([
  'current_setting', 'getenv', 'set_config', 'json_execute_serialized_sql', 'query', 'query_table', 'which_secret',
  'read_text', 'read_blob', 'read_csv', 'read_csv_auto', 'read_json', 'read_json_auto', 'read_json_objects', 'read_json_objects_auto',
  'read_ndjson', 'read_ndjson_auto', 'read_ndjson_objects', 'read_parquet', 'parquet_scan', 'read_duckdb', 'glob', 'sniff_csv',
  'pg_read_file', 'pg_read_binary_file', 'pg_ls_dir', 'pg_stat_file', 'lo_import', 'lo_export',
]);

/** Catalog views refused by name (any schema or catalog): DuckDB's pg_settings is `duckdb_settings()`. */
export const DENIED_RELATIONS: ReadonlySet<string> = new Set(['pg_settings', 'pg_file_settings', 'pg_hba_file_rules', 'pg_ident_file_mappings', 'duckdb_settings', 'duckdb_extensions', 'duckdb_secrets', 'duckdb_temporary_files', 'duckdb_logs']);

/**
 * A name DuckDB might take for a file or URL when no table has it (a "replacement scan":
 * `FROM 'key.csv'`, `FROM "https://host/x.parquet"`): every such scan needs an extension, a path
 * separator or a scheme.
 */
const PATH_LIKE = /[./\\:*?~]/;

/** Why a statement was refused, as every refusal says it. */
export const READS_DATASETS_ONLY = 'HD SQL reads datasets only, never files, URLs, extensions or the server\'s own settings';

function refuse(message: string): never {
  throw new SqlError('unsupported_statement', message);
}

/** `schema.name` as written (lower case), for messages. */
function qualified(schema: BigJsonValue | undefined, name: string): string {
  return typeof schema === 'string' && schema !== '' ? `${schema.toLowerCase()}.${name}` : name;
}

/**
 * Throws SqlError `unsupported_statement` when the statement `root` (one node of
 * `json_serialize_sql`'s `statements`) calls a table function outside `ALLOWED_TABLE_FUNCTIONS`,
 * any function of `DENIED_FUNCTIONS`, reads a relation of `DENIED_RELATIONS`, or names a table that
 * is not a dataset (`isDataset`) with a name that could be a file or URL. Messages name the function
 * or view, never a path argument, and are the same whether or not a path exists.
 * @example
 * guardStatement(statementsOf(tree)[0], (name) => catalog.resolve(name) !== undefined);
 */
export function guardStatement(root: BigJsonValue, isDataset: (name: string) => boolean): void {
  // Iterative: a deeply nested statement must not overflow the stack before it is judged.
  const stack: BigJsonValue[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    if (!isNode(v)) continue;
    if (v.type === 'TABLE_FUNCTION') checkTableFunction(v);
    if (v.class === 'FUNCTION') checkFunction(v);
    if (v.type === 'BASE_TABLE') checkRelation(v, isDataset);
    for (const x of Object.values(v)) if (typeof x === 'object' && x !== null) stack.push(x);
  }
}

function checkTableFunction(ref: Node): void {
  const fn = ref.function;
  // A table function reference is always a function call; anything else is a tree we do not understand.
  if (!isNode(fn) || fn.class !== 'FUNCTION' || typeof fn.function_name !== 'string') refuse(`a table function in FROM that is not a plain call is not supported: ${READS_DATASETS_ONLY}`);
  const name = fn.function_name.toLowerCase();
  if (!ALLOWED_TABLE_FUNCTIONS.has(name)) {
    refuse(`table function ${qualified(fn.schema, name)}() is not allowed: ${READS_DATASETS_ONLY} (table functions allowed: ${[...ALLOWED_TABLE_FUNCTIONS].join(', ')})`);
  }
}

function checkFunction(fn: Node): void {
  const name = typeof fn.function_name === 'string' ? fn.function_name.toLowerCase() : '';
  if (DENIED_FUNCTIONS.has(name)) {
    refuse(`function ${qualified(fn.schema, name)}() is not allowed: ${READS_DATASETS_ONLY}${name === 'current_setting' ? ' (on the PostgreSQL wire, SHOW <name> answers the session settings)' : ''}`);
  }
}

function checkRelation(ref: Node, isDataset: (name: string) => boolean): void {
  const table = typeof ref.table_name === 'string' ? ref.table_name : '';
  const lower = table.toLowerCase();
  if (DENIED_RELATIONS.has(lower)) refuse(`${qualified(ref.schema_name, lower)} is not served: ${READS_DATASETS_ONLY}${lower === 'pg_settings' ? ' (on the PostgreSQL wire, SHOW <name> answers the session settings)' : ''}`);
  // The path itself stays out of the message: the refusal reads the same for any path.
  if (PATH_LIKE.test(table) && !isDataset(table)) refuse(`a table name that looks like a file path or URL is not allowed: ${READS_DATASETS_ONLY} (SHOW TABLES lists the datasets)`);
}
