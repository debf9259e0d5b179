/**
 * The TypeScript fuzz targets: every parser of outside bytes on the TypeScript side, each fed
 * arbitrary bytes and allowed to throw only its own typed error. Seeds: test/fuzz/seeds/<name>/.
 */
import { CompiledPolicy, PolicyError } from '../../engine-rs/policy';
import { RecordCodec } from '../../engine-rs/codec';
import { Schema, SchemaError } from '../../engine-rs/schema';
import { HttpError } from '../../control/http/errors';
import { asObject } from '../../control/http/body';
import { readAddresses, readRole } from '../../control/dms/registration';
import { readPolicyConfig } from '../../control/proxy/policySlot';
import { parseAggregatePartial } from '../../query/aggregate';
import { parseHdQuery } from '../../query/hdQuery';
import { QueryError } from '../../query/queryError';
import { decodeCommand } from '../../sql/flight/flightSqlCommands';
import { httpDoor } from '../../sql/httpDoor';
import { FrontendParser, parseSaslInitialResponse, PgProtocolError } from '../../sql/pgwire/frontend';
import type { SqlEngine } from '../../sql/sqlEngine';
import { SqlError } from '../../sql/sqlError';
import { encodeText } from '../../sources/textRecords';
import type { FuzzTarget } from './fuzzer';

