/**
 * The controller cases of the shared differential clusters (test/reference/differential: clusters on which metallb-ts once disagreed
 * with MetalLB v0.16.1's own controller): each file goes through the code `allocate --dry-run`
 * uses — the snapshot loader, the controller's configuration (IPAddressPools, Communities and
 * Namespaces of the state) and allocateAll — and must give MetalLB's result as the file's header
 * comment states it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { referencePath } from '../helpers/reference.ts';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { parseConfig } from '../../src/core/config/index.ts';
import { allocateAll, type AllocateAllResult } from '../../src/core/controller/index.ts';
import { emptyClusterState, DEFAULT_METALLB_NAMESPACE } from '../../src/core/kube.ts';

const DIR = referencePath('differential') + '/';

async function dryRun(file: string): Promise<AllocateAllResult> {
  const state = await loadSnapshot([DIR + file]);
  const mine = (o: { metadata?: { namespace?: string } }) => o.metadata?.namespace === DEFAULT_METALLB_NAMESPACE;
  const config = parseConfig({
    ...emptyClusterState(),
    ipAddressPools: state.ipAddressPools.filter(mine),
    communities: state.communities.filter(mine),
    namespaces: state.namespaces,
  });
  return allocateAll(config, state.services);
}

const cases: Array<{ file: string; check: (r: AllocateAllResult) => void }> = [
  {
    // sortPools answers true for ties; insertion sort reverses the by-name ByServiceSelector list.
    file: 'controller-equal-priority-selector-pools.yaml',
    check: (r) => {
      const [web] = r.services;
      assert.equal(web!.pool, 'b-pool');
      assert.deepEqual(web!.ips, ['10.0.2.0']);
      assert.equal(web!.nondeterministic, undefined, 'MetalLB always decides this way');
    },
  },
  {
    // priority -1: the comparator answers true both ways; insertion sort puts neg-pool first.
    file: 'controller-negative-priority-pool.yaml',
    check: (r) => {
      const [web] = r.services;
      assert.equal(web!.service, 'team-a/web');
      assert.equal(web!.pool, 'neg-pool');
      assert.deepEqual(web!.ips, ['10.0.2.0']);
      assert.equal(web!.nondeterministic, undefined, 'one namespace pool: its map order cannot vary');
    },
  },
  {
    // selectIPsForFamilyAndPolicy returns [nil]; Assign fails with MetalLB's text.
    file: 'controller-nil-ip-error-text.yaml',
    check: (r) => {
      const [web] = r.services;
      assert.deepEqual(web!.ips, []);
      assert.equal(web!.error, '["<nil>"] is not allowed in config');
      assert.deepEqual(
        web!.events.map((e) => [e.type, e.reason, e.message]),
        [['Warning', 'AllocationFailed', 'Failed to allocate IP for "default/web": ["<nil>"] is not allowed in config']],
      );
      assert.deepEqual(web!.reason, { kind: 'poolLacksFamily', pool: 'v6only', family: 'ipv4', ips: ['<nil>'], available: ['ipv6'] });
      assert.deepEqual(web!.events[0]!.cause, web!.reason);
    },
  },
  {
    // Pass 1 keeps 10.0.0.4 and adds an IPv6 address (the allocation key changes: reprocess all);
    // pass 2 clears the dual pair (serviceFamilyChanged) and allocates 10.0.0.0 anew.
    file: 'controller-prefer-dual-single-clusterip-second-pass.yaml',
    check: (r) => {
      const [web] = r.services;
      assert.equal(r.passes, 2);
      assert.deepEqual(web!.ips, ['10.0.0.0']);
      assert.equal(web!.pool, 'public');
      assert.equal(web!.error, null);
      // Its own write makes MetalLB reconcile it again, which adds the IPv6 address back, and so on.
      assert.deepEqual(web!.oscillates, [['10.0.0.0'], ['10.0.0.0', '2001:db8:1::']]);
    },
  },
];

for (const c of cases) {
  test(`differential ${c.file}: MetalLB's answer`, { skip: !existsSync(DIR + c.file) && `${DIR + c.file} not present` }, async () => {
    c.check(await dryRun(c.file));
  });
}
