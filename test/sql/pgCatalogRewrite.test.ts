/**
 * The PostgreSQL dialect of catalog statements (sql/pgcatalog/): the text rewrite leaves literals
 * alone, `::regclass` and friends resolve or fail as PostgreSQL does, `~` matches anywhere in a
 * catalog statement, the client settings (and only they) are readable, dataset OIDs are stable.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { datasetOids } from '../../sql/pgcatalog/oids';
import { pgSyntax } from '../../sql/pgcatalog/pgSyntax';
import { formatType, pgColumnType, pgTypeByName } from '../../sql/pgcatalog/pgTypes';
import { SqlError } from '../../sql/sqlError';
import { memoryEngine } from './support';

const { engine, local, stats } = memoryEngine(30);
const t = suite('PostgreSQL catalog dialect');
t.after(() => local.close());

const rows = async (sql: string): Promise<unknown[]> => (await engine.execute(sql)).table.toArray().map((r) => Object.values(r.toJSON() as object));
const failure = async (sql: string): Promise<string> =>
  engine.execute(sql).then(
    () => 'no error',
    (e: SqlError) => `${e.codes.sqlstate} ${e.message}`,
  );

t('OPERATOR(pg_catalog.~) and ::pg_catalog.text are rewritten in code only, never inside literals or comments', () => {
  assert.equal(pgSyntax("SELECT a OPERATOR(pg_catalog.~) '^(x)$', b::pg_catalog.text").text, "SELECT a  ~  '^(x)$', b::text");
  const kept = "SELECT 'OPERATOR(pg_catalog.~)', E'it\\'s OPERATOR(pg_catalog.~)', \"OPERATOR(pg_catalog.~)\" -- OPERATOR(pg_catalog.~)\n, $$::pg_catalog.text$$";
  assert.equal(pgSyntax(kept), { text: kept, changed: false });
});

t('::regclass of a name is its OID (unknown: 42P01), of an OID shown its name; regtype, regnamespace, regrole', async () => {
  const [[oid]] = (await rows("SELECT 'flows'::regclass AS o")) as [[bigint]];
  assert.equal(await rows(`SELECT ${oid}::regclass::text AS n, '"Network flows"'::regclass = ${oid} AS by_name, 'pg_catalog.pg_class'::regclass AS c`), [['flows', true, 1259n]]);
  assert.match(await failure("SELECT 'nope'::regclass"), /^42P01 relation "nope" does not exist/);
  assert.match(await failure("SELECT 'Network flows'::regclass"), /^42P01 relation "Network flows" does not exist/);
  assert.equal(await rows("SELECT 'int4'::regtype AS a, 'character varying'::regtype AS b, 'numeric[]'::regtype AS c, 1700::regtype AS shown"), [[23n, 1043n, 1231n, 'numeric']]);
  assert.match(await failure("SELECT 'nosuch'::regtype"), /^42000 type "nosuch" does not exist/);
  assert.equal(await rows("SELECT 'public'::regnamespace AS p, 'hd'::regrole AS r"), [[2200n, 10n]]);
  assert.match(await failure("SELECT 'nowhere'::regnamespace"), /^42000 schema "nowhere" does not exist/);
  assert.match(await failure("SELECT 'someone'::regrole"), /^42000 role "someone" does not exist/);
});

t('in a catalog statement ~ matches anywhere (PostgreSQL), !~ and ~* too', async () => {
  assert.equal(await rows("SELECT nspname FROM pg_namespace WHERE nspname ~ '^pg_' ORDER BY 1"), [['pg_catalog']]);
  assert.equal(await rows("SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' AND nspname ~* 'PUB' ORDER BY 1"), [['public']]);
});

t('client settings are readable; every other setting stays refused', async () => {
  assert.equal(await rows("SELECT current_setting('server_version_num') AS v, set_config('bytea_output', 'hex', false) AS b, version() LIKE 'PostgreSQL 16.0%' AS pg"), [['160000', 'hex', true]]);
  assert.equal(await rows("SELECT setting FROM pg_catalog.pg_settings WHERE name = 'max_index_keys'"), [['32']]);
  for (const sql of ["SELECT current_setting('temp_directory')", "SELECT setting FROM pg_settings WHERE name = 'temp_directory'", "SELECT setting FROM pg_settings WHERE name = 'max_index_keys' OR true", "SELECT set_config('temp_directory', '/', false)"]) {
    assert.match(await failure(sql), /^0A000 .*(is not allowed|is not served)/, sql);
  }
  assert.is(stats.reads, 0);
});

t('type mapping: every SQL type of the mapping has a PostgreSQL type; format_type prints it back', () => {
  for (const s of ['smallint', 'integer', 'bigint', 'numeric', 'inet', 'real', 'double precision', 'boolean', 'bytea', 'text', 'integer[]', 'text[]']) assert.is(formatType(pgColumnType(s).oid, -1), s);
  const n = pgColumnType('numeric(20,4)');
  assert.is(formatType(n.oid, n.typmod), 'numeric(20,4)');
  assert.is(pgTypeByName('pg_catalog.int8')?.oid, 20);
  assert.throws(() => pgColumnType('money'), /no PostgreSQL type for the SQL type "money"/);
});

t('a dataset keeps its OID whatever other datasets exist', () => {
  const alone = datasetOids(['flows']).get('flows');
  const withOthers = datasetOids(['events', 'flows', 'dns']).get('flows');
  assert.is(alone, withOthers);
  assert.ok((alone as number) >= 16385);
});

t.run();
