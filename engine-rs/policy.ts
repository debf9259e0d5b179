/**
 * The HD Proxy's Rego policy, compiled and evaluated natively by regorus (engine-rs/core/src/policy),
 * and the record field mask that hides fields in records (docs/proxy.md).
 */
import { native, type PolicyHandle } from './native';

/** A policy that does not compile, or an evaluation that failed (the message is regorus's). */
export class PolicyError extends Error {
  /** `ERR_POLICY` (compile), `ERR_POLICY_EVAL` (evaluation) or `ERR_POLICY_RESULT` (a result of the wrong shape). */
  readonly code: string;

  /** @param code the failure kind; @param message what went wrong */
  constructor(code: string, message: string) {
    super(message);
    this.name = 'PolicyError';
    this.code = code;
  }
}

/** A constraint the policy enforces on every branch of a query: `field` equal to `value` under `mask`. */
export interface PolicyConstraint {
  readonly field: string;
  /** The value in the field's text form (docs/query.md, "Filter"). */
  readonly value: string;
  /** Hex bytes, the field's size; absent: all 0xff (plain equality). */
  readonly mask?: string;
}

/** What a policy decided for one identity and query. */
export interface PolicyDecision {
  /** False: the identity sees nothing of the dataset (every branch unmatchable, every field hidden). */
  readonly allow: boolean;
  readonly hiddenFields: readonly string[];
  readonly constraints: readonly PolicyConstraint[];
}

function codeOf(err: unknown): string {
  const c = (err as { code?: unknown }).code;
  return typeof c === 'string' ? c : 'ERR_POLICY';
}

function stringList(v: unknown, what: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new PolicyError('ERR_POLICY_RESULT', `${what} must be a set of strings, got ${JSON.stringify(v).slice(0, 80)}`);
  return v as string[];
}

function constraintList(v: unknown): PolicyConstraint[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new PolicyError('ERR_POLICY_RESULT', `constraints must be a set of {field, value, mask?}, got ${JSON.stringify(v).slice(0, 80)}`);
  return v.map((c, i) => {
    const o = c as Record<string, unknown>;
    const ok = typeof o === 'object' && o !== null && typeof o.field === 'string' && (typeof o.value === 'string' || typeof o.value === 'number') && (o.mask === undefined || typeof o.mask === 'string');
    if (!ok) throw new PolicyError('ERR_POLICY_RESULT', `constraints[${i}] must be {field: string, value: string, mask?: hex}, got ${JSON.stringify(c).slice(0, 80)}`);
    return { field: o.field as string, value: String(o.value), ...(o.mask !== undefined && { mask: o.mask as string }) };
  });
}

/**
 * A compiled policy (package `hd.authz`). Immutable: swapping policies means swapping the object,
 * so an evaluation sees one policy whole.
 *
 * @example
 * const p = CompiledPolicy.compile(rego, { hidden: { guest: ['src_ip'] } });
 * const d = p.evaluate({ role: 'guest', email: 'g@x', dataset: 'flows' });
 */
export class CompiledPolicy {
  private constructor(
    private readonly handle: PolicyHandle,
    /** The Rego source. */
    readonly rego: string,
  ) {}

  /** Compiles `rego` with optional `data`; throws {@link PolicyError} with the compiler's message. */
  static compile(rego: string, data?: Record<string, unknown>): CompiledPolicy {
    try {
      return new CompiledPolicy(native.policyCompile(rego, data === undefined ? null : JSON.stringify(data)), rego);
    } catch (err) {
      throw new PolicyError(codeOf(err), (err as Error).message);
    }
  }

  /** The package's raw value for `input` (every rule the input defines). */
  evaluateRaw(input: unknown): Record<string, unknown> {
    let json: string;
    try {
      json = native.policyEvaluate(this.handle, JSON.stringify(input));
    } catch (err) {
      throw new PolicyError(codeOf(err), (err as Error).message);
    }
    return JSON.parse(json) as Record<string, unknown>;
  }

  /** The decision for `input`; throws {@link PolicyError} when evaluation fails or a rule has the wrong shape. */
  evaluate(input: unknown): PolicyDecision {
    const v = this.evaluateRaw(input);
    if (v.allow !== undefined && typeof v.allow !== 'boolean') throw new PolicyError('ERR_POLICY_RESULT', `allow must be a boolean, got ${JSON.stringify(v.allow)}`);
    return { allow: v.allow !== false, hiddenFields: stringList(v.hidden_fields, 'hidden_fields'), constraints: constraintList(v.constraints) };
  }
}

/**
 * ANDs every record of `records` with `mask` (one record long: 0xff visible, 0x00 hidden), in place.
 * One native call per chunk; throws when `records` is not whole records of the mask's length.
 */
export function applyFieldMask(records: Buffer, mask: Buffer): void {
  try {
    native.policyApplyFieldMask(records, mask);
  } catch (err) {
    throw new RangeError((err as Error).message);
  }
}
