// BGP mode end to end, with real components only: the test kube-apiserver, the metallb-ts controller
// and speaker processes, the real frr-k8s v0.0.25 controller and its reloader driving Debian's FRR in a
// "node" network namespace, and a second FRR in a "router" namespace (test/integration/setup/frr.ts).
//
//  1. eBGP, MetalLB in its own namespace (mlb-bgp: the speaker's configuration path outside
//     metallb-system) and frr-k8s in another (frr-k8s-system: the BGPPeer's Secret password is
//     converted to clear text), dual stack: the controller gives a RequireDualStack Service an IPv4
//     and an IPv6 address, the speaker writes metallb-<node>, and the router's kernel holds both
//     prefixes with their legacy, large and named communities over a TCP-MD5 protected session.
//     ServiceBGPStatus, ConfigurationState and the nodeAssigned event are checked in the API. A
//     configuration the speaker rejects is reported (ConfigurationState Invalid) while the routes
//     stay; ETP Local without a local endpoint withdraws the routes, an endpoint back announces them,
//     deleting the Service withdraws them.
//  2. iBGP with MetalLB and frr-k8s in one namespace (the passwordSecret reference is passed
//     through to frr-k8s, which reads the Secret itself): LOCAL_PREF reaches the router.
//
// Needs root, `bash test/setup.sh` (apiserver, FRR, frr-k8s). Prints the time from the Service
// getting its address to the route at the router.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestCluster, type TestCluster } from './setup/cluster.ts';
import { checkBGPTestBedPrerequisites, startBGPTestBed, type BGPTestBed } from './setup/frr.ts';
import { speakerLogs, type SpeakerProc } from './setup/speaker.ts';
import { DUAL_STACK_APISERVER_ARGS, TestAPI, dualStackService, endpointSlice, secondsSince, spawnBGPSpeaker, spawnController, stopSpeaker, until, type ControllerProc } from './setup/metallb-bgp.ts';
import type { KubeObject, Service, ServiceBGPStatus } from '../../src/core/kube.ts';
import type { FRRConfiguration } from '../../src/core/frrk8s/types.ts';

const MLB_NS = 'mlb-bgp';
const FRR_NS = 'frr-k8s-system';
const IBGP_NS = 'mlb-ibgp';
const NODE_ASN = 64512;
const ROUTER_ASN = 64513;
const PASSWORD = 'bgp-md5-secret';

