/**
 * Ordered containers keyed by bigint, used by the allocator's address index.
 *
 * `OrderedMap` is a treap (randomised balanced binary search tree; the priorities come from a
 * fixed-seed generator, so the shape — never the contents — is reproducible). Every operation
 * is O(log n) expected in the number of stored keys. `IntervalSet` stores a set of addresses
 * as disjoint, maximal runs `[start, end]`, so "first address >= x that is not in the set" costs
 * O(log runs) however many addresses a run holds.
 */

interface Node<V> {
  key: bigint;
  value: V;
  prio: number;
  left: Node<V> | null;
  right: Node<V> | null;
}

/** A key/value entry returned by the lookups. */
export interface Entry<V> {
  readonly key: bigint;
  readonly value: V;
}

let seed = 0x2545f491;
/** xorshift32: deterministic priorities for the treap. */
function nextPrio(): number {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed;
}

/** Map from bigint keys to values, iterable and searchable in key order. */
export class OrderedMap<V> {
  private root: Node<V> | null = null;
  private count = 0;

  /** Number of keys. */
  get size(): number {
    return this.count;
  }

  /** An independent copy (same entries; values are shared, not copied). */
  clone(): OrderedMap<V> {
    const c = new OrderedMap<V>();
    c.root = copyTree(this.root);
    c.count = this.count;
    return c;
  }

  /** Value stored under `key`, or undefined. */
  get(key: bigint): V | undefined {
    let n = this.root;
    while (n) {
      if (key === n.key) return n.value;
      n = key < n.key ? n.left : n.right;
    }
    return undefined;
  }

  /** Whether `key` is stored. */
  has(key: bigint): boolean {
    let n = this.root;
    while (n) {
      if (key === n.key) return true;
      n = key < n.key ? n.left : n.right;
    }
    return false;
  }

  /** Stores `value` under `key` (replacing any previous value). */
  set(key: bigint, value: V): void {
    this.root = this.insert(this.root, key, value);
  }

  /** Removes `key`; returns whether it was present. */
  delete(key: bigint): boolean {
    const before = this.count;
    this.root = this.remove(this.root, key);
    return this.count !== before;
  }

  /** Entry with the largest key <= `key`. */
  floor(key: bigint): Entry<V> | undefined {
    let n = this.root;
    let best: Node<V> | null = null;
    while (n) {
      if (n.key === key) return n;
      if (n.key < key) {
        best = n;
        n = n.right;
      } else n = n.left;
    }
    return best ?? undefined;
  }

  /** Entry with the smallest key >= `key`. */
  ceiling(key: bigint): Entry<V> | undefined {
    let n = this.root;
    let best: Node<V> | null = null;
    while (n) {
      if (n.key === key) return n;
      if (n.key > key) {
        best = n;
        n = n.left;
      } else n = n.right;
    }
    return best ?? undefined;
  }

  /** Entries with keys in [lo, hi], ascending (lazy). */
  *range(lo: bigint, hi: bigint): Generator<Entry<V>> {
    let cur = this.ceiling(lo);
    while (cur && cur.key <= hi) {
      yield cur;
      if (cur.key === hi) return;
      cur = this.ceiling(cur.key + 1n);
    }
  }

  /** All entries, ascending. */
  *entries(): Generator<Entry<V>> {
    const stack: Node<V>[] = [];
    let n = this.root;
    while (n || stack.length) {
      while (n) {
        stack.push(n);
        n = n.left;
      }
      const top = stack.pop()!;
      yield top;
      n = top.right;
    }
  }

  private insert(n: Node<V> | null, key: bigint, value: V): Node<V> {
    if (!n) {
      this.count++;
      return { key, value, prio: nextPrio(), left: null, right: null };
    }
    if (key === n.key) {
      n.value = value;
      return n;
    }
    if (key < n.key) {
      n.left = this.insert(n.left, key, value);
      if (n.left.prio > n.prio) return rotateRight(n);
    } else {
      n.right = this.insert(n.right, key, value);
      if (n.right.prio > n.prio) return rotateLeft(n);
    }
    return n;
  }

  private remove(n: Node<V> | null, key: bigint): Node<V> | null {
    if (!n) return null;
    if (key < n.key) n.left = this.remove(n.left, key);
    else if (key > n.key) n.right = this.remove(n.right, key);
    else {
      this.count--;
      return merge(n.left, n.right);
    }
    return n;
  }
}

function copyTree<V>(n: Node<V> | null): Node<V> | null {
  return n ? { key: n.key, value: n.value, prio: n.prio, left: copyTree(n.left), right: copyTree(n.right) } : null;
}

function rotateRight<V>(n: Node<V>): Node<V> {
  const l = n.left!;
  n.left = l.right;
  l.right = n;
  return l;
}

function rotateLeft<V>(n: Node<V>): Node<V> {
  const r = n.right!;
  n.right = r.left;
  r.left = n;
  return r;
}

function merge<V>(a: Node<V> | null, b: Node<V> | null): Node<V> | null {
  if (!a) return b;
  if (!b) return a;
  if (a.prio > b.prio) {
    a.right = merge(a.right, b);
    return a;
  }
  b.left = merge(a, b.left);
  return b;
}

/** A set of bigint values kept as maximal runs of consecutive values. */
export class IntervalSet {
  /** run start -> run end (inclusive). */
  private runs = new OrderedMap<bigint>();
  private members = 0;

  /** Number of values in the set. */
  get size(): number {
    return this.members;
  }

  /** An independent copy. */
  clone(): IntervalSet {
    const c = new IntervalSet();
    c.runs = this.runs.clone();
    c.members = this.members;
    return c;
  }

  /** Whether `v` is in the set. */
  has(v: bigint): boolean {
    const r = this.runs.floor(v);
    return r !== undefined && r.value >= v;
  }

  /** Adds `v` (no-op if present), merging adjacent runs. */
  add(v: bigint): void {
    const before = this.runs.floor(v);
    if (before && before.value >= v) return;
    this.members++;
    const after = this.runs.get(v + 1n);
    if (before && before.value === v - 1n) {
      if (after !== undefined) {
        this.runs.delete(v + 1n);
        this.runs.set(before.key, after);
      } else this.runs.set(before.key, v);
      return;
    }
    if (after !== undefined) {
      this.runs.delete(v + 1n);
      this.runs.set(v, after);
    } else this.runs.set(v, v);
  }

  /** Removes `v` (no-op if absent), splitting its run. */
  delete(v: bigint): void {
    const r = this.runs.floor(v);
    if (!r || r.value < v) return;
    this.members--;
    const start = r.key;
    const end = r.value;
    if (start === v) this.runs.delete(start);
    else this.runs.set(start, v - 1n);
    if (end > v) this.runs.set(v + 1n, end);
  }

  /** The end of the run containing `v`, or undefined when `v` is not in the set. */
  runEnd(v: bigint): bigint | undefined {
    const r = this.runs.floor(v);
    return r && r.value >= v ? r.value : undefined;
  }

  /** Number of runs (for tests and diagnostics). */
  get runCount(): number {
    return this.runs.size;
  }
}
