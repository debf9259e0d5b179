/**
 * The registration credentials DMS-Core accepts besides a client certificate: single-use bootstrap
 * tokens it issued itself, and Kubernetes service-account tokens (JWTs verified against the
 * configured issuer's public key). Precedence is decided in registration.ts.
 */
import { createHash, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { jwtVerify, errors as joseErrors } from 'jose';
import { HttpError } from '../http/errors';
import { NODE_ROLES, type NodeRole } from './state';

/** Bootstrap tokens look like `hdbt.<43 base64url characters>` (256 random bits). */
export const BOOTSTRAP_TOKEN_PATTERN = /^hdbt\.[A-Za-z0-9_-]{43}$/;

/** A new bootstrap token and the hash it is stored under. */
export function newBootstrapToken(): { token: string; hash: string } {
  const token = `hdbt.${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashToken(token) };
}

/** The SHA-256 (hex) a bootstrap token is stored and looked up by; the token itself is never stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** How Kubernetes service-account tokens are checked. */
export interface K8sTokenConfig {
  /** Expected `iss` (the cluster's service-account issuer URL). */
  readonly issuer: string;
  /** The issuer's public key (PEM SubjectPublicKeyInfo, RSA or EC). */
  readonly publicKeyPem: string;
  /** Expected `aud`; default `hd-dms`. */
  readonly audience: string;
  /**
   * The service accounts that may register and the role each registers as (DMS_K8S_SERVICE_ACCOUNTS):
   * `namespace/name=role` entries; an entry without `=role` is a `client` account. Empty: no
   * account may register (a token is refused naming the setting).
   */
  readonly serviceAccounts: readonly string[];
}

/**
 * Reads DMS_K8S_SERVICE_ACCOUNTS entries (`namespace/name=role`, or `namespace/name` for a client)
 * into a map from account to role; throws naming the bad entry.
 */
export function serviceAccountRoles(entries: readonly string[]): Map<string, NodeRole> {
  const out = new Map<string, NodeRole>();
  for (const e of entries) {
    const m = /^([^/=\s]+\/[^/=\s]+)(?:=(\S+))?$/.exec(e.trim());
    if (!m) throw new Error(`DMS_K8S_SERVICE_ACCOUNTS: ${JSON.stringify(e)} is not namespace/name or namespace/name=role`);
    const role = m[2] ?? 'client';
    if (!(NODE_ROLES as readonly string[]).includes(role)) throw new Error(`DMS_K8S_SERVICE_ACCOUNTS: ${JSON.stringify(e)}: the role must be one of ${NODE_ROLES.join(', ')}`);
    out.set(m[1], role as NodeRole);
  }
  return out;
}

/** What a verified service-account token says. */
export interface K8sIdentity {
  /** `namespace/name` of the service account. */
  readonly serviceAccount: string;
  /** The role DMS_K8S_SERVICE_ACCOUNTS gives the account. */
  readonly role: NodeRole;
  /** The pod the token was projected into: the only node name the token may register. */
  readonly podName: string;
}

/** Verifies Kubernetes service-account JWTs. */
export class K8sTokenVerifier {
  private readonly key: KeyObject;
  private readonly roles: Map<string, NodeRole>;

  /** @param config issuer, its key, audience and accounts (the key and the accounts are read here: a bad one fails at start) */
  constructor(private readonly config: K8sTokenConfig) {
    this.key = createPublicKey(config.publicKeyPem);
    this.roles = serviceAccountRoles(config.serviceAccounts);
  }

  /** Verifies signature, issuer, audience and expiry; throws an `unauthenticated` HttpError otherwise. */
  async verify(token: string): Promise<K8sIdentity> {
    let payload: Record<string, unknown>;
    try {
      const r = await jwtVerify(token, this.key, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'],
        requiredClaims: ['exp', 'sub'],
      });
      payload = r.payload as Record<string, unknown>;
    } catch (err) {
      const why = err instanceof joseErrors.JWTExpired ? 'it has expired' : err instanceof joseErrors.JWTClaimValidationFailed ? `claim ${err.claim} is wrong (${err.reason})` : (err as Error).message;
      throw new HttpError('unauthenticated', `k8s_token refused: ${why}`);
    }
    const sub = String(payload.sub);
    const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(sub);
    if (!m) throw new HttpError('unauthenticated', `k8s_token refused: sub ${JSON.stringify(sub)} is not a service account`);
    const serviceAccount = `${m[1]}/${m[2]}`;
    const role = this.roles.get(serviceAccount);
    if (role === undefined) throw new HttpError('forbidden', `service account ${serviceAccount} may not register nodes (it is not in DMS_K8S_SERVICE_ACCOUNTS as namespace/name=role)`);
    const k8s = payload['kubernetes.io'] as { pod?: { name?: unknown } } | undefined;
    const podName = typeof k8s?.pod?.name === 'string' ? k8s.pod.name : undefined;
    // The pod's name is the node name: a token that names no pod could be used for any node.
    if (podName === undefined) throw new HttpError('unauthenticated', 'k8s_token refused: it names no pod (use a projected service-account token: the pod name is the node name)');
    return { serviceAccount, role, podName };
  }
}
