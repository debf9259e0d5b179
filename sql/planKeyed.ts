/**
 * What a statement's paths keep per plan (its result schema over the empty dataset table, the
 * outer statement of the aggregate path), kept instead per schema key when the statement has one
 * (sql/parseTrees.ts): every text of a shape that differs only in WHERE integers — a dashboard's
 * next time window — then shares one, instead of asking DuckDB again for each new plan.
 */
import { BoundedMap } from '../lib/boundedMap';
import type { Plan } from './planner';

/** Schema keys whose values are kept. */
const KEYS = 256;

/** Values per plan, or per schema key where the statement has one. */
export class PlanKeyed<V> {
  private readonly byPlan = new WeakMap<Plan, V>();
  private readonly byKey = new BoundedMap<string, V>(KEYS);

  /** The value kept for `plan` (or its schema `key`). */
  get(plan: Plan, key: string | undefined): V | undefined {
    return key === undefined ? this.byPlan.get(plan) : this.byKey.touch(key);
  }

  /** Keeps `v` for `plan` (or its schema `key`). */
  set(plan: Plan, key: string | undefined, v: V): void {
    if (key === undefined) this.byPlan.set(plan, v);
    else this.byKey.set(key, v);
  }

  /** Forgets the values kept per key (a new catalog: the same text may read other tables). */
  clear(): void {
    this.byKey.clear();
  }
}
