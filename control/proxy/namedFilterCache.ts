/**
 * The Proxy's kept batch filters in their final form (storageNodeFilters.ts): per batch, the ranges
 * of every node of the topology joined and named with the schema's fields, so that a query over
 * the `hd up` demo's 1 441 durable batches looks each up once instead of joining the replicas'
 * ranges and naming them again for every batch of every statement.
 *
 * An entry is kept under a view: the dataset, its schema's field layout, the asking identity's
 * hidden byte ranges and the nodes of the topology (name and address). A changed schema, other
 * hidden ranges or a changed topology is another view, so no entry made under one is read under
 * another. The caller keeps an entry only once every node of its view has answered for the batch
 * (a durable batch's ranges never change); a batch some node did not answer is joined again.
 *
 * Bounded: at most `capacity` entries over all views. Each view keeps two generations (a hit in
 * the older moves the entry to the newer; a full newer one becomes the older, dropping the old):
 * least recently used out, at one map lookup per hit. Past the bound, the least recently used
 * views go first.
 */
import type { Schema } from '../../engine-rs/schema';
import type { ByteRange } from './rewrite';
import type { StorageNodeAddress } from './dmsLink';
import type { BatchFilter } from './verdict';

/** A kept entry: the named filter, or null when the nodes answered but no range names a field. */
export type NamedFilter = BatchFilter | null;

/** The schema parts a batch filter's naming reads, as text (one per Schema object). */
const layouts = new WeakMap<Schema, string>();

/** The field layout of `schema` as a key part: byte order and every field's name, place, type, enum, time reference. */
export function schemaLayoutKey(schema: Schema): string {
  let k = layouts.get(schema);
  if (k === undefined) {
    k = JSON.stringify([schema.id, schema.byteOrder, schema.fields]);
    layouts.set(schema, k);
  }
  return k;
}

/** The key of a view: dataset, schema layout, hidden ranges, the nodes (name and address, in order). */
export function viewKey(dataset: string, schema: Schema, hidden: readonly ByteRange[], nodes: readonly StorageNodeAddress[]): string {
  const h = hidden.map((r) => `${r.offset}:${r.size}`).join(',');
  const n = nodes.map((x) => `${x.name}\u0001${x.host}:${x.port}`).join('\u0002');
  return `${dataset}\u0000${h}\u0000${n}\u0000${schemaLayoutKey(schema)}`;
}

/** The entries of one view, by lower-case batch id. */
export class FilterView {
  private young = new Map<string, NamedFilter>();
  private old = new Map<string, NamedFilter>();
  /** False once the cache dropped this view: a query still holding it keeps nothing more. */
  live = true;

  /** @param owner the cache whose bound this view counts in */
  constructor(private readonly owner: NamedFilterCache) {}

  /** Entries held (both generations). */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The entry of batch `id`; undefined when none is kept. */
  get(id: string): NamedFilter | undefined {
    const y = this.young.get(id);
    if (y !== undefined) return y;
    const o = this.old.get(id);
    if (o === undefined) return undefined;
    this.old.delete(id);
    this.young.set(id, o);
    this.rotate();
    return o;
  }

  /** Keeps `value` for batch `id`. */
  set(id: string, value: NamedFilter): void {
    if (!this.live) return;
    const had = this.young.has(id) || this.old.delete(id);
    this.young.set(id, value);
    if (!had) this.owner.grew(1);
    this.rotate();
    this.owner.trim(this);
  }

  /** A full newer generation becomes the older one; the older one is dropped. */
  private rotate(): void {
    if (this.young.size < this.owner.generation) return;
    if (this.live) this.owner.grew(-this.old.size);
    this.old = this.young;
    this.young = new Map();
  }
}

/** Named batch filters per view, at most `capacity` entries in all. */
export class NamedFilterCache {
  private readonly views = new Map<string, FilterView>();
  private entries = 0;
  /** Entries one generation of a view holds before it turns over. */
  readonly generation: number;

  /** @param capacity entries kept over all views (at least 2) */
  constructor(readonly capacity: number) {
    this.generation = Math.max(1, Math.floor(capacity / 2));
  }

  /** Entries held over all views. */
  get size(): number {
    return this.entries;
  }

  /** The view of `key` (made when new), now the most recently used one. */
  view(key: string): FilterView {
    let v = this.views.get(key);
    if (v !== undefined) this.views.delete(key);
    else v = new FilterView(this);
    this.views.set(key, v);
    return v;
  }

  /** Counts entries a view added (or dropped, negative). */
  grew(n: number): void {
    this.entries += n;
  }

  /** Past the bound, drops the least recently used views other than `keep` (whose own generations bound it). */
  trim(keep: FilterView): void {
    if (this.entries <= this.capacity) return;
    for (const [k, v] of this.views) {
      if (this.entries <= this.capacity) break;
      if (v === keep) continue;
      this.entries -= v.size;
      v.live = false;
      this.views.delete(k);
    }
  }
}