const json = (data: Buffer): unknown => {
  try {
    return JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
};

/** pgwire: startup packets and typed frontend messages, pushed whole and in chunks that must agree. */
const pgwireFrontend: FuzzTarget = {
  name: 'pgwire_frontend',
  expected: (e) => e instanceof PgProtocolError,
  run(data) {
    if (data.length === 0) return;
    const chunk = (data[0] % 16) + 1;
    const body = data.subarray(1);
    const whole = new FrontendParser();
    let a: unknown[] = [];
    let aErr: unknown;
    try {
      a = whole.push(Buffer.from(body));
    } catch (e) {
      aErr = e;
    }
    const split = new FrontendParser();
    const b: unknown[] = [];
    let bErr: unknown;
    try {
      for (let i = 0; i < body.length; i += chunk) b.push(...split.push(Buffer.from(body.subarray(i, i + chunk))));
    } catch (e) {
      bErr = e;
    }
    if (aErr !== undefined || bErr !== undefined) {
      // Both refuse, with the parser's own error (chunks may see the refusal after fewer messages).
      if (aErr === undefined || bErr === undefined) throw new Error(`whole and chunked parsing disagree: ${String(aErr)} / ${String(bErr)}`);
      throw aErr;
    }
    const show = (m: unknown[]): string => JSON.stringify(m, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    if (show(a) !== show(b)) throw new Error('whole and chunked parsing give different messages');
  },
};

const pgwireSasl: FuzzTarget = {
  name: 'pgwire_sasl',
  expected: (e) => e instanceof PgProtocolError,
  run(data) {
    parseSaslInitialResponse(data);
  },
};

const flightSqlCommand: FuzzTarget = {
  name: 'flight_sql_command',
  expected: (e) => e instanceof SqlError,
  run(data) {
    decodeCommand(new Uint8Array(data), 'fuzz');
  },
};

const hdQueryJson: FuzzTarget = {
  name: 'hd_query_json',
  expected: (e) => e instanceof QueryError,
  run(data) {
    parseHdQuery(new Uint8Array(data));
  },
};

/** The payload of an HDWP aggregate frame (a node's partial, v1 or merged v2), as the client's listener parses it. */
const aggregatePartial: FuzzTarget = {
  name: 'aggregate_partial',
  expected: (e) => e instanceof QueryError,
  run(data) {
    parseAggregatePartial(data.toString('utf8'));
  },
};

/** hd_sql's HTTP door, through fastify: any body must get a 4xx with an error body, never a 5xx. */
let door: ReturnType<typeof httpDoor> | undefined;
const stubEngine = {
  execute: async (): Promise<never> => {
    throw new SqlError('invalid_statement', 'fuzz stub engine');
  },
} as unknown as SqlEngine;
const httpSqlBody: FuzzTarget = {
  name: 'http_sql_body',
  expected: () => false,
  async run(data) {
    door ??= httpDoor(stubEngine);
    const types = ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'];
    const r = await door.inject({ method: 'POST', url: '/v1/query', headers: { 'content-type': types[data.length % types.length], host: '127.0.0.1' }, payload: data });
    if (r.statusCode >= 500) throw new Error(`status ${r.statusCode}: ${r.body.slice(0, 200)}`);
    if (r.statusCode >= 400) {
      const b = json(Buffer.from(r.body)) as { error?: unknown } | undefined;
      if (!b || b.error === undefined) throw new Error(`a ${r.statusCode} without an error body: ${r.body.slice(0, 200)}`);
    }
  },
};

const proxyPolicyBody: FuzzTarget = {
  name: 'proxy_policy_body',
  expected: (e) => e instanceof HttpError,
  run(data) {
    const v = json(data);
    if (v !== undefined) readPolicyConfig(v);
  },
};

const dmsRegistrationBody: FuzzTarget = {
  name: 'dms_registration_body',
  expected: (e) => e instanceof HttpError,
  run(data) {
    const v = json(data);
    if (v === undefined) return;
    const o = asObject(v);
    readRole(o);
    readAddresses(o);
  },
};

const schemaJson: FuzzTarget = {
  name: 'schema_json',
  expected: (e) => e instanceof SchemaError,
  run(data) {
    Schema.parse(data.toString('utf8'));
  },
};

const FLOWS = {
  id: 'flows',
  record_size: 48,
  time_field: 'ts',
  enums: { proto: { values: { tcp: 6, udp: 17 } } },
  fields: [
    { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
    { name: 'src_ip', offset: 8, size: 4, type: 'ipv4' },
    { name: 'dst_port', offset: 12, size: 2, type: 'uint16' },
    { name: 'proto', offset: 14, size: 1, type: 'uint8', enum: 'proto' },
    { name: 'bytes', offset: 15, size: 8, type: 'uint64' },
    { name: 'app', offset: 23, size: 16, type: 'string' },
    { name: 'ratio', offset: 39, size: 8, type: 'double' },
  ],
};
let codec: RecordCodec | undefined;
/** The ingester's Kafka (and S3) payloads: blocks of NDJSON or CSV lines; bad lines are refused, never thrown. */
const kafkaPayload: FuzzTarget = {
  name: 'kafka_payload',
  expected: () => false,
  async run(data) {
    if (data.length === 0) return;
    codec ??= new RecordCodec(Schema.parse(JSON.stringify(FLOWS)));
    const block = data.subarray(1);
    const fmt = data[0] & 1 ? { format: 'csv' as const } : { format: 'ndjson' as const };
    const r = await encodeText(codec, fmt, 'flows', FLOWS.record_size, block);
    const bytes = r.chunks.reduce((n, c) => n + c.buf.length, 0);
    if (bytes !== r.records * FLOWS.record_size) throw new Error(`${r.records} records in ${bytes} bytes`);
    for (const x of r.refused) if (x.start > x.end || x.end > block.length) throw new Error(`refused line ${x.line} outside the block`);
  },
};

const POLICY = `package hd.authz
import rego.v1

default allow := true
hidden_fields contains "src_ip" if input.role != "admin"
hidden_fields contains f if { some f in data.hidden[input.role] }
constraints contains {"field": "tenant", "value": input.email} if input.role == "analyst"
constraints contains {"field": "dst_ip", "value": "10.1.0.0", "mask": "ffff0000"} if input.role == "contractor"
`;
let policy: CompiledPolicy | undefined;
/** The Proxy's policy input (identity and query from the request) evaluated by the documented example policy. */
const regoInput: FuzzTarget = {
  name: 'rego_input',
  expected: (e) => e instanceof PolicyError,
  run(data) {
    const v = json(data);
    if (v === undefined) return;
    policy ??= CompiledPolicy.compile(POLICY, { hidden: { guest: ['bytes'] } });
    policy.evaluate(v);
  },
};

/** Every TypeScript target, by name. */
export const TARGETS: readonly FuzzTarget[] = [pgwireFrontend, pgwireSasl, flightSqlCommand, hdQueryJson, aggregatePartial, httpSqlBody, proxyPolicyBody, dmsRegistrationBody, schemaJson, kafkaPayload, regoInput];

/** Closes what the targets opened (the HTTP door's fastify instance). */
export async function closeTargets(): Promise<void> {
  await door?.close();
  door = undefined;
}
