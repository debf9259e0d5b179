/**
 * A Map that keeps at most `max` entries, dropping the oldest inserted (or, with {@link touch},
 * least recently used) when a new key passes the bound. The caches and "last N seen" lists of the
 * project (parse trees, plans, TLS sessions, trusted return addresses, projections, peers) are all
 * this shape; one place keeps the eviction rule.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  /** @param max entries kept at most (≥ 1) */
  constructor(readonly max: number) {
    super();
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`BoundedMap: max must be an integer ≥ 1, got ${max}`);
  }

  /** Sets `key` (as the newest entry) and drops the oldest entries past `max`. */
  override set(key: K, value: V): this {
    // A key set again moves to the end: it is the newest now.
    if (super.has(key)) super.delete(key);
    super.set(key, value);
    while (this.size > this.max) super.delete(this.keys().next().value as K);
    return this;
  }

  /** The value of `key`, marking it the most recently used (an LRU read); undefined when absent. */
  touch(key: K): V | undefined {
    if (!super.has(key)) return undefined;
    const v = super.get(key) as V;
    super.delete(key);
    super.set(key, v);
    return v;
  }
}
