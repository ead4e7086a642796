// The BGP test bed itself (test/integration/setup/frr.ts), proven with a hand-written
// FRRConfiguration `metallb-<node>` of the shape MetalLB v0.16.1's speaker writes (bgp-frrk8s.md §2):
// the real frr-k8s v0.0.25 controller renders it, its reloader applies it to Debian's FRR in the node
// namespace, and the router namespace's FRR installs the IPv4 and IPv6 prefixes in its kernel table
// with their communities; removing a prefix, then the object, withdraws them. A second bed peers over
// iBGP to see LOCAL_PREF. Needs root, `bash test/setup.sh` (FRR, frr-k8s) and the test apiserver.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster } from './setup/cluster.ts';
import { checkBGPTestBedPrerequisites, startBGPTestBed, type BGPTestBed } from './setup/frr.ts';

const NS = 'metallb-system';
const GROUP = 'frrk8s.metallb.io';
const VERSION = 'v1beta1';
const PLURAL = 'frrconfigurations';
const NODE_ASN = 64500;
const ROUTER_ASN = 64512;
const V4 = '192.0.2.10/32';
const V6 = '2001:db8:ff::10/128';
const COMMUNITY = '64500:100';
const LARGE = '64500:1:2';

interface Neighbor {
  asn: number;
  address: string;
  port: number;
  passwordSecret: Record<string, never>;
  toAdvertise: {
    allowed: { prefixes?: string[] };
    withCommunity?: Array<{ community: string; prefixes: string[] }>;
    withLocalPref?: Array<{ localPref: number; prefixes: string[] }>;
  };
  toReceive: { allowed: Record<string, never> };
}

/** What MetalLB's speaker would write for one router with an IPv4 and an IPv6 neighbor (bgp-frrk8s.md §2). */
function frrConfiguration(bed: BGPTestBed, v4: string[], v6: string[], opts: { localPref?: number } = {}): object {
  const neighbor = (address: string, prefixes: string[]): Neighbor => {
    const n: Neighbor = { asn: bed.routerASN, address, port: 179, passwordSecret: {}, toAdvertise: { allowed: {} }, toReceive: { allowed: {} } };
    if (prefixes.length) {
      n.toAdvertise.allowed.prefixes = prefixes;
      n.toAdvertise.withCommunity = [
        { community: COMMUNITY, prefixes },
        { community: `large:${LARGE}`, prefixes },
      ];
      if (opts.localPref) n.toAdvertise.withLocalPref = [{ localPref: opts.localPref, prefixes }];
    }
    return n;
  };
  const prefixes = [...v4, ...v6].sort();
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'FRRConfiguration',
    metadata: { name: `metallb-${bed.node}`, namespace: NS },
    spec: {
      nodeSelector: { matchLabels: { 'kubernetes.io/hostname': bed.node } },
      bgp: {
        routers: [
          {
            asn: bed.nodeASN,
            // MetalLB orders neighbors by their session key string "<asn>@<address>-…": here by address
            neighbors: [neighbor(bed.routerIPv6, v6), neighbor(bed.routerIPv4, v4)].sort((a, b) => (a.address < b.address ? -1 : 1)),
            ...(prefixes.length ? { prefixes } : {}),
          },
        ],
      },
    },
  };
}

