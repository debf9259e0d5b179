/**
 * Mutual TLS between HD nodes from the material DMS-CA issued: server and client TLS options that
 * require a certificate chaining to our root, check the revocation list on every connection, and
 * pick up a renewed certificate or a new revocation list without a restart.
 *
 * How the updates reach live listeners: a server's options carry an `SNICallback` that hands every
 * new connection the identity's current secure context (certificate, key, CA, CRL); our clients
 * always send the peer's node name as SNI (they must, to check the peer's name), so every
 * connection is made with the latest material. Client options expose the material through getters,
 * which the HDWP client's `{ ...tls }` spread reads at each connect. Open connections keep the
 * certificate they were made with, as TLS does.
 *
 * @example
 * const id = MtlsIdentity.fromRegistration(reg);
 * new HdwpServer({ ..., tls: serverTlsOptions(id) });
 * await HdwpClient.connect({ ..., tls: clientTlsOptions(id, 'sn-1') });
 */
import { createPublicKey, X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import tls from 'node:tls';
import { peerRoleProblem } from './peerRole';
import { certificateInfo, type CertificateInfo } from './pki/x509';

/** The PEM material of one node's TLS identity. */
export interface TlsMaterial {
  readonly keyPem: string;
  readonly certPem: string;
  /** The CA bundle peers must chain to (DMS-CA's root). */
  readonly caPem: string;
  /** DMS-CA's revocation list; without one no revocation is checked. */
  readonly crlPem?: string;
}

/** Material that does not fit together (a key of another certificate, a certificate of another CA). */
export class MtlsError extends Error {
  override readonly name = 'MtlsError';
}

function checkMaterial(m: TlsMaterial): CertificateInfo {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(m.certPem);
  } catch (err) {
    throw new MtlsError(`the certificate cannot be read: ${(err as Error).message}`);
  }
  const fromKey = createPublicKey(m.keyPem).export({ type: 'spki', format: 'der' });
  if (!fromKey.equals(cert.publicKey.export({ type: 'spki', format: 'der' }))) throw new MtlsError('the private key does not belong to the certificate');
  if (!cert.verify(new X509Certificate(m.caPem).publicKey)) throw new MtlsError('the certificate was not issued by the CA bundle given');
  return certificateInfo(m.certPem);
}

/** Events of {@link MtlsIdentity}. */
export interface MtlsIdentityEvents {
  /** The material changed (renewal, a new revocation list). */
  update: [TlsMaterial];
}

/** One node's TLS identity; every option object made from it follows its updates. */
export class MtlsIdentity extends EventEmitter<MtlsIdentityEvents> {
  private m: TlsMaterial;
  private info: CertificateInfo;
  private ctx: tls.SecureContext | undefined;

  /** Checks the material fits together (key, certificate, CA). */
  constructor(material: TlsMaterial) {
    super();
    this.info = checkMaterial(material);
    this.m = material;
  }

  /** From a registration answer (registerWithDms's result). */
  static fromRegistration(r: { client_key_pem: string; signed_cert_pem: string; ca_cert_pem: string; crl_pem?: string }): MtlsIdentity {
    return new MtlsIdentity({ keyPem: r.client_key_pem, certPem: r.signed_cert_pem, caPem: r.ca_cert_pem, ...(r.crl_pem ? { crlPem: r.crl_pem } : {}) });
  }

  /** The current material. */
  get material(): TlsMaterial {
    return this.m;
  }

  /** Name (CN), role (OU), serial and validity of the current certificate. */
  get certificate(): CertificateInfo {
    return this.info;
  }

  /** Replaces parts of the material (a renewed certificate and key, a new CRL); new connections use it. */
  update(change: Partial<TlsMaterial>): void {
    const next = { ...this.m, ...change };
    this.info = checkMaterial(next);
    this.m = next;
    this.ctx = undefined;
    this.emit('update', next);
  }

  /** The secure context of the current material (built once per update). */
  secureContext(): tls.SecureContext {
    this.ctx ??= tls.createSecureContext(contextOptions(this.m));
    return this.ctx;
  }
}

function contextOptions(m: TlsMaterial): tls.SecureContextOptions {
  return { key: m.keyPem, cert: m.certPem, ca: m.caPem, ...(m.crlPem ? { crl: m.crlPem } : {}), minVersion: 'TLSv1.2' };
}

/** Options of {@link serverTlsOptions}. */
export interface ServerTlsOptions {
  /** Refuse clients without a valid certificate from our CA (default true: mutual TLS). */
  readonly requireClientCert?: boolean;
}

/**
 * TLS server options: our certificate, client certificates requested and verified against our CA
 * and revocation list (refused in the handshake otherwise), the latest material per connection.
 */
export function serverTlsOptions(id: MtlsIdentity, opts: ServerTlsOptions = {}): tls.TlsOptions {
  return {
    ...contextOptions(id.material),
    requestCert: true,
    rejectUnauthorized: opts.requireClientCert ?? true,
    SNICallback: (_servername, cb) => {
      try {
        cb(null, id.secureContext());
      } catch (err) {
        cb(err as Error, undefined);
      }
    },
  };
}

/**
 * TLS client options: our certificate, the server verified against our CA and revocation list, its
 * certificate's name checked against `peerName` (the node name; sent as SNI too) and its role (OU)
 * against `roles` when given (a Storage Node for an SCC's links: a `client` certificate of the same
 * CA named like the peer is refused). Without a peer name, any name is accepted for the address.
 */
export function clientTlsOptions(id: MtlsIdentity, peerName?: string, roles?: readonly string[]): tls.ConnectionOptions {
  const o: tls.ConnectionOptions = {
    // The identity's context, built once per material: given only the PEM texts, every connection
    // parses them into a new context, 1-3 ms of CPU per result stream or control call. The texts
    // stay beside it (the context wins in the handshake): caches key connections and sessions by
    // the certificate presented (lib/tlsSessions.ts `certKey`). A caller presenting other material
    // sets `secureContext: undefined` with its own key and certificate.
    get secureContext() {
      return id.secureContext();
    },
    get key() {
      return id.material.keyPem;
    },
    get cert() {
      return id.material.certPem;
    },
    get ca() {
      return id.material.caPem;
    },
    get crl() {
      return id.material.crlPem;
    },
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
  };
  const role = (cert: tls.PeerCertificate): Error | undefined => (roles ? peerRoleProblem(cert, roles) : undefined);
  if (peerName !== undefined) {
    o.servername = peerName;
    o.checkServerIdentity = (_host, cert) => tls.checkServerIdentity(peerName, cert) ?? role(cert);
  } else {
    // Addresses are not in every certificate; the chain (our CA) and the role are what is checked then.
    o.checkServerIdentity = (_host, cert) => role(cert);
  }
  return o;
}

/** The verified peer of a TLS socket (name and role), or undefined when it presented none we trust. */
export function peerIdentity(socket: tls.TLSSocket): { name: string; role: string; serial: string } | undefined {
  if (!socket.authorized) return undefined;
  const c = socket.getPeerCertificate();
  if (!c?.subject) return undefined;
  const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
  return { name: one(c.subject.CN), role: one(c.subject.OU), serial: c.serialNumber.toLowerCase().replace(/^0+(?=.)/, '') };
}
