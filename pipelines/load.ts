/**
 * Pipeline files: YAML → a validated graph. Every problem (YAML syntax, unknown keys, unknown stage
 * types, bad settings, dangling inputs, cycles, mismatched element types) is collected with its
 * file:line:column and what was expected; a graph is returned only when there are none.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair } from 'yaml';
import { checkGraph, type GraphNode } from './graph';
import { substitute, type VarLookup } from './env';
import type { Registry, StageType } from './registry';
import { validateSettings, type Pos, type Problem, type SettingValue } from './settings';
import { closest } from '../lib/suggest';

/** One input reference of a stage, with where it was written. */
export interface InputRef {
  readonly id: string;
  readonly pos: Pos;
}

/** A stage of a loaded pipeline: its type, inputs and validated config. */
export interface LoadedStage {
  readonly id: string;
  /** Position of the stage's id in the file. */
  readonly pos: Pos;
  readonly type: StageType;
  readonly inputs: readonly InputRef[];
  /** The validated config, typed by `type.settings`. */
  readonly config: Readonly<Record<string, unknown>>;
}

/** A pipeline that passed every check. */
export interface Pipeline {
  readonly name: string;
  readonly description?: string;
  /** The file it was loaded from (for messages). */
  readonly file: string;
  /** Stages in file order. */
  readonly stages: ReadonlyMap<string, LoadedStage>;
}

/** The outcome of loading: a pipeline, or every problem found. */
export type LoadResult = { ok: true; pipeline: Pipeline } | { ok: false; problems: Problem[] };

/** Options for loading a pipeline file. */
export interface LoadOptions {
  readonly registry: Registry;
  /** The environment `${VAR}` references resolve against (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Values that win over the environment and the file's `settings:` (from `hd run --config`). */
  readonly overrides?: Readonly<Record<string, string>>;
  /** Directory relative paths resolve against (default: the file's directory). */
  readonly baseDir?: string;
}

const TOP_KEYS = ['pipeline', 'description', 'settings', 'stages'];
const ID = /^[A-Za-z][A-Za-z0-9_-]*$/;

