/**
 * What `hd up` prints once the platform answers: the nodes, where to connect (SQL doors, the
 * Proxy, the DMS and its administrator credential, an SDK example to run as printed), example
 * queries and the data, loaded or loading. test/up/resume.test.ts runs every command it
 * prints.
 */
import { EXAMPLE_QUERIES } from './exampleQueries';
import type { IngestSummary } from './demoIngest';
import type { LoadItem } from './demoLoad';
import { INGRESS_SECRET_HEADER_NAME, ingressSecretFile } from './ingressSecret';
import { SQL_PROXY_IDENTITY } from './layout';
import type { UpState } from './platform';
import { readSqlPassword, SQL_USER, sqlPasswordFile } from './sqlPassword';

/** The data of the ready message: what earlier starts loaded, what loads now in the background. */
export interface ReadyData {
  readonly loaded: readonly IngestSummary[];
  readonly loading: readonly LoadItem[];
}

/** Where the SDK example finds the package and a dataset schema (omitted: no example). */
export interface SdkExample {
  /** The hdstore package directory (`require` of it loads its built `main`). */
  readonly packageDir: string;
  readonly dataset: string;
  readonly schemaFile: string;
}

/**
 * A Node command that queries `dataset` through the Proxy with the SDK, as role analyst: runnable
 * exactly as printed in a shell on this host. Its result listener takes a free port on 127.0.0.1
 * (`listenPort: 0`): the SDK's default, 0.0.0.0:6987, collides with the nodes' 127.0.x.y:6987.
 */
function sdkExample(state: UpState, x: SdkExample): string[] {
  const q = (v: string): string => JSON.stringify(v);
  return [
    `SDK (Node; paste as is: ${x.dataset} through the Proxy as role analyst, results on a free port of 127.0.0.1):`,
    `  node -e '`,
    `    const fs = require("node:fs");`,
    `    const { PlatformQueryClient } = require(${q(x.packageDir)});`,
    `    (async () => {`,
    `      const q = new PlatformQueryClient(${q(state.proxy.url)}, "127.0.0.1", "", { listenPort: 0, controlTls: { ca: fs.readFileSync(${q(state.dms.caCert)}, "utf8") } });`,
    `      q.loadDatasetSchema(fs.readFileSync(${q(x.schemaFile)}, "utf8"));`,
    `      q.addControlHeader("X-Forwarded-Role", "analyst");`,
    `      q.addControlHeader("X-Forwarded-Email", "analyst@example.com");`,
    `      q.addControlHeader(${q(INGRESS_SECRET_HEADER_NAME)}, fs.readFileSync(${q(ingressSecretFile(state.dataDir))}, "utf8").trim());`,
    `      const t = await q.executeToSql({ start_time: 0, end_time: Math.floor(Date.now() / 1000) + 60 }, ${q(`SELECT count(*) AS n FROM ${x.dataset}`)});`,
    `      console.log(String(t.toArray()[0].n));`,
    `      await q.stop();`,
    `    })();'`,
  ];
}

/** The Data lines: complete datasets, and those loading in the background. */
function dataLines(data: ReadyData): string[] {
  if (data.loaded.length === 0 && data.loading.length === 0) return [];
  return [
    'Data:',
    ...data.loaded.map((s) => `  ${s.dataset}: ${s.records.toLocaleString('en-US')} records in ${s.batches} batches`),
    ...data.loading.map((l) => `  ${l.name}: loading in the background${l.rows === undefined ? '' : ` (${l.rows.toLocaleString('en-US')} records)`}`),
    ...(data.loading.length > 0 ? ["  Queries answer now and see each batch as it lands; hd up says 'data loaded' when all is in."] : []),
    '',
  ];
}

/** The ready message for `state`, with the data, the DMS's active policy and the SDK example. */
export function readyMessage(state: UpState, data: ReadyData, policy: { readonly version: number; readonly installed: boolean }, sdk?: SdkExample): string {
  const d = state.dms;
  const passwordFile = sqlPasswordFile(state.dataDir);
  const password = readSqlPassword(state.dataDir);
  const lines = [
    '',
    'HD is up.',
    '',
    ...state.nodes.map((n) => `  ${n.name.padEnd(5)} ${n.role.padEnd(13)} ${n.host}:${n.port}   health ${n.healthUrl}`),
    '',
    'Control plane:',
    `  DMS:    ${d.url}   (its CA, which clients verify the DMS and the Proxy with: ${d.caCert})`,
    `  WebUX:  https://${new URL(d.url).hostname}:3000/   (sign in with the one-time secret in ${d.adminCert.replace(/admin\.cert\.pem$/, 'webux-login')}; each works once, the file then holds the next; or with the admin credential below imported into the browser, docs/webux.md "Sign-in")`,
    `  admin credential: ${d.adminCert} and ${d.adminKey} (mode 0600; whoever holds them administers this instance)`,
    `    curl --cacert ${d.caCert} --cert ${d.adminCert} --key ${d.adminKey} ${d.url}/v1/topology`,
    `  policy: version ${policy.version}${policy.installed ? ', the default hd up installed just now: allow everything' : ' (kept from an earlier start)'}; replace it with PUT /v1/policy {"rego": "package hd.authz ..."} (docs/proxy.md)`,
    `  Proxy:  ${state.proxy.url}/v1/query   (an identity in X-Forwarded-Role / X-Forwarded-Email, taken only from an ingress: send the secret in ${ingressSecretFile(state.dataDir)} as ${INGRESS_SECRET_HEADER_NAME}; the SDK example below does)`,
    '',
    `  ingest (HDWP):  ${state.scc.host}:${state.scc.port}   (PlatformIngestClient: setSccTargets(['${state.scc.host}:${state.scc.port}']))`,
    `  query (gRPC):   ${state.scc.host}:${state.scc.grpcPort}`,
    '',
    `SQL (${state.sqlUpstream === 'proxy' ? `through the Proxy, as role ${SQL_PROXY_IDENTITY.role}, ${SQL_PROXY_IDENTITY.email}` : 'straight to the SCC'}):`,
    `  user ${SQL_USER}, password ${password}   (kept in ${passwordFile}, mode 0600; every door asks for it)`,
    `  export PGPASSWORD="$(cat ${passwordFile})"   (or a ~/.pgpass line: ${state.sql.host}:${state.sql.pgPort}:*:${SQL_USER}:${password})`,
    `  psql -h ${state.sql.host} -p ${state.sql.pgPort} -U ${SQL_USER}`,
    `  HTTP: curl -s -u "${SQL_USER}:$PGPASSWORD" http://${state.sql.host}:${state.sql.httpPort}/v1/query -H 'content-type: application/json' -d '{"sql":"SHOW TABLES"}'`,
    // An up.json from before the Flight SQL door has no flightPort.
    ...(state.sql.flightPort
      ? [`  Arrow Flight SQL: grpc://${state.sql.host}:${state.sql.flightPort}   (ADBC: adbc_driver_flightsql.dbapi.connect('grpc://${state.sql.host}:${state.sql.flightPort}', db_kwargs={'username': '${SQL_USER}', 'password': os.environ['PGPASSWORD']}))`]
      : []),
    '',
    ...(sdk ? [...sdkExample(state, sdk), ''] : []),
    'Try:',
    ...EXAMPLE_QUERIES.flatMap((q) => [`  -- ${q.shows}`, `  ${q.sql}`]),
    '',
    ...dataLines(data),
    "'hd status' shows the nodes, 'hd down' (or Ctrl-C here) stops everything.",
    '',
  ];
  return `${lines.join('\n')}\n`;
}
