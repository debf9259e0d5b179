import os from 'node:os';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { DMS_CONFIG_CACHE_FILE } from '../../net/dmsConfigCache';
import { DmsConfigFeed } from '../../net/dmsConfigFeed';
import { reportFromHealthUrl } from '../../net/healthReporter';
import { NodeIdentity, type NodeIdentityOptions } from '../../net/nodeIdentity';
import { MTU_MODES } from '../../net/mtuMode';
import type { NodeAddresses } from '../../control/api';
import type { StorageNodeConfig } from '../../nodes/storageNode/config';
import { mayUse, type RunningService, type ServiceType } from '../../pipelines/registry';
import { int, oneOf, str, type Setting } from '../../pipelines/settings';
import { credentialSettings, credentialsOf } from '../stages/controlSettings';
import { storageNodeConfigFile } from '../stages/storageNodeConfig';
import { logLine } from '../../lib/logging';

/** PLATFORM_CA_CERT_PEM, optional here: without DMS_URL no registration happens. */
const optionalCaBundle: Setting<string> = {
  expects: 'empty, or the CA bundle: PEM text or the path of a PEM file',
  doc: 'the CA bundle the DMS certificate must chain to (needed with dms_url) — PLATFORM_CA_CERT_PEM',
  required: false,
  fallback: '',
  parse(v, ctx) {
    if (typeof v.value !== 'string') return { ok: false, expected: this.expects };
    if (v.value === '' || v.value.includes('-----BEGIN CERTIFICATE-----')) return { ok: true, value: v.value };
    try {
      const text = readFileSync(path.resolve(ctx.baseDir, v.value), 'utf8');
      return text.includes('-----BEGIN CERTIFICATE-----') ? { ok: true, value: text } : { ok: false, expected: 'a PEM certificate (BEGIN CERTIFICATE)' };
    } catch (err) {
      return { ok: false, expected: `PEM text or a readable PEM file (${(err as Error).message})` };
    }
  },
};

/** A Storage Node's config.json (its path kept: the default state directory is beside it); empty: none. */
const snConfig: Setting<{ config: StorageNodeConfig; file: string } | undefined> = {
  expects: 'empty, or a Storage Node config.json',
  doc: "a Storage Node's config.json: node name and ports come from it, and the default state directory is beside it (CONFIG_FILE)",
  required: false,
  fallback: undefined,
  parse(v, ctx) {
    if (v.value === '') return { ok: true, value: undefined };
    const r = storageNodeConfigFile('').parse(v, ctx);
    return r.ok ? { ok: true, value: { config: r.value, file: path.resolve(ctx.baseDir, String(v.value)) } } : r;
  },
};

/** Where this process reaches its own /health: the bind address when it is one, else (all interfaces, a name) loopback. */
function localHost(h: string | undefined): string {
  if (h === undefined || net.isIP(h) === 0 || h === '0.0.0.0' || h === '::') return '127.0.0.1';
  return net.isIPv6(h) ? `[${h}]` : h;
}

const port = (doc: string): Setting<number> => int({ doc, default: -1, min: -1, max: 65535 });

