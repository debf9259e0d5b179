/**
 * The dataset schemas a Storage Node compiles query filters against (docs/storage-node.md,
 * "Queries"): every `*.json` file of one directory (`schema_dir` of the scan stage), by schema id,
 * and, when the node is registered, the schemas the DMS distributes to its cluster
 * ({@link QuerySchemas.setDms}; a file of the directory wins for the same id: the operator set it).
 * Read when the pipeline loads; a dataset not found later makes the directory be read again, and
 * {@link QuerySchemas.find} also asks the DMS again, so a schema dropped in or registered while the
 * node runs is picked up without a restart.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Schema, SchemaError } from '../../engine-rs/index';

/** A schema file that did not load, and why. */
export interface SchemaFileProblem {
  readonly file: string;
  readonly message: string;
}

/** Dataset schemas by id, from one directory (none when no directory is set). */
export class QuerySchemas {
  private byId = new Map<string, Schema>();
  private problemList: SchemaFileProblem[] = [];
  private dms = new Map<string, Schema>();
  private dmsRefresh: (() => Promise<unknown>) | undefined;

  /** Reads `dir` now (throws if it cannot be listed); `undefined`: no schemas. */
  constructor(readonly dir: string | undefined) {
    this.reload();
  }

  /** Files that did not load at the last read. */
  get problems(): readonly SchemaFileProblem[] {
    return this.problemList;
  }

  /** Dataset ids with a schema. */
  get datasets(): string[] {
    return [...new Set([...this.byId.keys(), ...this.dms.keys()])].sort();
  }

  /**
   * The DMS's schemas (replacing the ones set before), and how to read the DMS again when a
   * dataset is not known ({@link find}).
   */
  setDms(schemas: ReadonlyMap<string, Schema>, refresh?: () => Promise<unknown>): void {
    this.dms = new Map(schemas);
    if (refresh) this.dmsRefresh = refresh;
  }

  /** The schema of `dataset`, reading the directory again when it is not known yet. */
  get(dataset: string): Schema | undefined {
    const have = this.byId.get(dataset);
    if (have) return have;
    if (this.dir !== undefined) {
      try {
        this.reload();
      } catch {
        // The directory went away: keep what was loaded.
      }
    }
    return this.byId.get(dataset) ?? this.dms.get(dataset);
  }

  /** Like {@link get}, but a dataset not known makes the DMS be read again first (registered a moment ago). */
  async find(dataset: string): Promise<Schema | undefined> {
    const have = this.get(dataset);
    if (have || !this.dmsRefresh) return have;
    await this.dmsRefresh();
    return this.get(dataset);
  }

  private reload(): void {
    const dir = this.dir;
    if (dir === undefined) return;
    const byId = new Map<string, Schema>();
    const problems: SchemaFileProblem[] = [];
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
      const file = path.join(dir, name);
      try {
        const s = Schema.parse(readFileSync(file, 'utf8'));
        const other = byId.get(s.id);
        if (other) problems.push({ file, message: `schema id '${s.id}' is also in an earlier file; the first one is used` });
        else byId.set(s.id, s);
      } catch (err) {
        const why = err instanceof SchemaError ? err.issues.map((i) => `${i.path}: ${i.message}`).join('; ') : (err as Error).message;
        problems.push({ file, message: why });
      }
    }
    this.byId = byId;
    this.problemList = problems;
  }
}
