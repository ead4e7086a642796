/**
 * memberlist v0.5.1's TransmitLimitedQueue (queue.go) without its btree: one broadcast per
 * member name (queueing a newer one invalidates the older in O(1)), taken fewest transmits
 * first, then the largest message that still fits, then newest first (limitedBroadcast.Less);
 * a broadcast is dropped after `transmitLimit` transmissions.
 *
 * Layout: tiers by transmit count, each with buckets by message length, each bucket a max-heap
 * on the id. Invalidated entries stay in their heap and are skipped when they surface (lazy
 * deletion); the heaps are rebuilt when such garbage outweighs the live entries. Queueing is
 * O(log n); taking k broadcasts costs O(k · (tiers + lengths + log n)).
 *
 * Mutable: the SWIM state machine owns one queue per state lineage (see swim.ts `step`).
 */

interface Entry {
  readonly node: string;
  readonly msg: Uint8Array;
  readonly transmits: number;
  readonly id: number;
}

class IdHeap {
  readonly items: Entry[] = [];
  push(e: Entry, q: BroadcastQueue): void {
    const a = this.items;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      q.ops++;
      const p = (i - 1) >> 1;
      if (a[p]!.id >= e.id) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = e;
  }
  pop(q: BroadcastQueue): void {
    const a = this.items;
    const last = a.pop()!;
    if (a.length === 0) return;
    let i = 0;
    for (;;) {
      q.ops++;
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && a[r]!.id > a[l]!.id ? r : l;
      if (a[c]!.id <= last.id) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = last;
  }
}

interface Tier {
  /** Buckets by message length. */
  readonly buckets: Map<number, IdHeap>;
  /** Lengths present, largest first. */
  lengths: number[];
}

export class BroadcastQueue {
  private readonly byNode = new Map<string, Entry>();
  private tiers = new Map<number, Tier>();
  /** Transmit counts present, ascending. */
  private tierKeys: number[] = [];
  private nextId = 0;
  /** Entries held in heaps (live and invalidated). */
  private held = 0;
  /** Elementary operations (heap steps, bucket scans) since creation: for tests and benches. */
  ops = 0;

  /** Live broadcasts. */
  get size(): number {
    return this.byNode.size;
  }

  /** True when a broadcast about `node` is queued. */
  has(node: string): boolean {
    return this.byNode.has(node);
  }

  /** The queued broadcasts in no particular order (tests, debugging). */
  entries(): { node: string; msg: Uint8Array; transmits: number }[] {
    return [...this.byNode.values()].map((e) => ({ node: e.node, msg: e.msg, transmits: e.transmits }));
  }

  /** Queues `msg` about `node`, replacing any broadcast about `node` (memberlist's NamedBroadcast invalidation). */
  queue(node: string, msg: Uint8Array): void {
    const e: Entry = { node, msg, transmits: 0, id: ++this.nextId };
    this.byNode.set(node, e);
    this.insert(e);
    if (this.held > 64 && this.held > 3 * this.byNode.size) this.rebuild();
  }

  /**
   * Takes broadcasts fitting `limit` bytes, each costing `overhead` more, as memberlist's
   * GetBroadcasts: per tier (fewest transmits first) the largest fitting message, newest first
   * among equals; each taken broadcast is retransmitted at most `transmitLimit` times in all.
   */
  take(overhead: number, limit: number, transmitLimit: number): Uint8Array[] {
    if (this.byNode.size === 0) return [];
    const out: Uint8Array[] = [];
    const reinsert: Entry[] = [];
    let used = 0;
    for (let ti = 0; ti < this.tierKeys.length; ) {
      const free = limit - used - overhead;
      if (free <= 0) break;
      const t = this.tierKeys[ti]!;
      const e = this.best(this.tiers.get(t)!, free);
      if (!e) {
        ti++;
        continue;
      }
      this.tiers.get(t)!.buckets.get(e.msg.length)!.pop(this);
      this.held--;
      used += overhead + e.msg.length;
      out.push(e.msg);
      if (e.transmits + 1 >= transmitLimit) this.byNode.delete(e.node);
      else {
        const next: Entry = { ...e, transmits: e.transmits + 1 };
        this.byNode.set(e.node, next);
        reinsert.push(next);
      }
    }
    for (const e of reinsert) this.insert(e);
    this.dropEmptyTiers();
    return out;
  }

  /** The live entry of a tier with the largest length ≤ free, newest first; drops garbage it meets. */
  private best(tier: Tier, free: number): Entry | null {
    for (let i = 0; i < tier.lengths.length; i++) {
      this.ops++;
      const len = tier.lengths[i]!;
      if (len > free) continue;
      const heap = tier.buckets.get(len)!;
      while (heap.items.length > 0 && this.byNode.get(heap.items[0]!.node) !== heap.items[0]) {
        heap.pop(this);
        this.held--;
      }
      if (heap.items.length > 0) return heap.items[0]!;
      tier.buckets.delete(len);
      tier.lengths.splice(i, 1);
      i--;
    }
    return null;
  }

  private insert(e: Entry): void {
    let tier = this.tiers.get(e.transmits);
    if (!tier) {
      tier = { buckets: new Map(), lengths: [] };
      this.tiers.set(e.transmits, tier);
      let i = this.tierKeys.length;
      while (i > 0 && this.tierKeys[i - 1]! > e.transmits) i--;
      this.tierKeys.splice(i, 0, e.transmits);
    }
    let heap = tier.buckets.get(e.msg.length);
    if (!heap) {
      heap = new IdHeap();
      tier.buckets.set(e.msg.length, heap);
      let i = tier.lengths.length;
      while (i > 0 && tier.lengths[i - 1]! < e.msg.length) i--;
      tier.lengths.splice(i, 0, e.msg.length);
    }
    heap.push(e, this);
    this.held++;
  }

  private dropEmptyTiers(): void {
    for (let i = this.tierKeys.length - 1; i >= 0; i--) {
      const k = this.tierKeys[i]!;
      const tier = this.tiers.get(k)!;
      let empty = true;
      for (const h of tier.buckets.values())
        if (h.items.length > 0) {
          empty = false;
          break;
        }
      if (empty) {
        this.tiers.delete(k);
        this.tierKeys.splice(i, 1);
      }
    }
  }

  /** Rebuilds the heaps from the live entries (drops invalidated ones). */
  private rebuild(): void {
    this.tiers = new Map();
    this.tierKeys = [];
    this.held = 0;
    for (const e of [...this.byNode.values()].sort((a, b) => a.id - b.id)) this.insert(e);
  }
}