const settings = {
  node_name: str({ doc: "the node name: certificate CN and DMS registration; empty: a Storage Node config's node_name, else the host name (NODE_NAME)", default: '', allowEmpty: true }),
  role: oneOf(['scc', 'storageNode'] as const, { doc: 'the role registered and written into the certificate' }),
  dms_url: str({ doc: 'the DMS (https://host:6986); empty: no registration, node-to-node links stay plain TCP — DMS_URL', default: '', allowEmpty: true }),
  ca_cert_pem: optionalCaBundle,
  dms_server_name: str({ doc: 'name the DMS certificate must carry when not the URL host — PLATFORM_DMS_SERVER_NAME', default: '', allowEmpty: true }),
  ...credentialSettings,
  key_bits: int({ doc: 'RSA size of a new node key — PLATFORM_KEY_BITS', default: 4096, min: 2048, max: 16384 }),
  state_dir: str({ doc: "where the certificate, key and last configuration from the DMS are kept across restarts; empty: a Storage Node's <config dir>/<node_name>.identity — STATE_DIR", default: '', allowEmpty: true }),
  config: snConfig,
  cluster: str({ doc: 'cluster to join when the DMS has not declared the node — PLATFORM_CLUSTER', default: '', allowEmpty: true }),
  advertise_host: str({ doc: 'host peers reach the node at (registered, and named in the certificate); empty: production_host, or the node name for 0.0.0.0', default: '', allowEmpty: true }),
  production_host: str({ doc: 'the data-plane bind address', default: '0.0.0.0' }),
  production_port: port('data-plane port (HDWP) registered with the DMS; -1: none'),
  control_port: port('command / query control port registered with the DMS; -1: none'),
  grpc_port: port('gRPC QueryDispatch port registered with the DMS (SCC); -1: none'),
  observability_port: port('/health and /metrics port registered with the DMS; -1: none'),
  observability_host: str({ doc: "the SCC's /health bind address (OBSERVABILITY_INTERFACE), read for the health reports to the DMS; empty: production_host", default: '', allowEmpty: true }),
  crl_refresh_ms: int({ doc: 'how often the revocation list is fetched from the DMS — PLATFORM_CRL_REFRESH_MS', default: 300_000, min: 100, max: 86_400_000 }),
  mtu_mode: oneOf(MTU_MODES, { doc: "the node's data-plane MTU mode, declared at registration: the DMS refuses one other than the instance's (docs/control-plane.md, \"MTU mode\") — MTU_MODE", default: 'standard' }),
};

/** The configuration feed of each running identity (docs/control-plane.md, "Node configuration"). */
const feeds = new WeakMap<NodeIdentity, DmsConfigFeed>();
/** Where each running identity reaches the DMS. */
const endpoints = new WeakMap<NodeIdentity, DmsEndpoint>();

/** The DMS a running identity registered with: DMS_URL and the name its certificate must carry. */
export interface DmsEndpoint {
  readonly dmsUrl: string;
  readonly dmsServerName?: string;
}

/** The DMS of a running identity of this service; undefined for an identity started elsewhere. */
export function dmsEndpointOf(id: NodeIdentity): DmsEndpoint | undefined {
  return endpoints.get(id);
}

/**
 * The node's configuration from the DMS (registration answer, then polled) for a running identity
 * of this service; undefined for an identity started elsewhere.
 */
export function dmsConfigOf(id: NodeIdentity): DmsConfigFeed | undefined {
  return feeds.get(id);
}

/**
 * How a stage or service uses the node's identity: optional in the file; the value is undefined
 * without one, and also when the identity service runs without dms_url (no DMS: plain TCP).
 */
export const usesIdentity = mayUse<NodeIdentity | undefined>('nodeIdentity', "the node's DMS identity: mutual TLS on its links, plain TCP without one");

/**
 * `nodeIdentity`: the node's DMS registration and mutual-TLS identity (docs/control-plane.md, "Node
 * identity"), a service: registered before the stages that use it start (they get the
 * {@link NodeIdentity}), stopped after them. Without dms_url it registers nothing and gives
 * undefined: every link stays plain TCP.
 */
