/**
 * The TLS identity of an SCC or a Storage Node (docs/control-plane.md, "Node identity"): registers
 * with the DMS at start, keeps the certificate and key in the node's state directory so a restart
 * reuses them instead of a new credential, and renews the certificate before it expires.
 *
 * Credential order at start: the stored certificate (still valid, issued for this node and role) is
 * presented to the DMS as a client certificate, which re-registers the node with its current
 * addresses and hands out a fresh certificate for the same key; only when there is none, or the DMS
 * refuses it (revoked, expired), the configured credential is used (pre-issued certificate,
 * bootstrap token, Kubernetes token: registerWithDms's precedence). A bootstrap token is
 * single-use, so a node that keeps its state directory never needs a second one. When the DMS
 * cannot be reached and the stored certificate is still valid, the node starts with it and the
 * renewer keeps trying.
 *
 * With PLATFORM_PKI_WRAP_KEY (`wrapKey`) the key file is sealed (net/pki/wrapKey.ts; a plain one
 * found is sealed at the next write); a sealed key without the wrap key, or with a wrong one, stops
 * the node with an error naming the file, rather than registering afresh.
 */
import { BoundedMap } from '../lib/boundedMap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../lib/atomicFile';
import { readSecretFile, writeSecretFile } from './pki/wrapKey';
import type { NodeAddresses, NodeRole } from '../control/api';
import { MtlsIdentity, type TlsMaterial } from './mtls';
import { registerWithDms, type RegistrationCredentials, type RegistrationResult } from './registerWithDms';
import { CertificateRenewer } from './renewal';
import { DEFAULT_HEALTH_REPORT_MS, HealthReporter, type HealthReport } from './healthReporter';
import { logLine, type LogFn, type LogLevel } from '../lib/logging';
import type { MtuMode } from './mtuMode';

/** Peers (certificate and port) kept for /health. */
const MAX_PEERS = 256;

/** Files of the state directory. */
const FILES = { key: 'node.key.pem', cert: 'node.cert.pem', ca: 'ca.cert.pem', crl: 'crl.pem' } as const;

/** Options of {@link NodeIdentity.start}. */
export interface NodeIdentityOptions {
  readonly nodeName: string;
  readonly role: NodeRole;
  /** DMS_URL. */
  readonly dmsUrl: string;
  /** PLATFORM_CA_CERT_PEM: the bundle the DMS must chain to. */
  readonly caCertPem: string;
  /** Name the DMS certificate must carry, when not the URL's host. */
  readonly dmsServerName?: string;
  readonly credentials: RegistrationCredentials;
  /** Where the certificate, key, CA and CRL are kept (created if missing; the key is mode 0600). */
  readonly stateDir: string;
  /** RSA size of a new key (PLATFORM_KEY_BITS); default 4096. */
  readonly keyBits?: number;
  /** PLATFORM_PKI_WRAP_KEY: seals the stored key file when given. */
  readonly wrapKey?: Buffer;
  /** Where the node is reached (registered with the DMS, named in the certificate). */
  readonly addresses?: NodeAddresses;
  /** Cluster to join when the DMS has not declared the node. */
  readonly cluster?: string;
  /** SCCs and Storage Nodes: the node's MTU mode (MTU_MODE), declared at registration; the DMS refuses one other than the instance's. */
  readonly mtuMode?: MtuMode;
  /** How often the revocation list is fetched (PLATFORM_CRL_REFRESH_MS); default 5 minutes. */
  readonly crlRefreshMs?: number;
  /** Start-up, renewal and refusal lines, each with its level (default the process logger). */
  readonly log?: LogFn;
  /** What the node reports to the DMS every health interval; absent: no reports. */
  readonly health?: () => Promise<HealthReport>;
}

/** How the node got its current certificate. */
export type IdentitySource = 'stored certificate' | 'stored certificate (DMS unreachable)' | 'registration';

/** Names peers seen on the node's mutual-TLS ports, for /health. */
interface PeerSeen {
  name: string;
  role: string;
  serial: string;
  port: string;
  connections: number;
  last: string;
}

/** A registered node's identity, kept fresh until {@link stop}. */
export class NodeIdentity {
  private readonly renewer: CertificateRenewer;
  private readonly reporter: HealthReporter | undefined;
  /** The most recent peers (every SDK client holds its own certificate: not all ever seen). */
  private readonly peers = new BoundedMap<string, PeerSeen>(MAX_PEERS);
  private refused = 0;
  /** The latest refusals, newest last (a refused handshake may be reported twice: its reason, then the hang-up). */
  private readonly refusals: string[] = [];
  private saving: Promise<void> = Promise.resolve();