/** Formats a problem the way compilers do: `file:line:col: message`. */
export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.col}: ${p.message}`;
}

/** Reads and checks a pipeline file. */
export async function loadPipelineFile(file: string, opts: LoadOptions): Promise<LoadResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { ok: false, problems: [{ file, line: 1, col: 1, message: `cannot read the pipeline file: ${why}` }] };
  }
  return parsePipeline(text, file, opts);
}

/** Checks pipeline text; `file` names it in problems and (by default) sets the base directory. */
export function parsePipeline(text: string, file: string, opts: LoadOptions): LoadResult {
  const problems: Problem[] = [];
  const lc = new LineCounter();
  const at = (offset: number | undefined): Pos => {
    const p = lc.linePos(offset ?? 0);
    return { line: p.line, col: p.col };
  };
  const posOf = (n: Node | null | undefined): Pos => at(n?.range?.[0]);
  const report = (pos: Pos, message: string): void => {
    problems.push({ file, line: pos.line, col: pos.col, message });
  };

  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true, prettyErrors: false });
  for (const e of doc.errors) report(at(e.pos[0]), `YAML: ${e.message.split('\n')[0]}`);
  if (doc.errors.length > 0) return { ok: false, problems };

  const root = doc.contents;
  if (!isMap(root)) {
    report(posOf(root), 'a pipeline file is a map with keys pipeline, stages and optionally description and settings');
    return { ok: false, problems };
  }

  const top = new Map<string, Pair<Node, Node | null>>();
  for (const pair of root.items as Pair<Node, Node | null>[]) {
    const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
    if (key === undefined || !TOP_KEYS.includes(key)) {
      const hint = key ? closest(key, TOP_KEYS) : undefined;
      report(posOf(pair.key), `unknown top-level key ${JSON.stringify(key ?? null)}${hint ? ` (did you mean '${hint}'?)` : ''}; expected ${TOP_KEYS.join(', ')}`);
      continue;
    }
    top.set(key, pair);
  }

  const name = scalarString(top.get('pipeline'), 'pipeline', true);
  const description = scalarString(top.get('description'), 'description', false);

  // The file's `settings:` are env-like defaults for ${VAR} references.
  const fileSettings = new Map<string, string>();
  const settingsPair = top.get('settings');
  if (settingsPair && settingsPair.value !== null) {
    if (!isMap(settingsPair.value)) report(posOf(settingsPair.value), 'settings is a map of NAME: value');
    else {
      for (const p of settingsPair.value.items as Pair<Node, Node | null>[]) {
        const k = isScalar(p.key) ? String(p.key.value) : '';
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) report(posOf(p.key), `setting name ${JSON.stringify(k)} is not a variable name (letters, digits and _)`);
        else if (!isScalar(p.value) || p.value.value === null || typeof p.value.value === 'object') report(posOf(p.value ?? p.key), `setting ${k} takes a string, number or boolean`);
        else fileSettings.set(k, String(p.value.value));
      }
    }
  }
  const env = opts.env ?? process.env;
  const lookup: VarLookup = (n) => opts.overrides?.[n] ?? env[n] ?? fileSettings.get(n);
  const baseDir = opts.baseDir ?? path.dirname(path.resolve(file));

  const stages = new Map<string, LoadedStage>();
  // Every stage with a valid id takes part in the graph checks, even when its type or settings are
  // bad, so one run reports dangling inputs and type mismatches along with the setting problems.
  const nodes = new Map<string, GraphNode>();
  const stagesPair = top.get('stages');
  if (!stagesPair) report({ line: 1, col: 1 }, "missing top-level key 'stages' (a map of stage id → { type, inputs, ...settings })");
  else if (!isMap(stagesPair.value) || stagesPair.value.items.length === 0) {
    report(posOf(stagesPair.value ?? stagesPair.key), 'stages is a non-empty map of stage id → { type, inputs, ...settings }');
  } else {
    for (const pair of stagesPair.value.items as Pair<Node, Node | null>[]) {
      const stage = loadStage(pair);
      if (stage) stages.set(stage.id, stage);
    }
  }
  checkGraph(nodes, report);
  if (problems.length > 0) return { ok: false, problems: sortProblems(problems) };
  return { ok: true, pipeline: { name: name ?? '', description, file, stages } };

  function scalarString(pair: Pair<Node, Node | null> | undefined, key: string, required: boolean): string | undefined {
    if (!pair) {
      if (required) report({ line: 1, col: 1 }, `missing top-level key '${key}' (the pipeline's name)`);
      return undefined;
    }
    const v = pair.value;
    if (!isScalar(v) || typeof v.value !== 'string' || v.value === '') {
      report(posOf(v ?? pair.key), `${key} takes a non-empty string`);
      return undefined;
    }
    return v.value;
  }

  function loadStage(pair: Pair<Node, Node | null>): LoadedStage | undefined {
    const id = isScalar(pair.key) ? String(pair.key.value) : '';
    const pos = posOf(pair.key);
    if (!ID.test(id)) {
      report(pos, `stage id ${JSON.stringify(id)} must start with a letter and hold only letters, digits, _ and -`);
      return undefined;
    }
    if (!isMap(pair.value)) {
      report(posOf(pair.value ?? pair.key), `stage '${id}' is a map: { type, inputs, ...settings }`);
      nodes.set(id, { id, pos, type: undefined, inputs: [] });
      return undefined;
    }
    let type: StageType | undefined;
    let typeSeen = false;
    let inputs: InputRef[] = [];
    const values = new Map<string, SettingValue & { keyPos: Pos }>();
    for (const p of pair.value.items as Pair<Node, Node | null>[]) {
      const key = isScalar(p.key) ? String(p.key.value) : '';
      if (key === 'type') {
        typeSeen = true;
        type = stageType(id, p);
      } else if (key === 'inputs') {
        inputs = inputList(id, p);
      } else {
        const v = settingValue(p);
        if (v) values.set(key, { ...v, keyPos: posOf(p.key) });
      }
    }
    if (!typeSeen) report(pos, `stage '${id}' needs a type: one of ${opts.registry.names().join(', ')}`);
    nodes.set(id, { id, pos, type, inputs });
    if (!type) return undefined;
    const config = validateSettings(type.settings, values, { stageType: type.name, stagePos: pos, ctx: { baseDir } }, report);
    if (!config) return undefined;
    return { id, pos, type, inputs, config };
  }

  function stageType(id: string, p: Pair<Node, Node | null>): StageType | undefined {
    const v = p.value;
    if (!isScalar(v) || typeof v.value !== 'string') {
      report(posOf(v ?? p.key), `stage '${id}': type takes a stage type name: one of ${opts.registry.names().join(', ')}`);
      return undefined;
    }
    const t = opts.registry.get(v.value);
    if (!t) {
      const hint = closest(v.value, opts.registry.names());
      report(posOf(v), `stage '${id}': unknown stage type '${v.value}'${hint ? ` (did you mean '${hint}'?)` : ''}; known types: ${opts.registry.names().join(', ')}`);
    }
    return t;
  }

  function inputList(id: string, p: Pair<Node, Node | null>): InputRef[] {
    const v = p.value;
    if (!isSeq(v)) {
      report(posOf(v ?? p.key), `stage '${id}': inputs is a list of stage ids, e.g. inputs: [source]`);
      return [];
    }
    const out: InputRef[] = [];
    for (const item of v.items as (Node | null)[]) {
      if (!isScalar(item) || typeof item.value !== 'string') report(posOf(item ?? v), `stage '${id}': each input is a stage id`);
      else if (out.some((r) => r.id === item.value)) report(posOf(item), `stage '${id}': input '${item.value}' is listed twice`);
      else out.push({ id: item.value, pos: posOf(item) });
    }
    return out;
  }

  function settingValue(p: Pair<Node, Node | null>): SettingValue | undefined {
    const v = p.value;
    const pos = posOf(v ?? p.key);
    if (!isScalar(v)) {
      // Settings are scalars today; a nested value is reported by the setting's own check.
      return { value: v === null ? null : v.toJSON(), pos, substituted: false };
    }
    if (typeof v.value !== 'string') return { value: v.value, pos, substituted: false };
    const r = substitute(v.value, lookup);
    if (!r.ok) {
      // Offsets inside a quoted scalar are approximate; the scalar's own start is always right.
      for (const prob of r.problems) report(v.type === 'PLAIN' ? { line: pos.line, col: pos.col + prob.index } : pos, prob.message);
      return undefined;
    }
    return { value: r.text, pos, substituted: r.substituted, vars: r.vars };
  }
}

function sortProblems(ps: Problem[]): Problem[] {
  return [...ps].sort((a, b) => a.line - b.line || a.col - b.col);
}