export const nodeIdentityType: ServiceType<typeof settings, Record<string, never>, NodeIdentity | undefined> = {
  name: 'nodeIdentity',
  kind: 'service',
  doc: "Registers an SCC or Storage Node with the DMS (stored certificate first, then the configured credential), keeps the certificate in the state directory and renews it; the node's links use it for mutual TLS.",
  settings,
  start: async (c): Promise<RunningService<NodeIdentity | undefined>> => {
    if (c.dms_url === '') return { value: undefined, stop: () => Promise.resolve() };
    if (c.ca_cert_pem === '') throw new Error('dms_url (DMS_URL) is set but ca_cert_pem (PLATFORM_CA_CERT_PEM) is not: the node cannot verify the DMS without the CA bundle');
    const sn = c.config?.config;
    const nodeName = sn ? sn.nodeName : c.node_name !== '' ? c.node_name : os.hostname();
    if (c.state_dir === '' && !c.config) throw new Error(`dms_url (DMS_URL) is set but no state directory: set STATE_DIR (state_dir) so the node keeps its certificate across restarts`);
    const stateDir = c.state_dir !== '' ? path.resolve(c.state_dir) : path.join(path.dirname(c.config?.file ?? ''), `${nodeName}.identity`);
    const credentials = credentialsOf(c);
    const bind = sn ? sn.productionIp : c.production_host;
    const host = c.advertise_host !== '' ? c.advertise_host : bind === '0.0.0.0' || bind === '::' ? nodeName : bind;
    const createdAt = Date.now();
    // Where the node's /health listens (this process reads it for the DMS health reports).
    const obsBind = sn ? sn.observabilityIp : c.observability_host !== '' ? c.observability_host : bind;
    const at = (p: number): { host: string; port: number } | undefined => (p >= 0 ? { host, port: p } : undefined);
    const ports = sn ? { production: sn.productionPort, control: sn.commandPort, grpc: -1, observability: sn.observabilityPort } : { production: c.production_port, control: c.control_port, grpc: c.grpc_port, observability: c.observability_port };
    const addresses: NodeAddresses = {
      ...(at(ports.production) && { production: at(ports.production) }),
      ...(at(ports.control) && { control: at(ports.control) }),
      ...(at(ports.grpc) && { grpc: at(ports.grpc) }),
      ...(at(ports.observability) && { observability: at(ports.observability) }),
    };
    const opts: NodeIdentityOptions = {
      nodeName,
      role: c.role,
      dmsUrl: c.dms_url,
      caCertPem: c.ca_cert_pem,
      ...(c.dms_server_name !== '' && { dmsServerName: c.dms_server_name }),
      credentials,
      stateDir,
      keyBits: c.key_bits,
      ...(c.pki_wrap_key && { wrapKey: c.pki_wrap_key }),
      addresses,
      ...(c.cluster !== '' && { cluster: c.cluster }),
      crlRefreshMs: c.crl_refresh_ms,
      mtuMode: c.mtu_mode,
      // The node's own /health document is what it reports to the DMS (replicas, devices, batches).
      // Registration comes first, /health later: an unreachable /health in the first minute is start-up.
      health:
        ports.observability > 0
          ? () => reportFromHealthUrl(`http://${localHost(obsBind)}:${ports.observability}/health`, 2000, Date.now() - createdAt < 60_000 ? 'initializing' : 'degraded')
          : () => Promise.resolve({ status: 'ok', detail: { health: 'no /health port to read (observability off)' } }),
    };
    const id = await NodeIdentity.start(opts);
    const feed = new DmsConfigFeed({
      nodeName,
      dmsUrl: c.dms_url,
      ...(c.dms_server_name !== '' && { dmsServerName: c.dms_server_name }),
      identity: id.identity,
      initial: id.registration,
      // The last configuration from the DMS, beside the certificate: a restart while the DMS is down starts from it.
      cacheFile: path.join(stateDir, DMS_CONFIG_CACHE_FILE),
      // net/dmsConfigFeed.ts logs bare lines: their levels are guessed (the documented fallback).
      log: logLine(`${c.role} '${nodeName}': `),
    });
    feeds.set(id, feed);
    endpoints.set(id, { dmsUrl: c.dms_url, ...(c.dms_server_name !== '' && { dmsServerName: c.dms_server_name }) });
    feed.start();
    return {
      value: id,
      stop: async () => {
        await feed.stop();
        await id.stop();
      },
    };
  },
};
