/**
 * Go's `sort.Slice` (Go 1.19 and later: pattern-defeating quicksort, insertion sort for 12
 * elements or fewer), ported line by line from Go's `sort/zsortfunc.go`, so that a comparator
 * that is not a strict weak ordering — MetalLB's `sortPools` answers true both ways for ties —
 * gives exactly the order MetalLB gets. The algorithm is deterministic (its "random" pattern
 * breaker is an xorshift seeded with the length). Test vectors produced by Go itself are in
 * test/unit/allocator-gosort.test.ts.
 */

interface LessSwap {
  less(i: number, j: number): boolean;
  swap(i: number, j: number): void;
}

type Hint = 'unknown' | 'increasing' | 'decreasing';

/** `bits.Len(uint(n))`: the number of bits needed to represent n. */
function bitsLen(n: number): number {
  let len = 0;
  while (n > 0) {
    len++;
    n = Math.floor(n / 2);
  }
  return len;
}

/**
 * Sorts `data` in place as Go's `sort.Slice(data, func(i, j int) bool { return less(data[i], data[j]) })`
 * does, element moves included.
 */
export function goSortSlice<T>(data: T[], less: (a: T, b: T) => boolean): void {
  const ls: LessSwap = {
    less: (i, j) => less(data[i]!, data[j]!),
    swap: (i, j) => {
      const t = data[i]!;
      data[i] = data[j]!;
      data[j] = t;
    },
  };
  pdqsort(ls, 0, data.length, bitsLen(data.length));
}

function insertionSort(data: LessSwap, a: number, b: number): void {
  for (let i = a + 1; i < b; i++) {
    for (let j = i; j > a && data.less(j, j - 1); j--) data.swap(j, j - 1);
  }
}

function siftDown(data: LessSwap, lo: number, hi: number, first: number): void {
  let root = lo;
  for (;;) {
    let child = 2 * root + 1;
    if (child >= hi) break;
    if (child + 1 < hi && data.less(first + child, first + child + 1)) child++;
    if (!data.less(first + root, first + child)) return;
    data.swap(first + root, first + child);
    root = child;
  }
}

function heapSort(data: LessSwap, a: number, b: number): void {
  const first = a;
  const lo = 0;
  const hi = b - a;
  for (let i = Math.floor((hi - 1) / 2); i >= 0; i--) siftDown(data, i, hi, first);
  for (let i = hi - 1; i >= 0; i--) {
    data.swap(first, first + i);
    siftDown(data, lo, i, first);
  }
}

function pdqsort(data: LessSwap, a: number, b: number, limit: number): void {
  const maxInsertion = 12;
  let wasBalanced = true;
  let wasPartitioned = true;
  for (;;) {
    const length = b - a;
    if (length <= maxInsertion) {
      insertionSort(data, a, b);
      return;
    }
    if (limit === 0) {
      heapSort(data, a, b);
      return;
    }
    if (!wasBalanced) {
      breakPatterns(data, a, b);
      limit--;
    }
    let [pivot, hint] = choosePivot(data, a, b);
    if (hint === 'decreasing') {
      reverseRange(data, a, b);
      pivot = b - 1 - (pivot - a);
      hint = 'increasing';
    }
    if (wasBalanced && wasPartitioned && hint === 'increasing') {
      if (partialInsertionSort(data, a, b)) return;
    }
    if (a > 0 && !data.less(a - 1, pivot)) {
      a = partitionEqual(data, a, b, pivot);
      continue;
    }
    const [mid, alreadyPartitioned] = partition(data, a, b, pivot);
    wasPartitioned = alreadyPartitioned;
    const leftLen = mid - a;
    const rightLen = b - mid;
    const balanceThreshold = Math.floor(length / 8);
    if (leftLen < rightLen) {
      wasBalanced = leftLen >= balanceThreshold;
      pdqsort(data, a, mid, limit);
      a = mid + 1;
    } else {
      wasBalanced = rightLen >= balanceThreshold;
      pdqsort(data, mid + 1, b, limit);
      b = mid;
    }
  }
}

function partition(data: LessSwap, a: number, b: number, pivot: number): [number, boolean] {
  data.swap(a, pivot);
  let i = a + 1;
  let j = b - 1;
  while (i <= j && data.less(i, a)) i++;
  while (i <= j && !data.less(j, a)) j--;
  if (i > j) {
    data.swap(j, a);
    return [j, true];
  }
  data.swap(i, j);
  i++;
  j--;
  for (;;) {
    while (i <= j && data.less(i, a)) i++;
    while (i <= j && !data.less(j, a)) j--;
    if (i > j) break;
    data.swap(i, j);
    i++;
    j--;
  }
  data.swap(j, a);
  return [j, false];
}

