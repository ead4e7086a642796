/**
 * Which pool `allocate` takes, and which other pools Go map order could have made MetalLB take
 * (`tiedPools`): MetalLB's pinned pools are its ByNamespace list (built from a map: any order)
 * then its ByServiceSelector list (sorted by name), ordered by sortPools through Go's sort.Slice;
 * its generic pools come straight from a map. Expectations are MetalLB v0.16.1's (the insertion
 * sort of up to 12 pools with a comparator that answers true for ties and negative priorities).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Allocator, type AllocRequest } from '../../src/core/allocator/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import type { IPAddressPool } from '../../src/core/kube.ts';

type Spec = NonNullable<IPAddressPool['spec']>;
const ns = (namespaces: string[], priority?: number): Spec['serviceAllocation'] => ({ namespaces, ...(priority !== undefined ? { priority } : {}) });
const sel = (app: string, priority?: number): Spec['serviceAllocation'] => ({ serviceSelectors: [{ matchLabels: { app } }], ...(priority !== undefined ? { priority } : {}) });

interface Case {
  name: string;
  pools: Array<[string, Spec['serviceAllocation'] | undefined, string?]>;
  req?: Partial<AllocRequest>;
  family?: 'ipv4' | 'ipv6' | 'dual';
  pool: string;
  tied: string[];
}

let n = 0;
const cases: Case[] = [
  {
    name: 'two selector pools, no priority: the last by name, always',
    pools: [
      ['a', sel('web')],
      ['b', sel('web')],
    ],
    pool: 'b',
    tied: [],
  },
  {
    name: 'three selector pools, no priority: the last by name',
    pools: [
      ['a', sel('web')],
      ['b', sel('web')],
      ['c', sel('web')],
    ],
    pool: 'c',
    tied: [],
  },
  {
    name: 'selector pools with priorities: the lowest number',
    pools: [
      ['a', sel('web', 2)],
      ['b', sel('web', 1)],
      ['c', sel('web')],
    ],
    pool: 'b',
    tied: [],
  },
  {
    name: 'selector pools with the same priority keep name order',
    pools: [
      ['a', sel('web', 3)],
      ['b', sel('web', 3)],
    ],
    pool: 'a',
    tied: [],
  },
  {
    name: 'a negative priority sorts first',
    pools: [
      ['a', sel('web', 1)],
      ['z', sel('web', -1)],
    ],
    pool: 'z',
    tied: [],
  },
  {
    name: 'two namespace pools, no priority: Go map order decides',
    pools: [
      ['a', ns(['team'])],
      ['b', ns(['team'])],
    ],
    pool: 'b',
    tied: ['a'],
  },
  {
    name: 'two namespace pools with different priorities: no choice',
    pools: [
      ['a', ns(['team'], 2)],
      ['b', ns(['team'], 1)],
    ],
    pool: 'b',
    tied: [],
  },
  {
    name: 'two namespace pools with the same priority: map order',
    pools: [
      ['a', ns(['team'], 5)],
      ['b', ns(['team'], 5)],
    ],
    pool: 'a',
    tied: ['b'],
  },
  {
    name: 'two namespace pools and a selector pool, no priority: the selector pool ends first in every order',
    pools: [
      ['a', ns(['team'])],
      ['b', ns(['team'])],
      ['s', sel('web')],
    ],
    pool: 's',
    tied: [],
  },
  {
    name: 'a full namespace pool leaves the other: no choice',
    pools: [
      ['a', ns(['team']), '10.9.0.0/32'],
      ['b', ns(['team'])],
    ],
    req: { key: 'team/other' },
    pool: 'b',
    tied: [],
  },
  {
    name: 'two generic pools: map order',
    pools: [
      ['g1', undefined],
      ['g2', undefined],
    ],
    pool: 'g1',
    tied: ['g2'],
  },
  {
    name: 'a pinned pool wins over generic pools: no choice',
    pools: [
      ['g1', undefined],
      ['g2', undefined],
      ['p', sel('web')],
    ],
    pool: 'p',
    tied: [],
  },
  {
    name: 'IPv6 service: only the generic pool with IPv6 counts',
    pools: [
      ['g1', undefined],
      ['g2', undefined, '2001:db8::/126'],
    ],
    family: 'ipv6',
    req: { ipFamilies: ['IPv6'] },
    pool: 'g2',
    tied: [],
  },
];

for (const c of cases) {
  test(`allocate: ${c.name}`, () => {
    const a = new Allocator();
    a.setPools(
      c.pools.map(([name, sa, cidr]) =>
        parsePool(
          {
            apiVersion: 'metallb.io/v1beta1',
            kind: 'IPAddressPool',
            metadata: { name, namespace: 'm' },
            spec: { addresses: [cidr ?? `10.${++n % 250}.0.0/30`], ...(sa ? { serviceAllocation: sa } : {}) },
          },
          [],
        ),
      ),
    );
    if (c.req?.key === 'team/other') {
      a.assign({ key: 'team/other', namespace: 'team' }, [{ family: 'ipv4', value: (10n << 24n) | (9n << 16n) }]);
    }
    const r = a.allocate({ key: 'team/web', namespace: 'team', labels: { app: 'web' }, ...(c.req?.ipFamilies ? { ipFamilies: c.req.ipFamilies } : {}) }, c.family ?? 'ipv4');
    assert.equal(r.pool, c.pool);
    assert.deepEqual(r.tiedPools, c.tied);
    assert.deepEqual(
      r.tiedChoices.map((t) => t.pool),
      c.tied,
    );
    for (const t of r.tiedChoices) assert.equal(t.ips.length, 1, 'the address the other pool would have given');
  });
}
