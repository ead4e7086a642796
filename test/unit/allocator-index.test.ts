/**
 * The allocator's address index against a naive reference that walks every range address by
 * address (MetalLB's algorithm, written down from the allocator README), on random operation
 * sequences; plus the ordered containers on their own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Allocator, AllocationError, type AllocRequest, type Port } from '../../src/core/allocator/index.ts';
import { OrderedMap, IntervalSet } from '../../src/core/allocator/ordered.ts';
import { parsePool } from '../../src/core/config/index.ts';
import { cidrLast, formatIP, to16, type IP } from '../../src/core/ip.ts';
import type { Pool } from '../../src/core/config/types.ts';
import { mulberry32 as rng } from '../helpers/rng.ts';

function mkPool(name: string, addresses: string[], avoidBuggyIPs = false): Pool {
  return parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'm' }, spec: { addresses, avoidBuggyIPs } }, []);
}

/** Naive model of the README: per-address records, linear walk of every block. */
class Reference {
  allocs = new Map<string, { ips: IP[]; ports: Port[]; sk: string; bk: string }>();
  keys = new Map<bigint, { sk: string; bk: string }>();
  ports = new Map<bigint, Map<string, string>>();
  holders = new Map<bigint, Set<string>>();
  check(key: string, a: bigint, ports: readonly Port[], sk: string, bk: string): boolean {
    const r = this.keys.get(a);
    if (!r) return true;
    const conflict = r.sk === '' || sk === '' || r.sk !== sk || r.bk !== bk;
    if (conflict && [...(this.holders.get(a) ?? [])].some((s) => s !== key)) return false;
    for (const p of ports) {
      const cur = this.ports.get(a)?.get(`${p.protocol}/${p.port}`);
      if (cur !== undefined && cur !== key) return false;
    }
    return true;
  }
  release(key: string): void {
    const al = this.allocs.get(key);
    if (!al) return;
    this.allocs.delete(key);
    for (const ip of al.ips) {
      const a = to16(ip);
      for (const p of al.ports) this.ports.get(a)?.delete(`${p.protocol}/${p.port}`);
      this.holders.get(a)?.delete(key);
      if ((this.ports.get(a)?.size ?? 0) === 0) {
        this.ports.delete(a);
        this.keys.delete(a);
      }
    }
  }
  allocateFromPool(req: AllocRequest, family: 'ipv4' | 'ipv6', pool: Pool): string[] | null {
    const existing = this.allocs.get(req.key);
    const ports = req.ports ?? [];
    const sk = req.sharingKey ?? '';
    const bk = req.backendKey ?? '';
    let chosen: IP | undefined;
    if (existing) {
      if (existing.ips[0].family !== family) return null;
      chosen = existing.ips[0];
      if (!this.check(req.key, to16(chosen), ports, sk, bk)) return null;
    } else {
      for (const c of pool.cidrs) {
        if (c.family !== family) continue;
        for (let v = c.base; v <= cidrLast(c); v++) {
          const ip: IP = { family: c.family, value: v };
          if (pool.avoidBuggyIPs && family === 'ipv4' && ((v & 255n) === 0n || (v & 255n) === 255n)) continue;
          if (this.check(req.key, to16(ip), ports, sk, bk)) {
            chosen = ip;
            break;
          }
        }
        if (chosen) break;
      }
      if (!chosen) return null;
    }
    this.release(req.key);
    const a = to16(chosen);
    this.allocs.set(req.key, { ips: [chosen], ports: [...ports], sk, bk });
    this.keys.set(a, { sk, bk });
    if (!this.ports.has(a)) this.ports.set(a, new Map());
    for (const p of ports) this.ports.get(a)!.set(`${p.protocol}/${p.port}`, req.key);
    if (!this.holders.has(a)) this.holders.set(a, new Set());
    this.holders.get(a)!.add(req.key);
    return [formatIP(chosen)];
  }
}

const scenarios: Array<[string, Pool, 'ipv4' | 'ipv6']> = [
  ['ipv4 range across a /24 boundary', mkPool('p', ['10.0.0.240-10.0.1.20']), 'ipv4'],
  ['ipv4 with avoidBuggyIPs', mkPool('p', ['10.0.0.250-10.0.1.10', '10.0.2.0/30'], true), 'ipv4'],
  ['ipv6 blocks out of order', mkPool('p', ['2001:db8::100/125', '2001:db8::/126']), 'ipv6'],
];

