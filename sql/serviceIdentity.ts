/**
 * hd_sql's DMS-CA identity (the HD_DMS_* files), kept fresh while it runs: the certificate is
 * renewed with the DMS two thirds into its lifetime (the registered nodes' CertificateRenewer, same
 * key) and the renewed one is written back to HD_DMS_CLIENT_CERT_FILE, so a restart starts from it.
 * Everything hd_sql presents the certificate with reads it through {@link ServiceIdentity.tls},
 * whose fields always give the current material: the Proxy calls, the gRPC channels to the SCCs
 * (a new certificate gets a new channel), the result listener (its context is swapped before the
 * next query) and the health reports. Without renewal the certificate (24 h by default) expired
 * under a long-running hd_sql and every read failed until a restart.
 */
import { readFileSync } from 'node:fs';
import { writeFileAtomic } from '../lib/atomicFile';
import { MtlsIdentity } from '../net/mtls';
import { CertificateRenewer } from '../net/renewal';
import type { ControlTls } from '../sdk/proxyClient';
import { readClientKey, type DmsSchemaSource } from './schemaSources';

/** A running identity: the material, its live view for the clients, and how to stop renewing. */
export interface ServiceIdentity {
  readonly identity: MtlsIdentity;
  /** CA bundle, certificate and key; each read gives the current material. */
  readonly tls: Required<Pick<ControlTls, 'ca' | 'cert' | 'key'>>;
  /** Renews now (for tests and operators); resolves with the new certificate's expiry. */
  renewNow(): Promise<string>;
  stop(): void;
}

/** Options of {@link startServiceIdentity}. */
export interface ServiceIdentityOptions {
  readonly log: (line: string) => void;
  /** When to renew first; default two thirds into the certificate's lifetime. */
  readonly renewAfter?: Date;
  /** Revocation-list refresh period; default 5 minutes. */
  readonly crlRefreshMs?: number;
}

/** Reads the files, starts renewing; throws when they do not fit together (naming the files). */
export function startServiceIdentity(src: DmsSchemaSource, opts: ServiceIdentityOptions): ServiceIdentity {
  let identity: MtlsIdentity;
  try {
    identity = new MtlsIdentity({ keyPem: readClientKey(src.keyFile), certPem: readFileSync(src.certFile, 'utf8'), caPem: readFileSync(src.caFile, 'utf8') });
  } catch (err) {
    throw new Error(`HD_DMS_CLIENT_CERT_FILE (${src.certFile}), HD_DMS_CLIENT_KEY_FILE and HD_DMS_CA_FILE do not make a usable identity: ${(err as Error).message}`);
  }
  const renewer = new CertificateRenewer({
    identity,
    dmsUrl: src.endpoint,
    ...(opts.renewAfter && { renewAfter: opts.renewAfter }),
    ...(opts.crlRefreshMs !== undefined && { crlRefreshMs: opts.crlRefreshMs }),
    onEvent: (e) => {
      if (e.kind === 'failed') {
        opts.log(`certificate renewal failed (retrying): ${e.message}`);
        return;
      }
      opts.log(`certificate renewed, valid until ${e.notAfter}; written to ${src.certFile}`);
      writeFileAtomic(src.certFile, identity.material.certPem, 0o644).catch((err: Error) => opts.log(`could not write the renewed certificate to ${src.certFile}: ${err.message}`));
    },
  });
  renewer.start();
  const tls = {
    get ca(): string {
      return identity.material.caPem;
    },
    get cert(): string {
      return identity.material.certPem;
    },
    get key(): string {
      return identity.material.keyPem;
    },
  };
  return { identity, tls, renewNow: () => renewer.renewNow(), stop: () => renewer.stop() };
}
