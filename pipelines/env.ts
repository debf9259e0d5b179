/**
 * `${VAR}` / `${VAR:-default}` substitution in pipeline setting values, resolved once at load.
 * `$$` writes a literal `$`.
 */

/** Where variable values come from, first match wins. */
export type VarLookup = (name: string) => string | undefined;

/** The result of substituting one string: the text, or the problems found in it. */
export type Substituted =
  | { ok: true; text: string; substituted: boolean; /** Variables referenced, in order (for messages naming them). */ vars: string[] }
  | { ok: false; problems: { index: number; message: string }[] };

const REF = /\$\$|\$\{([^}]*)\}|\$\{/g;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Replaces every reference in `text`; `index` in a problem is the offset of the reference. */
export function substitute(text: string, lookup: VarLookup): Substituted {
  const problems: { index: number; message: string }[] = [];
  let substituted = false;
  const vars: string[] = [];
  const out = text.replace(REF, (match: string, body: string | undefined, index: number) => {
    if (match === '$$') return '$';
    substituted = true;
    if (body === undefined) {
      problems.push({ index, message: "unclosed '${': write ${NAME} or ${NAME:-default}" });
      return '';
    }
    const sep = body.indexOf(':-');
    const name = sep >= 0 ? body.slice(0, sep) : body;
    if (!NAME.test(name)) {
      problems.push({ index, message: `'${match}' is not a variable reference: a name is letters, digits and _, not starting with a digit` });
      return '';
    }
    if (!vars.includes(name)) vars.push(name);
    const v = lookup(name);
    if (v !== undefined) return v;
    if (sep >= 0) return body.slice(sep + 2);
    problems.push({ index, message: `environment variable ${name} is not set and has no default (write \${${name}:-value} to give one)` });
    return '';
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, text: out, substituted, vars };
}
