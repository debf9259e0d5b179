/**
 * What `hd up` prints once the platform is ready: the nodes, where to connect (SQL doors, the
 * Proxy, the DMS and its administrator credential), example queries and the data loaded.
 */
import { EXAMPLE_QUERIES } from './exampleQueries';
import type { IngestSummary } from './demoIngest';
import { INGRESS_SECRET_HEADER_NAME, ingressSecretFile } from './ingressSecret';
import { SQL_PROXY_IDENTITY } from './layout';
import type { UpState } from './platform';
import { readSqlPassword, SQL_USER, sqlPasswordFile } from './sqlPassword';

/** The ready message for `state`, with the data ingested so far and the DMS's active policy. */
export function readyMessage(state: UpState, data: readonly IngestSummary[], policy: { readonly version: number; readonly installed: boolean }): string {
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
    `  admin credential: ${d.adminCert} and ${d.adminKey} (mode 0600; whoever holds them administers this instance)`,
    `    curl --cacert ${d.caCert} --cert ${d.adminCert} --key ${d.adminKey} ${d.url}/v1/topology`,
    `  policy: version ${policy.version}${policy.installed ? ', the default hd up installed just now: allow everything' : ' (kept from an earlier start)'}; replace it with PUT /v1/policy {"rego": "package hd.authz ..."} (docs/proxy.md)`,
    `  Proxy:  ${state.proxy.url}/v1/query   (an identity in X-Forwarded-Role / X-Forwarded-Email, taken only from an ingress: send the secret in ${ingressSecretFile(state.dataDir)} as ${INGRESS_SECRET_HEADER_NAME}; SDK: new PlatformQueryClient('${state.proxy.url}', ..., { controlTls: { ca } }) and addControlHeader('${INGRESS_SECRET_HEADER_NAME}', secret))`,
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
    'Try:',
    ...EXAMPLE_QUERIES.flatMap((q) => [`  -- ${q.shows}`, `  ${q.sql}`]),
    '',
    ...(data.length > 0 ? ['Data:', ...data.map((s) => `  ${s.dataset}: ${s.records.toLocaleString('en-US')} records in ${s.batches} batches`), ''] : []),
    "'hd status' shows the nodes, 'hd down' (or Ctrl-C here) stops everything.",
    '',
  ];
  return `${lines.join('\n')}\n`;
}
