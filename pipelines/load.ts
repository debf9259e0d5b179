/**
 * Pipeline files: YAML → a validated graph. Every problem (YAML syntax, unknown keys, unknown stage
 * or service types, bad settings, dangling inputs, cycles, mismatched element types, services a
 * stage needs and the file does not declare or the stage does not list, services nothing uses) is
 * collected with its file:line:column and what was expected; a graph is returned only when there
 * are none.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair } from 'yaml';
import { checkGraph, type GraphNode } from './graph';
import { substitute, type VarLookup } from './env';
import type { Registry, ServiceType, ServiceUses, StageType } from './registry';
import { validateSettings, type Pos, type Problem, type SettingValue } from './settings';
import { closest } from '../lib/suggest';

/** One input reference of a stage, with where it was written. */
export interface InputRef {
  readonly id: string;
  readonly pos: Pos;
}

/** A stage of a loaded pipeline: its type, inputs, the services it uses and validated config. */
export interface LoadedStage {
  readonly id: string;
  /** Position of the stage's id in the file. */
  readonly pos: Pos;
  readonly type: StageType;
  readonly inputs: readonly InputRef[];
  /** The services listed in `uses:`: service id by the slot name of `type.uses`. */
  readonly uses: ReadonlyMap<string, string>;
  /** The validated config, typed by `type.settings`. */
  readonly config: Readonly<Record<string, unknown>>;
}

/** A service of a loaded pipeline (an entry of `services:`). */
export interface LoadedService {
  readonly id: string;
  /** Position of the service's id in the file. */
  readonly pos: Pos;
  readonly type: ServiceType;
  /** The services it lists in `uses:`: service id by the slot name of `type.uses`. */
  readonly uses: ReadonlyMap<string, string>;
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
  /** Services in start order: file order, each after the services it uses. */
  readonly services: ReadonlyMap<string, LoadedService>;
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

const TOP_KEYS = ['pipeline', 'description', 'settings', 'services', 'stages'];
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
    report(posOf(root), 'a pipeline file is a map with keys pipeline, stages and optionally description, settings and services');
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
  // The reference's container variables stand in for the role variables they name (docs/deploy.md).
  const containerAlias = (n: string): string | undefined => (n === 'NODE_NAME' ? env.PLATFORM_NODE_NAME : n === 'DMS_URL' ? env.PLATFORM_DMS_URL : undefined);
  const lookup: VarLookup = (n) => opts.overrides?.[n] ?? env[n] ?? containerAlias(n) ?? fileSettings.get(n);
  const baseDir = opts.baseDir ?? path.dirname(path.resolve(file));

  // Services first: a stage's `uses:` is checked against them.
  const services = new Map<string, ServiceDecl>();
  const servicesPair = top.get('services');
  if (servicesPair) {
    if (!isMap(servicesPair.value) || servicesPair.value.items.length === 0) {
      report(posOf(servicesPair.value ?? servicesPair.key), 'services is a non-empty map of service id → { type, uses, ...settings }');
    } else {
      for (const pair of servicesPair.value.items as Pair<Node, Node | null>[]) {
        const svc = loadService(pair);
        if (svc) services.set(svc.id, svc);
      }
    }
  }

  const stages = new Map<string, LoadedStage>();
  // Every stage with a valid id takes part in the graph checks, even when its type or settings are
  // bad, so one run reports dangling inputs and type mismatches along with the setting problems.
  const nodes = new Map<string, GraphNode>();
  /** Each stage's services by slot, filled by checkServices once every service is known. */
  const stageUses = new Map<string, Map<string, string>>();
  const stagesPair = top.get('stages');
  // A file of services alone (the DMS, the Proxy, hd_sql) has no stages.
  const servicesOnly = services.size > 0 && (!stagesPair || stagesPair.value === null);
  if (servicesOnly) {
    // nothing to load
  } else if (!stagesPair) report({ line: 1, col: 1 }, "missing top-level key 'stages' (a map of stage id → { type, inputs, uses, ...settings })");
  else if (!isMap(stagesPair.value) || stagesPair.value.items.length === 0) {
    report(posOf(stagesPair.value ?? stagesPair.key), 'stages is a non-empty map of stage id → { type, inputs, uses, ...settings }');
  } else {
    for (const pair of stagesPair.value.items as Pair<Node, Node | null>[]) {
      const stage = loadStage(pair);
      if (stage) stages.set(stage.id, stage);
    }
  }
  checkGraph(nodes, report);
  const ordered = checkServices();
  if (problems.length > 0) return { ok: false, problems: sortProblems(problems) };
  return { ok: true, pipeline: { name: name ?? '', description, file, stages, services: ordered } };

