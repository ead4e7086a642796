/**
 * `nondeterministic` is sound: on random small clusters, every Service whose outcome (addresses
 * and pool) changes when only what MetalLB leaves to chance changes is flagged. The chance is
 * explored by renaming: metallb-ts takes Go map order (generic pools, the per-namespace pool
 * lists, the owner of an address in overlapping pools) and the restart order among Services with
 * as many status addresses in name order, so permuting the names of the pools (selector pools
 * keep their relative order: MetalLB sorts those by name) and of the Services runs other orders
 * MetalLB may take. Pending Services keep their creationTimestamp order (the live order).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateAll } from '../../src/core/controller/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import type { Config } from '../../src/core/config/types.ts';
import type { Service } from '../../src/core/kube.ts';

let seed = 20260101;
const rnd = (): number => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
function* perms<T>(a: readonly T[]): Generator<T[]> {
  if (a.length <= 1) {
    yield [...a];
    return;
  }
  for (let i = 0; i < a.length; i++) for (const p of perms([...a.slice(0, i), ...a.slice(i + 1)])) yield [a[i]!, ...p];
}

test('every Service whose outcome depends on Go map order or the restart order is flagged (60 random clusters)', () => {
  const missed: string[] = [];
  let varying = 0;
  for (let iter = 0; iter < 60; iter++) {
    const pools = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, id) => {
      const sa = rnd() < 0.4 ? pick([{ namespaces: ['a'] }, { serviceSelectors: [{ matchLabels: { x: 'y' } }] }, { priority: pick([-1, 1, 2]) }, { namespaces: ['a'], priority: 1 }]) : undefined;
      return {
        id,
        selector: !!sa && 'serviceSelectors' in sa,
        spec: {
          addresses: pick([['10.0.0.0/30'], ['10.0.0.0/31'], ['10.0.0.4/31'], ['10.0.0.0/29', '2001:db8::/126'], ['10.0.1.0/31']]),
          ...(rnd() < 0.15 ? { autoAssign: false } : {}),
          ...(sa ? { serviceAllocation: sa } : {}),
        },
      };
    });
    const svcs = Array.from({ length: 1 + Math.floor(rnd() * 5) }, (_, id) => ({
      id,
      ns: pick(['a', 'b']),
      labels: (rnd() < 0.5 ? { x: 'y' } : {}) as Record<string, string>,
      ann: { ...(rnd() < 0.2 ? { 'metallb.io/allow-shared-ip': pick(['k', 'j']) } : {}), ...(rnd() < 0.1 ? { 'metallb.io/loadBalancerIPs': pick(['10.0.0.1', '10.0.1.0']) } : {}) },
      status: rnd() < 0.5 ? pick([['10.0.0.1'], ['10.0.0.2'], ['10.0.0.5'], ['10.0.1.0'], ['10.0.0.0']]) : [],
      port: pick([80, 443]),
      local: rnd() < 0.2,
    }));
    const outcomes = new Map<number, Set<string>>();
    let flagged: Set<number> | undefined;
    const free = pools.filter((p) => !p.selector).map((p) => p.id);
    for (const pp of [...perms(free)].slice(0, 6)) {
      for (const sp of [...perms(svcs.map((s) => s.id))].slice(0, 12)) {
        const pname = (id: number): string => (pools[id]!.selector ? `z${id}` : `p${pp.indexOf(id)}`) + `-${id}`;
        const ps = pools.map((p) => parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: pname(p.id), namespace: 'm' }, spec: p.spec }, []));
        const config = { pools: new Map(ps.map((p) => [p.name, p])) } as unknown as Config;
        const objects = svcs.map(
          (s): Service => ({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { namespace: s.ns, name: `s${sp.indexOf(s.id)}-${s.id}`, labels: s.labels, annotations: s.ann, creationTimestamp: `2024-01-01T00:00:0${s.id}Z` },
            spec: { type: 'LoadBalancer', clusterIPs: ['10.96.0.1'], ports: [{ protocol: 'TCP', port: s.port }], ...(s.local ? { externalTrafficPolicy: 'Local', selector: { app: 'a' } } : {}) },
            status: { loadBalancer: { ingress: s.status.map((ip) => ({ ip })) } },
          }),
        );
        const f = new Set<number>();
        for (const o of allocateAll(config, objects).services) {
          const id = Number(o.service.split('-').pop());
          const set = outcomes.get(id) ?? new Set<string>();
          set.add(JSON.stringify([o.ips, o.pool === null ? null : o.pool.split('-').pop()]));
          outcomes.set(id, set);
          if (o.nondeterministic) f.add(id);
        }
        flagged ??= f;
      }
    }
    for (const s of svcs) {
      if (outcomes.get(s.id)!.size < 2) continue;
      varying++;
      if (!flagged!.has(s.id)) missed.push(`cluster ${iter} service ${s.id}: ${[...outcomes.get(s.id)!].join(' | ')} in ${JSON.stringify({ pools, svcs })}`);
    }
  }
  assert.ok(varying > 20, `the clusters exercise chance (${varying} varying outcomes)`);
  assert.deepEqual(missed, []);
});
