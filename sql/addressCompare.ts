/**
 * One comparison with an address (or a 256-bit integer) among its operands, made to compare as the
 * reference says: ipv4 / ipv6 on the underlying integer, 256-bit integers exactly.
 *
 * - Equality (`=`, `<>`, `IS [NOT] DISTINCT FROM`, `IN`) with literals stays a text comparison, the
 *   fast one: a column presents exactly one text per integer, so the literal is replaced by that
 *   text (`'2001:DB8:0::1'` → `'2001:db8::1'`), and equality of text is equality of integers.
 * - Order (`<`, `<=`, `>`, `>=`, `BETWEEN`) compares keys: `hd_inet4_key(col)` (sql/addressFunctions.ts)
 *   against the literal's integer, computed here.
 * - A bound parameter is converted like a literal when the statement is planned with its value
 *   (`CASE WHEN $n IS NULL THEN NULL ELSE <converted> END` keeps `$n` in the statement); planned
 *   without values (a Describe) the comparison keys the parameter with the macro.
 * - A literal that is not an address of the column's kind fails the statement (42000), naming it,
 *   as PostgreSQL refuses `inet` input it cannot read. A double literal (an integer literal beyond
 *   2^127 parses as one) compared with a 256-bit column fails too: it would compare inexactly.
 * Operands of any other shape (another expression, a COLLATE, a cast) leave the comparison as DuckDB
 * evaluates it.
 */
import type { BigJsonValue } from './bigJson';
import { boundParameter, keyCall, keyConstant, textConstant } from './addressNodes';
import type { OrderKind } from './addressScope';
import { addressLiteral, ipv4Value, type AddressKind } from './inetAddress';
import { isNode, type Node } from './pushdown';
import { SqlError } from './sqlError';

/** How one operand takes part. */
type Operand = { readonly t: 'address' | 'null' | 'other' } | { readonly t: 'literal'; readonly value: bigint; readonly text: string } | { readonly t: 'param'; readonly value?: { value: bigint; text: string } | null };

const NAMES: Readonly<Record<AddressKind, string>> = { ipv4: 'IPv4', ipv6: 'IPv6' };

/** A short name of an operand for messages. */
function labelOf(e: BigJsonValue | undefined): string {
  return isNode(e) && e.type === 'COLUMN_REF' && Array.isArray(e.column_names) ? e.column_names.map(String).join('.') : 'the expression';
}

function notAnAddress(kind: AddressKind, label: string, what: string, text: string): SqlError {
  const mapped = kind === 'ipv6' && ipv4Value(text) !== undefined ? ` (an IPv4 address reads ::ffff:${text} in an ipv6 column)` : '';
  return new SqlError('query_failed', `${label} is an ${kind} address and compares on its integer: ${what} ${JSON.stringify(text)} is not an ${NAMES[kind]} address${mapped}`);
}

function classify(e: BigJsonValue, kind: OrderKind | undefined, k: AddressKind, label: string, params: readonly unknown[]): Operand {
  if (kind === k) return { t: 'address' };
  if (!isNode(e)) return { t: 'other' };
  if (e.type === 'VALUE_CONSTANT' && isNode(e.value)) {
    if (e.value.is_null === true) return { t: 'null' };
    const v = e.value.value;
    if (!isNode(e.value.type) || e.value.type.id !== 'VARCHAR' || typeof v !== 'string') return { t: 'other' };
    const a = addressLiteral(k, v);
    if (!a) throw notAnAddress(k, label, 'the literal', v);
    return { t: 'literal', ...a };
  }
  if (e.type === 'VALUE_PARAMETER') {
    const n = Number(e.identifier);
    if (params.length === 0 || !(n >= 1 && n <= params.length)) return { t: 'param' };
    const p = params[n - 1];
    if (p === null || p === undefined) return { t: 'param', value: null };
    if (typeof p !== 'string') throw new SqlError('query_failed', `${label} is an ${k} address and compares on its integer: bind parameter $${n} as the address's text, got ${typeof p}`);
    const a = addressLiteral(k, p);
    if (!a) throw notAnAddress(k, label, `parameter $${n}`, p);
    return { t: 'param', value: a };
  }
  return { t: 'other' };
}

/** Refuses a double constant among `operands` of a 256-bit comparison. */
function exactOnly(operands: readonly BigJsonValue[], label: string): void {
  for (const e of operands) {
    if (isNode(e) && e.type === 'VALUE_CONSTANT' && isNode(e.value) && isNode(e.value.type) && (e.value.type.id === 'DOUBLE' || e.value.type.id === 'FLOAT')) {
      throw new SqlError('query_failed', `${label} is a 256-bit integer and compares exactly: the literal ${String(e.value.value)} parsed as a double (an integer literal beyond 2^127 does); write it in quotes, e.g. '115792089237316195423570985008687907853269984665640564039457584007913129639935'`);
    }
  }
}

/**
 * The operands of one comparison (already rewritten inside) made to compare as `kind` does, or
 * undefined when the comparison stays as it is. `kinds` are the operands' own kinds; `equality`
 * says whether it compares for equality only.
 * @throws SqlError `query_failed` for a literal or bound parameter that is not an address of the kind, or an inexact 256-bit literal.
 */
export function comparedOperands(kind: OrderKind, operands: readonly BigJsonValue[], kinds: readonly (OrderKind | undefined)[], equality: boolean, params: readonly unknown[]): BigJsonValue[] | undefined {
  const at = kinds.findIndex((x) => x === kind);
  const label = labelOf(operands[at]);
  if (kind === 'int256') {
    exactOnly(operands, label);
    return undefined;
  }
  const ops = operands.map((e, i) => classify(e, kinds[i], kind, label, params));
  if (ops.some((o) => o.t === 'other')) return undefined;
  const unboundParam = ops.some((o) => o.t === 'param' && o.value === undefined);
  if (equality) {
    if (unboundParam) return undefined; // a Describe: the types are the same either way
    return operands.map((e, i) => {
      const o = ops[i] as Operand;
      if (o.t === 'literal') return isNode(e) && isNode(e.value) && e.value.value === o.text ? e : textConstant(o.text);
      if (o.t === 'param') return boundParameter(e as Node, textConstant(o.value?.text ?? ''));
      return e;
    });
  }
  return operands.map((e, i) => {
    const o = ops[i] as Operand;
    switch (o.t) {
      case 'address':
        return keyCall(kind, e);
      case 'literal':
        return keyConstant(kind, o.value);
      case 'param':
        return o.value === undefined ? keyCall(kind, e) : boundParameter(e as Node, keyConstant(kind, o.value?.value ?? 0n));
      default:
        return e;
    }
  });
}
