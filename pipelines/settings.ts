/**
 * Validation helpers for stage settings. A stage type declares its settings as a spec of
 * {@link Setting}s; {@link validateSettings} checks the values from a pipeline file against it and
 * returns a typed config, reporting every problem at the line and column of the offending value.
 */
import path from 'node:path';
import { closest } from '../lib/suggest';

/** A 1-based position in a pipeline file. */
export interface Pos {
  readonly line: number;
  readonly col: number;
}

/** One problem found in a pipeline file. */
export interface Problem extends Pos {
  readonly file: string;
  readonly message: string;
}

/** A setting's value as read from the file, with where it was written. */
export interface SettingValue {
  readonly value: unknown;
  readonly pos: Pos;
  /** True when the text came (wholly or partly) from `${VAR}` substitution, so numbers may arrive as strings. */
  readonly substituted: boolean;
  /** The `${VAR}` names the value came from, so a bad value's message can name the variable to fix. */
  readonly vars?: readonly string[];
}

/** What a setting parser may use besides the value. */
export interface SettingContext {
  /** Directory of the pipeline file; relative paths resolve against it. */
  readonly baseDir: string;
}

/** The outcome of parsing one value: the value, or what was expected. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; expected: string };

/** One declared setting of a stage type. */
export interface Setting<T> {
  /** Short description of accepted values, used in messages and the docs ("integer 4096..4194304"). */
  readonly expects: string;
  /** One-line meaning, for `hd validate --explain` style listings and docs. */
  readonly doc: string;
  readonly required: boolean;
  /** Used when the setting is absent (only for optional settings). */
  readonly fallback?: T;
  parse(v: SettingValue, ctx: SettingContext): Parsed<T>;
}

/** A stage type's settings: name → setting. */
export type SettingsSpec = Record<string, Setting<unknown>>;

/** The typed config a spec validates to. */
export type ConfigOf<S extends SettingsSpec> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

interface Common<T> {
  doc: string;
  /** Absent means the setting is required. */
  default?: T;
}

function make<T>(expects: string, o: Common<T>, parse: (v: SettingValue, ctx: SettingContext) => Parsed<T>): Setting<T> {
  return { expects, doc: o.doc, required: !('default' in o), fallback: o.default, parse };
}

const fail = <T>(expected: string): Parsed<T> => ({ ok: false, expected });
const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });

/** Numbers written as strings are accepted only when they came from `${VAR}` substitution. */
function numeric(v: SettingValue): number | undefined {
  if (typeof v.value === 'number') return v.value;
  if (v.substituted && typeof v.value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v.value)) return Number(v.value);
  return undefined;
}

/** A string setting (non-empty unless `allowEmpty`). */
export function str(o: Common<string> & { allowEmpty?: boolean }): Setting<string> {
  return make('a string', o, (v) => {
    if (typeof v.value !== 'string') return fail('a string');
    if (!o.allowEmpty && v.value === '') return fail('a non-empty string');
    return ok(v.value);
  });
}

/** An integer setting within `min..max`. */
export function int(o: Common<number> & { min?: number; max?: number }): Setting<number> {
  const min = o.min ?? Number.MIN_SAFE_INTEGER;
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  const expects = `an integer ${o.min ?? '…'}..${o.max ?? '…'}`;
  return make(expects, o, (v) => {
    const n = numeric(v);
    if (n === undefined || !Number.isSafeInteger(n) || n < min || n > max) return fail(expects);
    return ok(n);
  });
}

/** A boolean setting. */
export function bool(o: Common<boolean>): Setting<boolean> {
  return make('true or false', o, (v) => {
    if (typeof v.value === 'boolean') return ok(v.value);
    if (v.substituted && (v.value === 'true' || v.value === 'false')) return ok(v.value === 'true');
    return fail('true or false');
  });
}

/** One of a fixed list of strings. */
export function oneOf<const V extends string>(values: readonly V[], o: Common<V>): Setting<V> {
  const expects = `one of ${values.map((x) => `'${x}'`).join(', ')}`;
  return make(expects, o, (v) => {
    if (typeof v.value !== 'string' || !(values as readonly string[]).includes(v.value)) {
      const hint = typeof v.value === 'string' ? closest(v.value, values) : undefined;
      return fail(hint ? `${expects} (did you mean '${hint}'?)` : expects);
    }
    return ok(v.value as V);
  });
}

/** A file path; relative paths resolve against the pipeline file's directory. */
export function filePath(o: Common<string>): Setting<string> {
  return make('a file path', o, (v, ctx) => {
    if (typeof v.value !== 'string' || v.value === '') return fail('a file path');
    return ok(path.resolve(ctx.baseDir, v.value));
  });
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3 };

/** A byte size: an integer or a string such as `1MiB`, `256KiB`, `64kb`, within `min..max`. */
export function byteSize(o: Common<number> & { min: number; max: number }): Setting<number> {
  const expects = `a byte size ${o.min}..${o.max} (an integer, or a number with KiB, MiB, kB or MB)`;
  return make(expects, o, (v) => {
    let n = numeric(v);
    if (n === undefined && typeof v.value === 'string') {
      const m = /^\s*(\d+)\s*([a-zA-Z]*)\s*$/.exec(v.value);
      const unit = m ? SIZE_UNITS[m[2].toLowerCase()] : undefined;
      if (m && unit !== undefined) n = Number(m[1]) * unit;
    }
    if (n === undefined || !Number.isSafeInteger(n) || n < o.min || n > o.max) return fail(expects);
    return ok(n);
  });
}

/**
 * Checks `values` against `spec`: unknown settings (with the closest known name), missing required
 * ones, and each value's type and range. Every problem goes to `report`; the config is returned only
 * when there were none.
 */
export function validateSettings<S extends SettingsSpec>(
  spec: S,
  values: ReadonlyMap<string, SettingValue & { keyPos: Pos }>,
  where: { stageType: string; stagePos: Pos; ctx: SettingContext; kind?: 'stage' | 'service' },
  report: (pos: Pos, message: string) => void,
): ConfigOf<S> | undefined {
  let bad = false;
  const known = Object.keys(spec);
  const out: Record<string, unknown> = {};
  for (const [name, v] of values) {
    if (!Object.prototype.hasOwnProperty.call(spec, name)) {
      bad = true;
      const hint = closest(name, known);
      const list = known.length > 0 ? `expected one of: ${known.join(', ')}` : 'it takes no settings';
      report(v.keyPos, `unknown setting '${name}' for ${where.kind ?? 'stage'} type '${where.stageType}'${hint ? ` (did you mean '${hint}'?)` : ''}; ${list}`);
    }
  }
  for (const [name, setting] of Object.entries(spec)) {
    const v = values.get(name);
    if (v === undefined) {
      if (setting.required) {
        bad = true;
        report(where.stagePos, `${where.kind ?? 'stage'} type '${where.stageType}' needs setting '${name}': ${setting.expects} (${setting.doc})`);
      } else {
        out[name] = setting.fallback;
      }
      continue;
    }
    const r = setting.parse(v, where.ctx);
    if (r.ok) out[name] = r.value;
    else {
      bad = true;
      const from = v.vars && v.vars.length > 0 ? ` (from ${v.vars.join(', ')})` : '';
      report(v.pos, `setting '${name}' expects ${r.expected}, got ${JSON.stringify(v.value)}${from}`);
    }
  }
  return bad ? undefined : (out as ConfigOf<S>);
}