describe('BGP mode end to end: metallb-ts speaker → frr-k8s → FRR → router', { timeout: 600_000 }, () => {
  let cluster: TestCluster | undefined;
  let api: TestAPI;
  const beds: BGPTestBed[] = [];
  const speakers: SpeakerProc[] = [];
  const controllers: ControllerProc[] = [];

  before(async () => {
    checkBGPTestBedPrerequisites();
    cluster = await startTestCluster({ namespaces: [MLB_NS, FRR_NS, IBGP_NS], extraApiserverArgs: DUAL_STACK_APISERVER_ARGS });
    api = new TestAPI(cluster);
  });

  after(async () => {
    for (const s of speakers) await stopSpeaker(s);
    for (const c of controllers) await c.stop();
    for (const b of beds) await b.stop();
    await cluster?.stop();
  });

  const diag = (bed?: BGPTestBed): string => `${speakerLogs(speakers, cluster)}\n${controllers.map((c) => c.lines.slice(-10).join('\n')).join('\n')}\n${bed?.diagnostics() ?? ''}`;

  test('eBGP, own namespaces, dual stack, communities, MD5 password from a Secret (converted), ETP Local, rejected config kept', async () => {
    const node = 'bgp-node-a';
    const bed = await startBGPTestBed({ cluster: cluster!, node, namespace: FRR_NS, nodeASN: NODE_ASN, routerASN: ROUTER_ASN, routerPassword: PASSWORD });
    beds.push(bed);
    const objects: KubeObject[] = [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bgp-auth', namespace: MLB_NS }, type: 'kubernetes.io/basic-auth', data: { password: Buffer.from(PASSWORD).toString('base64') } },
      { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'bgp-pool', namespace: MLB_NS }, spec: { addresses: ['192.0.2.0/28', '2001:db8:ff::/124'] } },
      { apiVersion: 'metallb.io/v1beta1', kind: 'Community', metadata: { name: 'names', namespace: MLB_NS }, spec: { communities: [{ name: 'edge-only', value: '64512:999' }] } },
      {
        apiVersion: 'metallb.io/v1beta2',
        kind: 'BGPPeer',
        metadata: { name: 'router-v4', namespace: MLB_NS },
        spec: { myASN: NODE_ASN, peerASN: ROUTER_ASN, peerAddress: bed.routerIPv4, passwordSecret: { name: 'bgp-auth', namespace: MLB_NS } },
      },
      {
        apiVersion: 'metallb.io/v1beta2',
        kind: 'BGPPeer',
        metadata: { name: 'router-v6', namespace: MLB_NS },
        spec: { myASN: NODE_ASN, peerASN: ROUTER_ASN, peerAddress: bed.routerIPv6, passwordSecret: { name: 'bgp-auth', namespace: MLB_NS } },
      },
      {
        apiVersion: 'metallb.io/v1beta1',
        kind: 'BGPAdvertisement',
        metadata: { name: 'adv', namespace: MLB_NS },
        spec: { ipAddressPools: ['bgp-pool'], communities: ['64512:100', 'large:64512:1:2', 'edge-only'] },
      },
    ];
    for (const o of objects) await api.create(o);
    const controller = spawnController(cluster!, MLB_NS);
    controllers.push(controller);
    const speaker = spawnBGPSpeaker(cluster!, node, MLB_NS, FRR_NS);
    speakers.push(speaker);

    for (const o of dualStackService('web', 'default', node, 'Local')) await api.create(o);
    const svc = await until(
      'the controller to give web an IPv4 and an IPv6 address',
      async () => {
        const s = await api.get<Service>('Service', 'default', 'web');
        return (s?.status?.loadBalancer?.ingress?.length ?? 0) === 2 ? s : undefined;
      },
      () => diag(bed),
      60_000,
    );
    const tAssigned = Date.now();
    const ips = svc!.status!.loadBalancer!.ingress!.map((i) => i.ip!);
    const v4 = `${ips.find((ip) => !ip.includes(':'))}/32`;
    const v6 = `${ips.find((ip) => ip.includes(':'))}/128`;
    const r4 = await bed.waitForRoute(v4, { timeoutMs: 60_000 }).catch((e: Error) => {
      throw new Error(`${e.message}\n${diag(bed)}`);
    });
    const t4 = secondsSince(tAssigned);
    const r6 = await bed.waitForRoute(v6, { timeoutMs: 30_000 }).catch((e: Error) => {
      throw new Error(`${e.message}\n${diag(bed)}`);
    });
    console.log(`# Service got its addresses → route at the router: IPv4 ${t4} s, IPv6 ${secondsSince(tAssigned)} s (speaker debounce 3 s + frr-k8s debounce 3 s + reload + BGP)`);
    assert.equal(r4?.protocol, 'bgp');
    assert.equal(r4?.gateway, bed.nodeIPv4);
    assert.equal(r6?.protocol, 'bgp');
    assert.deepEqual(Object.values(bed.routerSessions()).sort(), ['Established', 'Established'], 'both sessions up with the MD5 password');
    for (const p of [v4, v6]) {
      const path = bed.routerBGP(p);
      assert.ok(path, `no BGP path for ${p}\n${bed.diagnostics()}`);
      assert.deepEqual([...path.communities].sort(), ['64512:100', '64512:999'], `communities of ${p} (the named one resolved)`);
      assert.deepEqual(path.largeCommunities, ['64512:1:2'], `large communities of ${p}`);
    }

    // What the speaker wrote: the password in clear (frr-k8s runs in another namespace), the family filter.
    const frr = await api.get<FRRConfiguration>('FRRConfiguration', FRR_NS, `metallb-${node}`);
    assert.ok(frr);
    const neighbors = frr.spec.bgp.routers?.flatMap((r) => r.neighbors ?? []) ?? [];
    assert.deepEqual(
      neighbors.map((n) => [n.address, n.password, n.toAdvertise.allowed.prefixes]),
      [
        [bed.routerIPv4, PASSWORD, [v4]],
        [bed.routerIPv6, PASSWORD, [v6]],
      ],
    );
    assert.equal(await api.get('FRRConfiguration', MLB_NS, `metallb-${node}`), null, 'nothing written to the MetalLB namespace');
    const statuses = await until(
      'the ServiceBGPStatus',
      async () => {
        const l = await api.list<ServiceBGPStatus>('ServiceBGPStatus', MLB_NS);
        return l.length === 1 && l[0]!.status?.peers?.length === 2 ? l : undefined;
      },
      () => diag(bed),
      30_000,
    );
    assert.deepEqual(statuses[0]!.status, { node, serviceName: 'web', serviceNamespace: 'default', peers: ['router-v4', 'router-v6'] });
    assert.equal(statuses[0]!.metadata?.labels?.['metallb.io/node'], node);
    const state = await until(
      'ConfigurationState speaker-<node> Valid',
      async () => {
        const cs = await api.get<KubeObject & { status?: { result?: string } }>('ConfigurationState', MLB_NS, `speaker-${node}`);
        return cs?.status?.result === 'Valid' ? cs : undefined;
      },
      () => diag(bed),
      30_000,
    );
    assert.equal(state.metadata?.labels?.['metallb.io/component-type'], 'speaker');
    const events = await api.list<KubeObject & { reason?: string; message?: string }>('Event', 'default', { fieldSelector: 'involvedObject.name=web' });
    assert.ok(
      events.some((e) => e.reason === 'nodeAssigned' && e.message === `announcing from node "${node}" with protocol "bgp"`),
      JSON.stringify(events.map((e) => [e.reason, e.message])),
    );

    // A configuration this speaker rejects (two peers of one router ASN with different router IDs
    // cannot share one FRR): reported, and the routes stay (the previous configuration is kept).
    await api.create({
      apiVersion: 'metallb.io/v1beta2',
      kind: 'BGPPeer',
      metadata: { name: 'clash-a', namespace: MLB_NS },
      spec: { myASN: NODE_ASN, peerASN: 65001, peerAddress: '203.0.113.1', routerID: '10.0.0.1' },
    });
    await api.create({
      apiVersion: 'metallb.io/v1beta2',
      kind: 'BGPPeer',
      metadata: { name: 'clash-b', namespace: MLB_NS },
      spec: { myASN: NODE_ASN, peerASN: 65002, peerAddress: '203.0.113.2', routerID: '10.0.0.2' },
    });
    const invalid = await until(
      'ConfigurationState Invalid',
      async () => {
        const cs = await api.get<KubeObject & { status?: { result?: string; errorSummary?: string } }>('ConfigurationState', MLB_NS, `speaker-${node}`);
        return cs?.status?.result === 'Invalid' ? cs : undefined;
      },
      () => diag(bed),
      30_000,
    );
    assert.match(invalid.status!.errorSummary!, /configuration error: .*router/i);
    await new Promise((r) => setTimeout(r, 8000)); // longer than both debounces
    assert.ok(
      bed.routerRoutes().some((r) => r.prefix === v4),
      `the route must stay while the new configuration is rejected\n${diag(bed)}`,
    );
    const still = await api.get<FRRConfiguration>('FRRConfiguration', FRR_NS, `metallb-${node}`);
    assert.deepEqual(
      still?.spec.bgp.routers?.flatMap((r) => r.neighbors ?? []).map((n) => n.address),
      [bed.routerIPv4, bed.routerIPv6],
    );
    await api.delete('BGPPeer', MLB_NS, 'clash-a');
    await api.delete('BGPPeer', MLB_NS, 'clash-b');
    await until(
      'ConfigurationState Valid again',
      async () => (await api.get<KubeObject & { status?: { result?: string } }>('ConfigurationState', MLB_NS, `speaker-${node}`))?.status?.result === 'Valid',
      () => diag(bed),
      30_000,
    );

    // ETP Local: the endpoint moves to another node → withdrawn; back → announced again.
    let t = Date.now();
    await api.patch('EndpointSlice', 'default', 'web-ep', { endpoints: [{ addresses: ['10.244.1.10'], nodeName: 'elsewhere', conditions: { ready: true } }] });
    await bed.waitForRoute(v4, { present: false, timeoutMs: 40_000 });
    await bed.waitForRoute(v6, { present: false, timeoutMs: 20_000 });
    console.log(`# last local endpoint gone → routes withdrawn at the router: ${secondsSince(t)} s`);
    t = Date.now();
    await api.patch('EndpointSlice', 'default', 'web-ep', { endpoints: endpointSlice('web', 'default', node).endpoints });
    await bed.waitForRoute(v4, { timeoutMs: 40_000 });
    console.log(`# local endpoint back → route at the router: ${secondsSince(t)} s`);

    // Deleting the Service withdraws both routes and the status.
    t = Date.now();
    await api.delete('Service', 'default', 'web');
    await bed.waitForRoute(v4, { present: false, timeoutMs: 40_000 });
    await bed.waitForRoute(v6, { present: false, timeoutMs: 20_000 });
    console.log(`# Service deleted → routes withdrawn: ${secondsSince(t)} s`);
    await until(
      'the ServiceBGPStatus to be deleted',
      async () => (await api.list('ServiceBGPStatus', MLB_NS)).length === 0,
      () => diag(bed),
      30_000,
    );
    await controller.stop();
  });

  test('iBGP, MetalLB and frr-k8s in one namespace: the passwordSecret is passed through, LOCAL_PREF reaches the router', async () => {
    const node = 'bgp-node-b';
    const bed = await startBGPTestBed({ cluster: cluster!, node, namespace: IBGP_NS, nodeASN: NODE_ASN, routerASN: NODE_ASN, routerPassword: PASSWORD });
    beds.push(bed);
    const objects: KubeObject[] = [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bgp-auth', namespace: IBGP_NS }, type: 'kubernetes.io/basic-auth', data: { password: Buffer.from(PASSWORD).toString('base64') } },
      { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'ibgp-pool', namespace: IBGP_NS }, spec: { addresses: ['203.0.113.0/28'] } },
      {
        apiVersion: 'metallb.io/v1beta2',
        kind: 'BGPPeer',
        metadata: { name: 'rr', namespace: IBGP_NS },
        spec: { myASN: NODE_ASN, peerASN: NODE_ASN, peerAddress: bed.routerIPv4, passwordSecret: { name: 'bgp-auth', namespace: IBGP_NS } },
      },
      { apiVersion: 'metallb.io/v1beta1', kind: 'BGPAdvertisement', metadata: { name: 'pref', namespace: IBGP_NS }, spec: { ipAddressPools: ['ibgp-pool'], localPref: 250 } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: 'default' }, spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Cluster', ports: [{ port: 443, protocol: 'TCP' }] } },
      endpointSlice('api', 'default', 'somewhere'),
    ];
    for (const o of objects) await api.create(o);
    // No controller in this namespace: the address is written as a controller would.
    await api.patch('Service', 'default', 'api', { status: { loadBalancer: { ingress: [{ ip: '203.0.113.7', ipMode: 'VIP' }] } } }, 'status');
    const tAssigned = Date.now();
    const speaker = spawnBGPSpeaker(cluster!, node, IBGP_NS, IBGP_NS);
    speakers.push(speaker);
    await bed.waitForRoute('203.0.113.7/32', { timeoutMs: 60_000 }).catch((e: Error) => {
      throw new Error(`${e.message}\n${diag(bed)}`);
    });
    console.log(`# iBGP: speaker start → route at the router ${secondsSince(tAssigned)} s`);
    assert.equal(bed.routerBGP('203.0.113.7/32')?.localPref, 250, bed.diagnostics());
    const frr = await api.get<FRRConfiguration>('FRRConfiguration', IBGP_NS, `metallb-${node}`);
    const n = frr?.spec.bgp.routers?.[0]?.neighbors?.[0];
    assert.deepEqual([n?.password, n?.passwordSecret], [undefined, { name: 'bgp-auth', namespace: IBGP_NS }], 'pass-through: the reference, no clear text');
    assert.equal(bed.routerSessions()[bed.nodeIPv4], 'Established', 'the session is up: frr-k8s read the password from the Secret');
    // The speaker on node a (other namespace) and this one do not see each other's objects.
    assert.equal((await api.list('ServiceBGPStatus', MLB_NS)).length, 0);
    await stopSpeaker(speaker);
    // MetalLB leaves the FRRConfiguration in place when the speaker stops: the route stays.
    await new Promise((r) => setTimeout(r, 4000));
    assert.ok(
      bed.routerRoutes().some((r) => r.prefix === '203.0.113.7/32'),
      'the route survives a speaker restart window',
    );
  });
});
