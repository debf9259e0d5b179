/**
 * The server settings a client may read through SQL: what the PostgreSQL wire door reports
 * (server_version, encodings, DateStyle...) and the limits drivers ask for (max_index_keys), all
 * constants. `current_setting(name)`, `set_config(name, ...)` and `SELECT setting FROM pg_settings
 * WHERE name = '<name>'` answer these names and nothing else: every other name, and pg_settings read
 * any other way, stays refused by the statement guard (the sandbox: no setting of the DuckDB
 * inside — folders, limits, extensions — is ever shown).
 */

/** Setting name (lower case) → value. */
export const CLIENT_SETTINGS: Readonly<Record<string, string>> = {
  server_version: '16.0 (hd_sql)', server_version_num: '160000', server_encoding: 'UTF8', client_encoding: 'UTF8', standard_conforming_strings: 'on',
  integer_datetimes: 'on', datestyle: 'ISO, MDY', timezone: 'UTC', search_path: '"$user", public', max_identifier_length: '63',
  transaction_isolation: 'read committed', transaction_read_only: 'on', default_transaction_read_only: 'on', is_superuser: 'off',
  bytea_output: 'hex', lc_collate: 'C', lc_ctype: 'C', block_size: '8192', max_index_keys: '32', max_function_args: '100', application_name: '', extra_float_digits: '1',
};

/** The value of a client setting (any case), or undefined for any other name. */
export function clientSetting(name: string): string | undefined {
  const key = name.toLowerCase();
  return Object.hasOwn(CLIENT_SETTINGS, key) ? CLIENT_SETTINGS[key] : undefined;
}