  /**
   * Ties each stage's and service's `uses:` to the slots of its type, and reports what is missing,
   * listed twice or of a type the user does not take; then services nothing uses (a server
   * excepted), id clashes and cycles among services. Returns the services in start order.
   */
  function checkServices(): Map<string, LoadedService> {
    const used = new Set<string>();
    const resolve = (what: string, pos: Pos, typeName: string, slots: ServiceUses, listed: readonly InputRef[], into: Map<string, string>): void => {
      const slotList = Object.entries(slots);
      const takes = slotList.length === 0 ? 'none' : slotList.map(([, u]) => `${u.service}${u.optional ? ' (optional)' : ''}`).join(', ');
      for (const ref of listed) {
        const svc = services.get(ref.id);
        if (!svc) {
          if (nodes.has(ref.id)) report(ref.pos, `${what}: '${ref.id}' is a stage, not a service; uses lists ids of services: entries (inputs lists stages)`);
          else {
            const hint = closest(ref.id, [...services.keys()]);
            report(ref.pos, `${what}: uses '${ref.id}', which is not a service in this pipeline${hint ? ` (did you mean '${hint}'?)` : ''}; declare it under services:`);
          }
          continue;
        }
        used.add(ref.id);
        if (!svc.type) continue;
        const slot = slotList.find(([, u]) => u.service === svc.type?.name);
        if (!slot) {
          report(ref.pos, `${what} (${typeName}) uses no '${svc.type.name}' service ('${ref.id}'); it uses: ${takes}`);
          continue;
        }
        const have = into.get(slot[0]);
        if (have !== undefined) report(ref.pos, `${what}: '${ref.id}' and '${have}' are both ${svc.type.name} services; it uses one`);
        else into.set(slot[0], ref.id);
      }
      for (const [slot, u] of slotList) {
        if (u.optional || into.has(slot)) continue;
        const declared = [...services.values()].filter((s) => s.type?.name === u.service).map((s) => s.id);
        const fix = declared.length > 0 ? `list it: uses: [${declared.join(', ')}]` : `declare one under services: (type: ${u.service}) and list its id in uses:`;
        report(pos, `${what} (${typeName}) needs a '${u.service}' service (${u.doc}); ${fix}`);
      }
    };
    for (const n of nodes.values()) {
      if (n.type) resolve(`stage '${n.id}'`, n.pos, n.type.name, n.type.uses ?? {}, n.uses ?? [], stageUses.get(n.id) ?? new Map());
    }
    for (const s of services.values()) {
      if (nodes.has(s.id)) report(s.pos, `service id '${s.id}' is also a stage id; give it another name`);
      if (!s.type) continue;
      resolve(`service '${s.id}'`, s.pos, s.type.name, s.type.uses ?? {}, s.usesRefs, s.uses);
    }
    for (const s of services.values()) {
      if (s.type && !s.type.server && !used.has(s.id)) {
        report(s.pos, `service '${s.id}' (${s.type.name}) is used by no stage or service; list it in a stage's uses:, or remove it`);
      }
    }
    // Start order: file order, each service after those it uses; a cycle is a problem.
    const ordered = new Map<string, LoadedService>();
    const state = new Map<string, 'open' | 'done'>();
    const visit = (id: string, path: string[]): void => {
      const s = services.get(id);
      if (!s || state.get(id) === 'done') return;
      if (state.get(id) === 'open') {
        const cyc = [...path.slice(path.indexOf(id)), id];
        report(s.pos, `services cycle: ${cyc.map((x) => `'${x}'`).join(' → ')}; a service cannot use itself, directly or not`);
        return;
      }
      state.set(id, 'open');
      for (const dep of s.uses.values()) visit(dep, [...path, id]);
      state.set(id, 'done');
      if (s.type && s.config) ordered.set(id, { id, pos: s.pos, type: s.type, uses: s.uses, config: s.config });
    };
    for (const id of services.keys()) visit(id, []);
    return ordered;
  }

  function loadService(pair: Pair<Node, Node | null>): ServiceDecl | undefined {
    const id = isScalar(pair.key) ? String(pair.key.value) : '';
    const pos = posOf(pair.key);
    if (!ID.test(id)) {
      report(pos, `service id ${JSON.stringify(id)} must start with a letter and hold only letters, digits, _ and -`);
      return undefined;
    }
    const decl: ServiceDecl = { id, pos, type: undefined, usesRefs: [], uses: new Map(), config: undefined };
    if (!isMap(pair.value)) {
      report(posOf(pair.value ?? pair.key), `service '${id}' is a map: { type, uses, ...settings }`);
      return decl;
    }
    let typeSeen = false;
    const values = new Map<string, SettingValue & { keyPos: Pos }>();
    for (const p of pair.value.items as Pair<Node, Node | null>[]) {
      const key = isScalar(p.key) ? String(p.key.value) : '';
      if (key === 'type') {
        typeSeen = true;
        decl.type = serviceType(id, p);
      } else if (key === 'uses') {
        decl.usesRefs = idList(`service '${id}'`, 'uses', 'service', p);
      } else if (key === 'inputs') {
        report(posOf(p.key), `service '${id}': a service takes no inputs (it is not part of the stream); stages use it with uses: [${id}]`);
      } else {
        const v = settingValue(p);
        if (v) values.set(key, { ...v, keyPos: posOf(p.key) });
      }
    }
    if (!typeSeen) report(pos, `service '${id}' needs a type: one of ${opts.registry.serviceNames().join(', ')}`);
    if (!decl.type) return decl;
    decl.config = validateSettings(decl.type.settings, values, { stageType: decl.type.name, stagePos: pos, ctx: { baseDir }, kind: 'service' }, report);
    return decl;
  }

