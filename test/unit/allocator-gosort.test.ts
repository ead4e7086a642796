/**
 * goSortSlice against Go itself: test/unit/fixtures/go-sort-slice.json holds the index orders
 * Go 1.26's sort.Slice produced (pdqsort has not changed since Go 1.19; MetalLB v0.16.1 builds
 * with Go 1.25) for 504 inputs of 0–130 elements, with MetalLB's sortPools comparator (true both
 * ways for ties and negative priorities), a strict `<` over many duplicates, a comparator that
 * always answers true (unbalanced partitions: pattern breaking and the heapsort fallback) and
 * descending inputs (the reversal hint). Regenerate with
 * `cd test/unit/fixtures/go-sort-slice-gen && go run . > ../go-sort-slice.json`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { goSortSlice, sortPoolsLess } from '../../src/core/allocator/gosort.ts';

interface Vector {
  cmp: 'sortPools' | 'less' | 'allTrue' | 'desc';
  input: number[];
  output: number[];
}
const vectors = JSON.parse(readFileSync(new URL('./fixtures/go-sort-slice.json', import.meta.url), 'utf8')) as Vector[];

const comparators: Record<Vector['cmp'], (a: number, b: number) => boolean> = {
  sortPools: sortPoolsLess,
  less: (a, b) => a < b,
  desc: (a, b) => a < b,
  allTrue: () => true,
};

test('goSortSlice moves elements exactly as Go sort.Slice (504 vectors)', () => {
  assert.equal(vectors.length, 504);
  const failures: string[] = [];
  for (const v of vectors) {
    const idx = v.input.map((_, i) => i);
    goSortSlice(idx, (a, b) => comparators[v.cmp](v.input[a]!, v.input[b]!));
    if (JSON.stringify(idx) !== JSON.stringify(v.output)) failures.push(`${v.cmp} n=${v.input.length} ${JSON.stringify(v.input)}`);
  }
  assert.deepEqual(failures, []);
});

const poolCases: Array<{ name: string; priorities: number[]; want: number[] }> = [
  { name: 'two ties: the by-name list comes out reversed', priorities: [0, 0], want: [1, 0] },
  { name: 'three ties: reversed', priorities: [0, 0, 0], want: [2, 1, 0] },
  { name: 'priorities ascending, no priority last', priorities: [0, 2, 1], want: [2, 1, 0] },
  { name: 'equal positive priorities keep their order', priorities: [3, 3], want: [0, 1] },
  { name: 'a negative priority goes first', priorities: [0, -1], want: [1, 0] },
  { name: 'a negative priority before positives too', priorities: [1, -1, 2], want: [1, 0, 2] },
];
for (const c of poolCases) {
  test(`sortPools: ${c.name}`, () => {
    const idx = c.priorities.map((_, i) => i);
    goSortSlice(idx, (a, b) => sortPoolsLess(c.priorities[a]!, c.priorities[b]!));
    assert.deepEqual(idx, c.want);
  });
}