  private constructor(
    private readonly opts: NodeIdentityOptions,
    /** The TLS material, updated by renewals and CRL refreshes. */
    readonly identity: MtlsIdentity,
    /** Where the certificate came from at start. */
    readonly source: IdentitySource,
    /** The DMS's answer when the node registered at this start (absent when the DMS was unreachable). */
    readonly registration: RegistrationResult | undefined,
  ) {
    this.renewer = new CertificateRenewer({
      identity,
      dmsUrl: opts.dmsUrl,
      dmsServerName: opts.dmsServerName,
      crlRefreshMs: opts.crlRefreshMs,
      onEvent: (e) => (e.kind === 'renewed' ? this.log(`certificate renewed, valid until ${e.notAfter}`, 'info') : this.log(`certificate renewal failed (retrying): ${e.message}`, 'warn')),
    });
    identity.on('update', (m) => this.save(m));
    if (opts.health) {
      this.reporter = new HealthReporter({
        nodeName: opts.nodeName,
        identity,
        dmsUrl: opts.dmsUrl,
        ...(opts.dmsServerName !== undefined && { dmsServerName: opts.dmsServerName }),
        intervalMs: registration?.health_interval_ms ?? DEFAULT_HEALTH_REPORT_MS,
        source: opts.health,
        log: (l, level) => this.log(l, level),
      });
    }
  }

  /** Registers (or reuses the stored certificate), stores the material and starts renewing. */
  static async start(opts: NodeIdentityOptions): Promise<NodeIdentity> {
    const log: LogFn = (l, level) => (opts.log ?? logLine())(`${opts.role} '${opts.nodeName}': ${l}`, level);
    const stored = await readStored(opts.stateDir, opts.wrapKey);
    let result: { id: MtlsIdentity; source: IdentitySource; reg?: RegistrationResult } | undefined;
    const usable = stored && storedProblem(stored, opts) === undefined ? stored : undefined;
    if (stored && !usable) log(`the stored certificate in ${opts.stateDir} is not used: ${storedProblem(stored, opts)}`, 'warn');
    if (usable) {
      const reg = await registerWithDms({ ...common(opts), credentials: { certPem: usable.certPem, keyPem: usable.keyPem } });
      if (reg.success) result = { id: MtlsIdentity.fromRegistration(reg), source: 'stored certificate', reg };
      else if (reg.error_message.startsWith('cannot reach the DMS')) {
        log(`${reg.error_message}; starting with the stored certificate (valid until ${new MtlsIdentity(usable).certificate.notAfter.toISOString()})`, 'warn');
        result = { id: new MtlsIdentity(usable), source: 'stored certificate (DMS unreachable)' };
      } else if (reg.error_code === 'conflict') {
        // The node itself conflicts with the DMS (its MTU mode, its role): no credential changes that.
        throw new Error(`${opts.role} '${opts.nodeName}' cannot register with the DMS at ${opts.dmsUrl}: ${reg.error_message}`);
      } else log(`the stored certificate was refused (${reg.error_message}); registering with the configured credential`, 'warn');
    }
    if (!result) {
      const reg = await registerWithDms({ ...common(opts), credentials: opts.credentials, keyBits: opts.keyBits });
      if (!reg.success) throw new Error(`${opts.role} '${opts.nodeName}' cannot register with the DMS at ${opts.dmsUrl}: ${reg.error_message}`);
      result = { id: MtlsIdentity.fromRegistration(reg), source: 'registration', reg };
    }
    const node = new NodeIdentity(opts, result.id, result.source, result.reg);
    await node.save(result.id.material);
    const c = result.id.certificate;
    log(`mutual TLS identity from ${result.source}: certificate ${c.serial} (${c.organizationalUnit ?? '?'}) valid until ${c.notAfter.toISOString()}, kept in ${opts.stateDir}`, 'info');
    node.renewer.start();
    node.reporter?.start();
    return node;
  }

  /** Stops renewing; resolves once the last material is written. */
  async stop(): Promise<void> {
    this.renewer.stop();
    this.reporter?.stop();
    await this.saving;
  }

  /** Renews now (tests, operators). */
  renewNow(): Promise<string> {
    return this.renewer.renewNow();
  }

  /** Fetches the revocation list now. */
  refreshCrl(): Promise<void> {
    return this.renewer.refreshCrl();
  }

  /** Records a verified peer on one of the node's ports; logs the first connection of each certificate. */
  peerAccepted(peer: { name: string; role: string; serial: string }, port: string): void {
    const key = `${port}|${peer.serial}`;
    const seen = this.peers.get(key);
    const now = new Date().toISOString();
    if (seen) {
      seen.connections++;
      seen.last = now;
      // Set again: the newest, so the bound drops the peer seen longest ago.
      this.peers.set(key, seen);
      return;
    }
    this.peers.set(key, { ...peer, port, connections: 1, last: now });
    this.log(`${port} port: mutual TLS peer ${peer.role} '${peer.name}' (certificate ${peer.serial})`, 'info');
  }