  function serviceType(id: string, p: Pair<Node, Node | null>): ServiceType | undefined {
    const v = p.value;
    const names = opts.registry.serviceNames();
    if (!isScalar(v) || typeof v.value !== 'string') {
      report(posOf(v ?? p.key), `service '${id}': type takes a service type name: one of ${names.join(', ')}`);
      return undefined;
    }
    const t = opts.registry.service(v.value);
    if (!t) {
      if (opts.registry.get(v.value)) report(posOf(v), `service '${id}': '${v.value}' is a stage type; declare it under stages:. Service types: ${names.join(', ')}`);
      else {
        const hint = closest(v.value, names);
        report(posOf(v), `service '${id}': unknown service type '${v.value}'${hint ? ` (did you mean '${hint}'?)` : ''}; known service types: ${names.join(', ')}`);
      }
    }
    return t;
  }

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
      report(posOf(pair.value ?? pair.key), `stage '${id}' is a map: { type, inputs, uses, ...settings }`);
      nodes.set(id, { id, pos, type: undefined, inputs: [] });
      return undefined;
    }
    let type: StageType | undefined;
    let typeSeen = false;
    let inputs: InputRef[] = [];
    let uses: InputRef[] = [];
    const values = new Map<string, SettingValue & { keyPos: Pos }>();
    for (const p of pair.value.items as Pair<Node, Node | null>[]) {
      const key = isScalar(p.key) ? String(p.key.value) : '';
      if (key === 'type') {
        typeSeen = true;
        type = stageType(id, p);
      } else if (key === 'inputs') {
        inputs = inputList(id, p);
      } else if (key === 'uses') {
        uses = idList(`stage '${id}'`, 'uses', 'service', p);
      } else {
        const v = settingValue(p);
        if (v) values.set(key, { ...v, keyPos: posOf(p.key) });
      }
    }
    if (!typeSeen) report(pos, `stage '${id}' needs a type: one of ${opts.registry.names().join(', ')}`);
    nodes.set(id, { id, pos, type, inputs, uses });
    if (!type) return undefined;
    const config = validateSettings(type.settings, values, { stageType: type.name, stagePos: pos, ctx: { baseDir } }, report);
    if (!config) return undefined;
    const usesBySlot = new Map<string, string>();
    stageUses.set(id, usesBySlot);
    return { id, pos, type, inputs, uses: usesBySlot, config };
  }

  function stageType(id: string, p: Pair<Node, Node | null>): StageType | undefined {
    const v = p.value;
    if (!isScalar(v) || typeof v.value !== 'string') {
      report(posOf(v ?? p.key), `stage '${id}': type takes a stage type name: one of ${opts.registry.names().join(', ')}`);
      return undefined;
    }
    const t = opts.registry.get(v.value);
    if (!t && opts.registry.service(v.value)) {
      report(posOf(v), `stage '${id}': '${v.value}' is a service type; declare it under services: and list its id in the uses: of the stages that need it`);
    } else if (!t) {
      const hint = closest(v.value, opts.registry.names());
      report(posOf(v), `stage '${id}': unknown stage type '${v.value}'${hint ? ` (did you mean '${hint}'?)` : ''}; known types: ${opts.registry.names().join(', ')}`);
    }
    return t;
  }

  function inputList(id: string, p: Pair<Node, Node | null>): InputRef[] {
    return idList(`stage '${id}'`, 'inputs', 'stage', p);
  }

  /** A list of ids (`inputs: [a, b]`, `uses: [identity]`), each with its place. */
  function idList(what: string, key: 'inputs' | 'uses', of: 'stage' | 'service', p: Pair<Node, Node | null>): InputRef[] {
    const v = p.value;
    const one = key === 'inputs' ? 'input' : 'use';
    if (!isSeq(v)) {
      report(posOf(v ?? p.key), `${what}: ${key} is a list of ${of} ids, e.g. ${key}: [${key === 'inputs' ? 'source' : 'identity'}]`);
      return [];
    }
    const out: InputRef[] = [];
    for (const item of v.items as (Node | null)[]) {
      if (!isScalar(item) || typeof item.value !== 'string') report(posOf(item ?? v), `${what}: each ${one} is a ${of} id`);
      else if (out.some((r) => r.id === item.value)) report(posOf(item), `${what}: ${one} '${item.value}' is listed twice`);
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

/** A `services:` entry while the file loads (its type or config may be bad). */
interface ServiceDecl {
  readonly id: string;
  readonly pos: Pos;
  type: ServiceType | undefined;
  usesRefs: InputRef[];
  readonly uses: Map<string, string>;
  config: Readonly<Record<string, unknown>> | undefined;
}

function sortProblems(ps: Problem[]): Problem[] {
  return [...ps].sort((a, b) => a.line - b.line || a.col - b.col);
}