function partitionEqual(data: LessSwap, a: number, b: number, pivot: number): number {
  data.swap(a, pivot);
  let i = a + 1;
  let j = b - 1;
  for (;;) {
    while (i <= j && !data.less(a, i)) i++;
    while (i <= j && data.less(a, j)) j--;
    if (i > j) break;
    data.swap(i, j);
    i++;
    j--;
  }
  return i;
}

function partialInsertionSort(data: LessSwap, a: number, b: number): boolean {
  const maxSteps = 5;
  const shortestShifting = 50;
  let i = a + 1;
  for (let step = 0; step < maxSteps; step++) {
    while (i < b && !data.less(i, i - 1)) i++;
    if (i === b) return true;
    if (b - a < shortestShifting) return false;
    data.swap(i, i - 1);
    if (i - a >= 2) {
      for (let j = i - 1; j >= 1; j--) {
        if (!data.less(j, j - 1)) break;
        data.swap(j, j - 1);
      }
    }
    if (b - i >= 2) {
      for (let j = i + 1; j < b; j++) {
        if (!data.less(j, j - 1)) break;
        data.swap(j, j - 1);
      }
    }
  }
  return false;
}

const U64 = (1n << 64n) - 1n;

function breakPatterns(data: LessSwap, a: number, b: number): void {
  const length = b - a;
  if (length < 8) return;
  let random = BigInt(length);
  const next = (): bigint => {
    random ^= (random << 13n) & U64;
    random ^= random >> 7n;
    random ^= (random << 17n) & U64;
    return random;
  };
  const modulus = 2 ** bitsLen(length);
  const start = a + Math.floor(length / 4) * 2 - 1;
  for (let idx = start; idx <= a + Math.floor(length / 4) * 2 + 1; idx++) {
    let other = Number(next() & BigInt(modulus - 1));
    if (other >= length) other -= length;
    data.swap(idx, a + other);
  }
}

function choosePivot(data: LessSwap, a: number, b: number): [number, Hint] {
  const shortestNinther = 50;
  const maxSwaps = 4 * 3;
  const l = b - a;
  const swaps = { n: 0 };
  let i = a + Math.floor(l / 4) * 1;
  let j = a + Math.floor(l / 4) * 2;
  let k = a + Math.floor(l / 4) * 3;
  if (l >= 8) {
    if (l >= shortestNinther) {
      i = medianAdjacent(data, i, swaps);
      j = medianAdjacent(data, j, swaps);
      k = medianAdjacent(data, k, swaps);
    }
    j = median(data, i, j, k, swaps);
  }
  if (swaps.n === 0) return [j, 'increasing'];
  if (swaps.n === maxSwaps) return [j, 'decreasing'];
  return [j, 'unknown'];
}

function order2(data: LessSwap, a: number, b: number, swaps: { n: number }): [number, number] {
  if (data.less(b, a)) {
    swaps.n++;
    return [b, a];
  }
  return [a, b];
}

function median(data: LessSwap, a: number, b: number, c: number, swaps: { n: number }): number {
  [a, b] = order2(data, a, b, swaps);
  [b, c] = order2(data, b, c, swaps);
  [a, b] = order2(data, a, b, swaps);
  void a;
  void c;
  return b;
}

function medianAdjacent(data: LessSwap, a: number, swaps: { n: number }): number {
  return median(data, a - 1, a, a + 1, swaps);
}

function reverseRange(data: LessSwap, a: number, b: number): void {
  let i = a;
  let j = b - 1;
  while (i < j) {
    data.swap(i, j);
    i++;
    j--;
  }
}

/**
 * MetalLB's `sortPools` comparator (internal/allocator/allocator.go): `less(i, j)` on the pools'
 * `serviceAllocation.priority`. Both positive: the lower number first; i without priority (0)
 * and j with a positive one: false; anything else (ties, negative priorities): true — so the
 * order of ties and of negative priorities comes from the algorithm, not from the comparator.
 */
export function sortPoolsLess(pi: number, pj: number): boolean {
  if (pi > 0 && pj > 0) return pi < pj;
  if (pi === 0 && pj > 0) return false;
  return true;
}