for (const [name, pool, family] of scenarios) {
  for (const seed of [1, 2, 3, 4, 5]) {
    test(`index matches the naive walk: ${name}, seed ${seed}`, () => {
      const rand = rng(seed);
      const alloc = new Allocator();
      alloc.setPools([pool]);
      const ref = new Reference();
      const sharing = ['', '', 'a', 'b'];
      const backends = ['', 'x'];
      let failures = 0;
      let shared = 0;
      for (let step = 0; step < 600; step++) {
        const key = `default/s${Math.floor(rand() * 40)}`;
        if (rand() < 0.3) {
          alloc.unassign(key);
          ref.release(key);
        } else {
          const req: AllocRequest = {
            key,
            namespace: 'default',
            sharingKey: sharing[Math.floor(rand() * sharing.length)],
            backendKey: backends[Math.floor(rand() * backends.length)],
            ports: rand() < 0.2 ? [] : [{ protocol: rand() < 0.5 ? 'TCP' : 'UDP', port: 80 + Math.floor(rand() * 3) }],
          };
          let got: string[] | null;
          try {
            got = [...alloc.allocateFromPool(req, family, 'p').ips];
          } catch (err) {
            assert.ok(err instanceof AllocationError);
            got = null;
          }
          const want = ref.allocateFromPool(req, family, pool);
          assert.deepEqual(got, want, `step ${step}: ${JSON.stringify(req)}`);
          if (got === null) failures++;
          else if (ref.holders.get(to16(ref.allocs.get(key)!.ips[0]))!.size > 1) shared++;
        }
        assert.deepEqual(alloc.ipsOf(key), ref.allocs.get(key)?.ips.map(formatIP) ?? [], `held after step ${step}`);
      }
      assert.ok(failures > 0, 'the sequence exhausts the pool at least once');
      assert.ok(shared > 0, 'the sequence shares an address at least once');
    });
  }
}

test('a /64 IPv6 pool allocates without enumerating it', () => {
  const alloc = new Allocator();
  alloc.setPools([mkPool('v6', ['2001:db8::/64'])]);
  const got = [];
  for (let i = 0; i < 3; i++) got.push(alloc.allocate({ key: `d/s${i}`, namespace: 'd' }, 'ipv6').ips[0]);
  assert.deepEqual(got, ['2001:db8::', '2001:db8::1', '2001:db8::2']);
  assert.equal(alloc.capacity('v6')!.ipv6, 9223372036854775807n);
  assert.equal(alloc.counters('v6').assignedIPv6, 3n);
});

test('OrderedMap floor/ceiling/range against a sorted array', () => {
  const rand = rng(7);
  const m = new OrderedMap<number>();
  const ref = new Map<bigint, number>();
  for (let i = 0; i < 2000; i++) {
    const k = BigInt(Math.floor(rand() * 500));
    if (rand() < 0.4) {
      assert.equal(m.delete(k), ref.delete(k));
    } else {
      m.set(k, i);
      ref.set(k, i);
    }
    const q = BigInt(Math.floor(rand() * 520) - 10);
    const sorted = [...ref.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.equal(m.size, sorted.length);
    assert.equal(
      m.ceiling(q)?.key,
      sorted.find((x) => x >= q),
    );
    assert.equal(
      m.floor(q)?.key,
      [...sorted].reverse().find((x) => x <= q),
    );
  }
  const all = [...m.entries()].map((e) => e.key);
  assert.deepEqual(
    all,
    [...ref.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  assert.deepEqual(
    [...m.range(100n, 200n)].map((e) => e.key),
    all.filter((k) => k >= 100n && k <= 200n),
  );
});

test('IntervalSet keeps maximal runs', () => {
  const rand = rng(11);
  const s = new IntervalSet();
  const ref = new Set<bigint>();
  for (let i = 0; i < 3000; i++) {
    const v = BigInt(Math.floor(rand() * 200));
    if (rand() < 0.45) {
      s.delete(v);
      ref.delete(v);
    } else {
      s.add(v);
      ref.add(v);
    }
  }
  let runs = 0;
  for (let v = -1n; v <= 201n; v++) {
    assert.equal(s.has(v), ref.has(v), `has ${v}`);
    if (ref.has(v) && !ref.has(v - 1n)) runs++;
    if (ref.has(v)) {
      let end = v;
      while (ref.has(end + 1n)) end++;
      assert.equal(s.runEnd(v), end);
    } else assert.equal(s.runEnd(v), undefined);
  }
  assert.equal(s.size, ref.size);
  assert.equal(s.runCount, runs);
});