describe('BGP test bed: FRRConfiguration → real frr-k8s v0.0.25 → FRR 8.4 (node netns) → FRR router netns', () => {
  let cluster: TestCluster | undefined;
  let custom: CustomObjectsApi;
  const beds: BGPTestBed[] = [];

  const apply = async (body: object): Promise<void> => {
    const name = (body as { metadata: { name: string } }).metadata.name;
    try {
      const cur = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name })) as { metadata: { resourceVersion: string } };
      const b = body as { metadata: Record<string, unknown> };
      await custom.replaceNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: PLURAL,
        name,
        body: { ...b, metadata: { ...b.metadata, resourceVersion: cur.metadata.resourceVersion } },
      });
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
      await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, body });
    }
  };
  const remove = (name: string): Promise<unknown> => custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name });
  const secondsSince = (t0: number): string => ((Date.now() - t0) / 1000).toFixed(1);

  before(async () => {
    // fails (not skips) when this machine cannot run the bed: not root, FRR or frr-k8s missing
    checkBGPTestBedPrerequisites();
    cluster = await startTestCluster({ crdDir: null, namespaces: [NS] });
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  });

  after(async () => {
    for (const bed of beds) await bed.stop();
    await cluster?.stop();
  });

  test('eBGP: an IPv4 and an IPv6 prefix with a community and a large community reach the router; removing them withdraws', async () => {
    const t0 = Date.now();
    const bed = await startBGPTestBed({ cluster: cluster!, node: 'bgp-node-a', nodeASN: NODE_ASN, routerASN: ROUTER_ASN });
    beds.push(bed);
    console.log(`# test bed up in ${secondsSince(t0)} s (frr-k8s's first reload included)`);

    const tApply = Date.now();
    await apply(frrConfiguration(bed, [V4], [V6]));
    const r4 = await bed.waitForRoute(V4, { timeoutMs: 40_000 });
    const t4 = secondsSince(tApply);
    const r6 = await bed.waitForRoute(V6, { timeoutMs: 20_000 });
    console.log(`# apply → route at the router: IPv4 ${t4} s, IPv6 ${secondsSince(tApply)} s`);

    assert.equal(r4?.protocol, 'bgp');
    assert.equal(r4?.gateway, bed.nodeIPv4, bed.diagnostics());
    assert.equal(r6?.protocol, 'bgp');
    assert.equal(r6?.family, 'ipv6');
    assert.deepEqual(Object.values(bed.routerSessions()).sort(), ['Established', 'Established'], bed.diagnostics());
    // frr-k8s rendered what the object says
    const conf = bed.renderedConfig();
    assert.match(conf, new RegExp(`router bgp ${NODE_ASN}`));
    assert.match(conf, /network 192\.0\.2\.10\/32/);
    assert.match(conf, /network 2001:db8:ff::10\/128/);

    for (const p of [V4, V6]) {
      const path = bed.routerBGP(p);
      assert.ok(path, `the router has no BGP path for ${p}\n${bed.diagnostics()}`);
      assert.deepEqual(path.communities, [COMMUNITY], `communities of ${p}`);
      assert.deepEqual(path.largeCommunities, [LARGE], `large communities of ${p}`);
      assert.equal(path.asPath, String(NODE_ASN));
      assert.equal(path.localPref, undefined, 'no LOCAL_PREF over eBGP');
    }
    assert.equal(bed.lastReload()?.result, 'success');

    // drop the IPv6 prefix: withdrawn, the IPv4 one stays
    let tw = Date.now();
    await apply(frrConfiguration(bed, [V4], []));
    await bed.waitForRoute(V6, { present: false, timeoutMs: 40_000 });
    console.log(`# IPv6 prefix removed from the object → withdrawn at the router: ${secondsSince(tw)} s`);
    assert.ok(
      bed.routerRoutes().some((r) => r.prefix === V4),
      `the IPv4 route went too\n${bed.diagnostics()}`,
    );

    // delete the object: frr-k8s renders its empty configuration, everything is withdrawn
    tw = Date.now();
    await remove(`metallb-${bed.node}`);
    await bed.waitForRoute(V4, { present: false, timeoutMs: 40_000 });
    console.log(`# FRRConfiguration deleted → IPv4 withdrawn at the router: ${secondsSince(tw)} s`);
    assert.deepEqual(bed.routerRoutes(), []);
  });

  test('iBGP (routerASN = nodeASN): withLocalPref arrives as LOCAL_PREF', async () => {
    // the first bed's namespaces are gone before the second starts (same link addresses)
    for (const bed of beds.splice(0)) await bed.stop();
    const bed = await startBGPTestBed({ cluster: cluster!, node: 'bgp-node-b', nodeASN: NODE_ASN, routerASN: NODE_ASN, frrk8sDebounceMs: 500 });
    beds.push(bed);
    const tApply = Date.now();
    await apply(frrConfiguration(bed, [V4], [V6], { localPref: 250 }));
    await bed.waitForRoute(V4, { timeoutMs: 40_000 });
    await bed.waitForRoute(V6, { timeoutMs: 20_000 });
    console.log(`# iBGP, frr-k8s debounce 500 ms: apply → both routes at the router ${secondsSince(tApply)} s`);
    for (const p of [V4, V6]) {
      const path = bed.routerBGP(p);
      assert.ok(path, `the router has no BGP path for ${p}\n${bed.diagnostics()}`);
      assert.equal(path.localPref, 250, `LOCAL_PREF of ${p}\n${JSON.stringify(path.raw)}`);
      assert.deepEqual(path.communities, [COMMUNITY]);
      assert.deepEqual(path.largeCommunities, [LARGE]);
    }
    await remove(`metallb-${bed.node}`);
    await bed.waitForRoute(V4, { present: false, timeoutMs: 40_000 });
    await bed.waitForRoute(V6, { present: false, timeoutMs: 20_000 });
  });
});
