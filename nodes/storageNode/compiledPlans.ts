/**
 * What a Storage Node compiles for a query's shape, kept for the next query of the same shape
 * (docs/storage-node.md, "Queries"): a dashboard or a client repeating a statement sends the same
 * filter, aggregate and top again and again with new query ids, and each compile is a native call
 * that parses JSON against the schema. Entries are keyed by the schema object (a schema read again,
 * e.g. a new DMS version, is another object and compiles afresh) and the exact JSON, so a cached
 * program is the one the query would have compiled. A compile that throws is not kept.
 */
import type { Schema } from '../../engine-rs/index';

/** Query shapes kept by default (least recently used dropped first). */
export const DEFAULT_COMPILED_PLANS = 64;

/** A small least-recently-used map from a query shape to what was compiled for it. */
export class CompiledPlans {
  private readonly entries = new Map<string, unknown>();
  private readonly schemaIds = new WeakMap<Schema, number>();
  private nextSchemaId = 0;
  private hitCount = 0;

  /** @param max shapes kept at most (≥ 1) */
  constructor(readonly max: number = DEFAULT_COMPILED_PLANS) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`compiled plans kept must be an integer ≥ 1, got ${max}`);
  }

  /** Shapes kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** Lookups answered from the cache so far. */
  get hits(): number {
    return this.hitCount;
  }

  /**
   * What `compile` gives for `schema` and `key` (a kind and the exact JSON it compiles, e.g.
   * `filter\0[...]`): kept from an earlier call, or compiled now and kept. What `compile` throws
   * goes to the caller, and nothing is kept.
   */
  get<T>(schema: Schema, key: string, compile: () => T): T {
    let id = this.schemaIds.get(schema);
    if (id === undefined) this.schemaIds.set(schema, (id = this.nextSchemaId++));
    const k = `${id}\0${key}`;
    if (this.entries.has(k)) {
      const v = this.entries.get(k) as T;
      // Most recently used last: Map keeps insertion order.
      this.entries.delete(k);
      this.entries.set(k, v);
      this.hitCount++;
      return v;
    }
    const v = compile();
    this.entries.set(k, v);
    if (this.entries.size > this.max) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    return v;
  }
}
