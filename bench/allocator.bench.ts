/**
 * Allocator figures: allocating services one by one into big pools (no assertions).
 * `npx node bench/allocator.bench.ts` prints `name: X ms` lines.
 */
import { Allocator } from '../src/core/allocator/index.ts';
import { parsePool } from '../src/core/config/index.ts';
import type { IPAddressPool } from '../src/core/kube.ts';
import { allocateAll } from '../src/core/controller/index.ts';
import type { Config } from '../src/core/config/types.ts';
import type { Service } from '../src/core/kube.ts';

function pool(name: string, addresses: string[], extra: Record<string, unknown> = {}) {
  const cr: IPAddressPool = { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'metallb-system' }, spec: { addresses, ...extra } };
  return parsePool(cr, []);
}

function time(name: string, fn: () => void): void {
  const t0 = performance.now();
  fn();
  console.log(`${name}: ${(performance.now() - t0).toFixed(1)} ms`);
}

const N = 10_000;

time(`allocate ${N} services one by one into a /16 (ipv4)`, () => {
  const a = new Allocator();
  a.setPools([pool('p', ['10.0.0.0/16'])]);
  for (let i = 0; i < N; i++) a.allocate({ key: `default/s${i}`, namespace: 'default' }, 'ipv4');
});

time(`allocate ${N} services one by one into a /16 with avoidBuggyIPs`, () => {
  const a = new Allocator();
  a.setPools([pool('p', ['10.0.0.0/16'], { avoidBuggyIPs: true })]);
  for (let i = 0; i < N; i++) a.allocate({ key: `default/s${i}`, namespace: 'default' }, 'ipv4');
});

time(`allocate ${N} services one by one into a /64 (ipv6)`, () => {
  const a = new Allocator();
  a.setPools([pool('p', ['2001:db8::/64'])]);
  for (let i = 0; i < N; i++) a.allocate({ key: `default/s${i}`, namespace: 'default' }, 'ipv6');
});

time(`allocate ${N} sharing services (20 per address, distinct ports) into a /16`, () => {
  const a = new Allocator();
  a.setPools([pool('p', ['10.0.0.0/16'])]);
  for (let i = 0; i < N; i++) {
    a.allocate({ key: `default/s${i}`, namespace: 'default', sharingKey: `k${i % 500}`, ports: [{ protocol: 'TCP', port: 1000 + Math.floor(i / 500) }] }, 'ipv4');
  }
});

time(`release every other of ${N} services and reallocate them into a /16`, () => {
  const a = new Allocator();
  a.setPools([pool('p', ['10.0.0.0/16'])]);
  for (let i = 0; i < N; i++) a.allocate({ key: `default/s${i}`, namespace: 'default' }, 'ipv4');
  for (let i = 0; i < N; i += 2) a.unassign(`default/s${i}`);
  for (let i = 0; i < N; i += 2) a.allocate({ key: `default/t${i}`, namespace: 'default' }, 'ipv4');
});

{
  const p = pool('p', ['10.0.0.0/16']);
  const config: Config = { pools: new Map([['p', p]]), peers: new Map(), bfdProfiles: new Map(), poolsByNamespace: new Map(), poolsByServiceSelector: [] };
  const services: Service[] = [];
  for (let i = 0; i < N; i++) {
    services.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: `s${i}`, namespace: 'default' },
      spec: { type: 'LoadBalancer', clusterIPs: ['10.96.0.1'], ports: [{ protocol: 'TCP', port: 80 }] },
      ...(i % 2 === 0 ? { status: { loadBalancer: { ingress: [{ ip: `10.0.${(i >> 8) & 255}.${i & 255}` }] } } } : {}),
    });
  }
  time(`allocateAll dry run over ${N} services (half with status addresses) into a /16`, () => {
    allocateAll(config, services);
  });
}
