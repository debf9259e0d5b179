/**
 * The Proxy's active policy, swapped atomically. A query reads the slot once and evaluates that
 * policy whole: it sees the old rules or the new, never a mix. A policy that does not compile never
 * reaches the slot, so the old one stays.
 */
import { CompiledPolicy, PolicyError } from '../../engine-rs/policy';
import { asObject, onlyKeys, optInt, reqString } from '../http/body';
import { HttpError } from '../http/errors';

/** An installed policy. */
export interface ActivePolicy {
  readonly version: number;
  readonly policy: CompiledPolicy;
  readonly installedAt: string;
}

/** The body of `POST /v1/proxy/config` (and of the DMS's stored policy). */
export interface PolicyConfig {
  readonly version: number;
  readonly rego: string;
  readonly data?: Record<string, unknown>;
}

/** Largest policy source accepted. */
export const MAX_REGO_CHARS = 512 * 1024;

/** Checks a config body: `{version, rego, data?}`; throws invalid_request naming the key. */
export function readPolicyConfig(raw: unknown): PolicyConfig {
  const o = asObject(raw);
  onlyKeys(o, ['version', 'rego', 'data']);
  const version = optInt(o, 'version', 1, Number.MAX_SAFE_INTEGER);
  if (version === undefined) throw new HttpError('invalid_request', "'version' is required: an integer ≥ 1 that grows with every policy");
  const rego = reqString(o, 'rego', { max: MAX_REGO_CHARS });
  const data = o.data === undefined ? undefined : asObject(o.data, "'data'");
  return { version, rego, ...(data && { data }) };
}

/** Compiles a config; a policy that does not compile is 400 invalid_policy with the compiler's message. */
export function compileConfig(c: PolicyConfig): CompiledPolicy {
  try {
    return CompiledPolicy.compile(c.rego, c.data);
  } catch (err) {
    if (err instanceof PolicyError) throw new HttpError('invalid_policy', `the policy does not compile: ${err.message}`);
    throw err;
  }
}

/** Holds the active policy. */
export class PolicySlot {
  private active: ActivePolicy | undefined;

  /** The policy a query evaluates (read once per query). */
  current(): ActivePolicy | undefined {
    return this.active;
  }

  /**
   * Compiles and installs `c`. An older or equal version than the active one is refused (409: a
   * delayed push must not roll the policy back); a policy that does not compile is refused (400)
   * and the active one stays.
   */
  install(c: PolicyConfig): { version: number; previous: number } {
    const previous = this.active?.version ?? 0;
    if (c.version <= previous) throw new HttpError('conflict', `policy version ${c.version} is not newer than the active version ${previous}`);
    const policy = compileConfig(c);
    this.active = { version: c.version, policy, installedAt: new Date().toISOString() };
    return { version: c.version, previous };
  }
}
