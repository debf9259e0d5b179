import { SCC_VARIABLES } from '../../nodes/scc/settings';
import type { Setting } from '../../pipelines/settings';

/**
 * A stage setting that carries one of the reference's SCC environment variables
 * (nodes/scc/settings.ts): the same parser, the same default (also for a variable set but empty),
 * so `${PRODUCTION_PORT:-6987}` in pipelines/scc.yaml is checked exactly as the variable is, and a
 * bad value's message names the variable (the loader adds "(from PRODUCTION_PORT)").
 *
 * @param name the variable, e.g. `MAX_HASH_QUEUE_BYTES`
 * @param doc one line for listings; defaults to the variable's own
 */
export function sccSetting<T>(name: string, doc?: string): Setting<T> {
  const def = SCC_VARIABLES.find((v) => v.name === name);
  if (!def) throw new Error(`${name} is not an SCC variable`);
  const fallback = def.parse(def.default);
  return {
    expects: `${name}: ${def.doc}`,
    doc: doc ?? `${def.doc} — ${name}`,
    required: false,
    fallback: fallback.ok ? (fallback.value as T) : undefined,
    parse(v) {
      if (typeof v.value !== 'string' && typeof v.value !== 'number' && typeof v.value !== 'boolean') return { ok: false, expected: `${name}: ${def.doc}` };
      const text = String(v.value).trim();
      const r = def.parse(text === '' ? def.default : text);
      return r.ok ? { ok: true, value: r.value as T } : { ok: false, expected: r.expected };
    },
  };
}

/**
 * Like {@link sccSetting}, but a variable left empty gives `undefined` rather than its default: the
 * operator did not set it, so a registered SCC takes the DMS's value (docs/scc.md, "Configuration
 * from the DMS") and only then the variable's default.
 *
 * @param name the variable, e.g. `RECORD_SIZE`
 * @param doc one line for listings
 */
export function optionalSccSetting<T>(name: string, doc: string): Setting<T | undefined> {
  const inner = sccSetting<T>(name, doc);
  return {
    ...inner,
    fallback: undefined,
    parse(v, ctx) {
      if (v.value === '' || v.value === undefined || v.value === null) return { ok: true, value: undefined };
      return inner.parse(v, ctx);
    },
  };
}