  /** Records a refused peer (wrong role, no verified certificate). */
  peerRefused(reason: string): void {
    this.refused++;
    this.refusals.push(reason);
    if (this.refusals.length > 5) this.refusals.shift();
    // A scanner could flood the log: the first ten, then every hundredth (all are counted in /health).
    if (this.refused <= 10 || this.refused % 100 === 0) this.log(`refused a connection (${this.refused} so far): ${reason}`, 'warn');
  }

  /** The `identity` part of /health. */
  health(): Record<string, unknown> {
    const c = this.identity.certificate;
    return {
      node: this.opts.nodeName,
      role: this.opts.role,
      source: this.source,
      certificate: { serial: c.serial, not_before: c.notBefore.toISOString(), not_after: c.notAfter.toISOString() },
      crl: this.identity.material.crlPem !== undefined,
      peers: [...this.peers.values()],
      refused: this.refused,
      recent_refusals: [...this.refusals],
      ...(this.reporter && { health_reports: this.reporter.reports }),
    };
  }

  private log(line: string, level: LogLevel): void {
    (this.opts.log ?? logLine())(`${this.opts.role} '${this.opts.nodeName}': ${line}`, level);
  }

  private save(m: TlsMaterial): Promise<void> {
    const dir = this.opts.stateDir;
    this.saving = this.saving
      .then(async () => {
        await writeSecretFile(path.join(dir, FILES.key), m.keyPem, this.opts.wrapKey, NODE_KEY_PURPOSE);
        await writeFileAtomic(path.join(dir, FILES.cert), m.certPem, 0o644);
        await writeFileAtomic(path.join(dir, FILES.ca), m.caPem, 0o644);
        if (m.crlPem) await writeFileAtomic(path.join(dir, FILES.crl), m.crlPem, 0o644);
      })
      .catch((err: unknown) => this.log(`cannot store the certificate in ${dir}: ${(err as Error).message}`, 'error'));
    return this.saving;
  }
}

function common(opts: NodeIdentityOptions): Parameters<typeof registerWithDms>[0] {
  return {
    dmsUrl: opts.dmsUrl,
    nodeName: opts.nodeName,
    role: opts.role,
    caCertPem: opts.caCertPem,
    credentials: {},
    ...(opts.dmsServerName !== undefined && { dmsServerName: opts.dmsServerName }),
    ...(opts.addresses !== undefined && { addresses: opts.addresses }),
    ...(opts.cluster !== undefined && { cluster: opts.cluster }),
    ...(opts.mtuMode !== undefined && { mtuMode: opts.mtuMode }),
  };
}

/** The purpose sealed into a node's key file (the same as a sealed PLATFORM_CLIENT_KEY_FILE's). */
export const NODE_KEY_PURPOSE = 'node.key.pem';

/**
 * The material of a state directory, when it holds a key and a certificate; the key opened with
 * `wrapKey` when sealed (a WrapKeyError naming the file when it cannot be).
 */
async function readStored(dir: string, wrapKey: Buffer | undefined): Promise<TlsMaterial | undefined> {
  const missing = (err: NodeJS.ErrnoException): Promise<undefined> => (err.code === 'ENOENT' ? Promise.resolve(undefined) : Promise.reject(err));
  const read = (f: string): Promise<string | undefined> => readFile(path.join(dir, f), 'utf8').catch(missing);
  const readKey = (): Promise<string | undefined> => readSecretFile(path.join(dir, FILES.key), wrapKey, NODE_KEY_PURPOSE).then((k) => k.text, missing);
  const [keyPem, certPem, caPem, crlPem] = await Promise.all([readKey(), read(FILES.cert), read(FILES.ca), read(FILES.crl)]);
  if (keyPem === undefined || certPem === undefined || caPem === undefined) return undefined;
  return { keyPem, certPem, caPem, ...(crlPem !== undefined && { crlPem }) };
}

/** Why stored material cannot be used for this node, or undefined. */
function storedProblem(m: TlsMaterial, opts: NodeIdentityOptions): string | undefined {
  let id: MtlsIdentity;
  try {
    id = new MtlsIdentity(m);
  } catch (err) {
    return (err as Error).message;
  }
  const c = id.certificate;
  if (c.commonName !== opts.nodeName) return `it is for node '${c.commonName}', not '${opts.nodeName}'`;
  if (c.organizationalUnit !== opts.role) return `it is for a ${c.organizationalUnit ?? '?'}, not a ${opts.role}`;
  if (c.notAfter.getTime() <= Date.now()) return `it expired at ${c.notAfter.toISOString()}`;
  // The DMS's CA must be the one configured now: a node moved to another platform registers afresh.
  try {
    new MtlsIdentity({ ...m, caPem: opts.caCertPem });
  } catch {
    return 'it was not issued by the CA of PLATFORM_CA_CERT_PEM';
  }
  return undefined;
}
