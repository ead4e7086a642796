/**
 * Why a Service gets no address, through the CLI (`explain -o json` and the text output): MetalLB's
 * own text first, then what it means and what to change — never "see the message". One case per
 * failure MetalLB's controller reports, on snapshots shaped as `kubectl get -o yaml` prints them
 * (the API server's defaults: clusterIPs, ipFamilies, ipFamilyPolicy, port names).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { runCliAsync } from '../helpers/cli.ts';
import { referencePath } from '../helpers/reference.ts';
import type { KubeObject } from '../../src/core/kube.ts';

const NS = 'metallb-system';

function node(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
    status: { addresses: [{ type: 'InternalIP', address: '172.18.0.2' }], conditions: [{ type: 'Ready', status: 'True' }] },
  };
}
function pool(name: string, addresses: string[], extra: Record<string, unknown> = {}, namespace = NS): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace }, spec: { addresses, autoAssign: true, avoidBuggyIPs: false, ...extra } };
}
const L2: KubeObject = { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'l2', namespace: NS }, spec: {} };

interface SvcOpts {
  annotations?: Record<string, string>;
  /** spec.clusterIPs; their families give spec.ipFamilies, as the API server sets them. */
  clusterIPs?: string[];
  policy?: 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';
  ips?: string[];
  namespace?: string;
}
/** A Service as `kubectl get svc -o yaml` shows it. */
function svc(name: string, o: SvcOpts = {}): KubeObject {
  const clusterIPs = o.clusterIPs ?? ['10.96.12.34'];
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: o.namespace ?? 'default', uid: `uid-${name}`, creationTimestamp: '2025-03-01T10:00:00Z', annotations: o.annotations ?? {} },
    spec: {
      type: 'LoadBalancer',
      clusterIP: clusterIPs[0],
      clusterIPs,
      ipFamilies: clusterIPs.map((ip) => (ip.includes(':') ? 'IPv6' : 'IPv4')),
      ipFamilyPolicy: o.policy ?? 'SingleStack',
      externalTrafficPolicy: 'Cluster',
      internalTrafficPolicy: 'Cluster',
      allocateLoadBalancerNodePorts: true,
      selector: { app: name },
      sessionAffinity: 'None',
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080, nodePort: 31080 }],
    },
    status: { loadBalancer: o.ips ? { ingress: o.ips.map((ip) => ({ ip, ipMode: 'VIP' })) } : {} },
  };
}
function slice(name: string, nodeName: string): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    addressType: 'IPv4',
    metadata: { name: `${name}-7xk2p`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
    endpoints: [{ addresses: ['10.244.1.7'], nodeName, conditions: { ready: true, serving: true, terminating: false } }],
  };
}
const base = (): KubeObject[] => [node('worker-a'), node('worker-b'), L2, slice('web', 'worker-a')];

interface Case {
  name: string;
  objects: KubeObject[];
  /** The first finding (the root cause) and its severity. */
  id: string;
  severity?: 'error' | 'warning';
  /** MetalLB's own text, quoted first in the message. */
  metallb: string;
  /** What the message says it means. */
  means: RegExp[];
  fix: RegExp[];
  /** the exit status of `explain` (1: pending). */
  exit?: number;
}

const cases: Case[] = [
  {
    name: 'a requested pool without the Service\'s family: ["<nil>"] is not allowed in config',
    objects: [...base(), pool('v6only', ['2001:db8:1::/126']), svc('web', { annotations: { 'metallb.io/address-pool': 'v6only' } })],
    id: 'pool-lacks-family',
    metallb: '["<nil>"] is not allowed in config',
    means: [
      /pool v6only \(requested with metallb\.io\/address-pool\) has no IPv4 address \(it has IPv6 only\), so this IPv4 Service cannot get an address from it/,
      /MetalLB takes its family from spec\.clusterIPs \[10\.96\.12\.34\], which the API server set from spec\.ipFamilies \[IPv4\] and spec\.ipFamilyPolicy SingleStack/,
    ],
    fix: [/^add an IPv4 range to pool v6only, request a pool with IPv4 addresses \(metallb\.io\/address-pool\), or make the Service IPv6 \(spec\.ipFamilies: \[IPv6\]/],
  },
  {
    name: 'a requested pool whose addresses of the family are all taken',
    objects: [
      ...base(),
      pool('edge', ['192.0.2.0/30', '2001:db8::1/128']),
      pool('spare', ['2001:db8:9::/126']),
      svc('holder', { clusterIPs: ['fd00::1'], annotations: { 'metallb.io/address-pool': 'edge' }, ips: ['2001:db8::1'] }),
      svc('web', { clusterIPs: ['fd00::2'], annotations: { 'metallb.io/address-pool': 'edge' } }),
    ],
    id: 'pool-lacks-family',
    metallb: '["<nil>"] is not allowed in config',
    means: [/pool edge \(requested with metallb\.io\/address-pool\) has IPv6 addresses, but none is free/],
    fix: [/add IPv6 addresses to pool edge/, /request another pool \(metallb\.io\/address-pool\) \(pools with free IPv6 addresses this Service may use: spare\)/],
  },
  {
    name: 'PreferDualStack: the second family is missing from the pool (AdditionalAssignFailed)',
    objects: [...base(), pool('v4', ['192.0.2.0/30']), svc('web', { clusterIPs: ['10.96.12.34', 'fd00::34'], policy: 'PreferDualStack' })],
    id: 'pool-lacks-family',
    severity: 'warning',
    exit: 0,
    metallb: '["192.0.2.0" "<nil>"] is not allowed in config',
    means: [
      /pool v4 has no IPv6 address \(it has IPv4 only\), so this PreferDualStack Service gets 192\.0\.2\.0 only and no IPv6 address/,
      /The Service is dual-stack: MetalLB takes its family from spec\.clusterIPs \[10\.96\.12\.34, fd00::34\]/,
    ],
    fix: [/add an IPv6 range to pool v4 if the Service should be reachable over IPv6, or set spec\.ipFamilyPolicy: SingleStack/],
  },
  {
    name: 'RequireDualStack on a pool of one family',
    objects: [...base(), pool('v4', ['192.0.2.0/30']), svc('web', { clusterIPs: ['10.96.12.34', 'fd00::34'], policy: 'RequireDualStack' })],
    id: 'allocation-failed',
    metallb: 'no available IPs',
    means: [/pools tried: v4: /, /spec\.ipFamilyPolicy RequireDualStack/],
    fix: [/add an IPv6 range to pool v4, or set spec\.ipFamilyPolicy: PreferDualStack/],
  },
  {
    name: 'RequireDualStack with cluster IPs of one family',
    objects: [...base(), pool('v4', ['192.0.2.0/30']), svc('web', { policy: 'RequireDualStack' })],
    id: 'family-not-dual-stack',
    metallb: 'requires dual stack but clusterips are not dual stack',
    means: [/spec\.ipFamilyPolicy is RequireDualStack, but the Service has cluster IPs of one family only/],
    fix: [/set spec\.ipFamilyPolicy: PreferDualStack/],
  },
  {
    name: "a requested pool that does not exist (one of that name is outside MetalLB's namespace)",
    objects: [...base(), pool('lab', ['192.0.2.0/30']), pool('edge', ['198.51.100.0/30'], {}, 'default'), svc('web', { annotations: { 'metallb.io/address-pool': 'edge' } })],
    id: 'unknown-pool',
    metallb: 'unknown pool "edge"',
    means: [/requests pool edge \(metallb\.io\/address-pool\), and metallb-system has no IPAddressPool of that name; default\/IPAddressPool\/edge is outside MetalLB's namespace/],
    fix: [/^move IPAddressPool edge into metallb-system, or request an existing pool \(lab\)$/],
  },
  {
    name: 'a requested address in a pool reserved for another namespace',
    objects: [
      ...base(),
      pool('team', ['192.0.2.0/30'], { serviceAllocation: { namespaces: ['team-a'] } }),
      pool('shared', ['198.51.100.0/30']),
      svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.1' } }),
    ],
    id: 'pool-refuses-service',
    metallb: 'pool team not compatible for ip assignment',
    means: [/the address belongs to pool team, which does not accept this Service: namespace default is not in the pool's namespaces \[team-a\]/],
    fix: [/add namespace default to spec\.serviceAllocation\.namespaces of pool team/, /pools with free IPv4 addresses this Service may use: shared/],
  },
  {
    name: 'no pool this Service may use: which restriction excludes it, per pool',
    objects: [
      ...base(),
      pool('team', ['192.0.2.0/30'], { serviceAllocation: { namespaces: ['team-a'] } }),
      pool('manual', ['198.51.100.0/30'], { autoAssign: false }),
      pool('red', ['203.0.113.0/30'], { serviceAllocation: { serviceSelectors: [{ matchLabels: { color: 'red' } }] } }),
      svc('web'),
    ],
    id: 'allocation-failed',
    metallb: 'no available IPs',
    means: [/team: namespace default is not in the pool's namespaces \[team-a\]/, /manual: autoAssign is false/, /red: no service selector matches/],
    fix: [
      /add namespace default to spec\.serviceAllocation\.namespaces of pool team/,
      /request pool manual explicitly with the annotation metallb\.io\/address-pool: manual/,
      /give the Service labels that a serviceSelector of pool red matches \(color=red\)/,
    ],
  },
  {
    name: 'an exhausted pool names another pool with room',
    objects: [
      ...base(),
      pool('small', ['192.0.2.1/32']),
      pool('big', ['198.51.100.0/28'], { autoAssign: false }),
      svc('holder', { ips: ['192.0.2.1'], annotations: { 'metallb.io/address-pool': 'small' } }),
      svc('web', { annotations: { 'metallb.io/address-pool': 'small' } }),
    ],
    id: 'pool-exhausted',
    metallb: 'no available IPs in pool small',
    means: [/pool small \(requested with metallb\.io\/address-pool\) has no free address for this Service \(all 1 address in use\)/],
    fix: [/add addresses to pool small/, /metallb\.io\/allow-shared-ip/, /pools with free IPv4 addresses this Service may use: big/],
  },
  {
    name: 'a requested address outside every pool',
    objects: [...base(), pool('lab', ['192.0.2.0/30']), svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '203.0.113.9' } })],
    id: 'ip-not-in-pool',
    metallb: '["203.0.113.9"] is not allowed in config',
    means: [/203\.0\.113\.9 is in no IPAddressPool of metallb-system/],
    fix: [/request an address inside a pool \(metallb\.io\/loadBalancerIPs\), or add the address to an IPAddressPool/],
  },
  {
    name: 'a requested address held by a Service with another sharing key',
    objects: [
      ...base(),
      pool('lab', ['192.0.2.0/30']),
      svc('holder', { ips: ['192.0.2.1'], annotations: { 'metallb.io/allow-shared-ip': 'team-a' } }),
      svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.1', 'metallb.io/allow-shared-ip': 'team-b' } }),
    ],
    id: 'sharing-conflict',
    metallb: 'can\'t change sharing key for "default/web", address also in use by default/holder',
    means: [/192\.0\.2\.1 is held by default\/holder, which cannot share it with this Service: the metallb\.io\/allow-shared-ip values differ \("team-b" here, "team-a" on default\/holder\)/],
    fix: [/^set metallb\.io\/allow-shared-ip: "team-a" on this Service, or request another address for this Service/],
  },
  {
    name: 'a requested address of the other family',
    objects: [...base(), pool('lab', ['192.0.2.0/30', '2001:db8::/126']), svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '2001:db8::1' } })],
    id: 'requested-ips-invalid',
    metallb: 'requested loadBalancer IP(s) ["2001:db8::1"] does not match the ipFamily of the service',
    means: [/the requested address is not of the Service's family; the Service is IPv4/],
    fix: [/request an address of the Service's family, or recreate the Service with spec\.ipFamilies matching the address/],
  },
  {
    name: 'a requested address outside the requested pool',
    objects: [...base(), pool('lab', ['192.0.2.0/30']), pool('edge', ['198.51.100.0/30']), svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.1', 'metallb.io/address-pool': 'edge' } })],
    id: 'requested-ips-invalid',
    metallb: 'requested loadBalancer IP(s) ["192.0.2.1"] is not compatible with requested address pool edge',
    means: [/is not in pool edge, which metallb\.io\/address-pool requests/],
    fix: [/drop one of the two requests, or request an address inside pool edge/],
  },
  {
    name: 'two requested addresses of one family',
    objects: [...base(), pool('lab', ['192.0.2.0/30']), svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.1,192.0.2.2' } })],
    id: 'requested-ips-invalid',
    metallb: 'IPFamilyForAddresses: same address family ["192.0.2.1" "192.0.2.2"]',
    means: [/two addresses must be one IPv4 and one IPv6/],
    fix: [/list one IPv4 and one IPv6 address in metallb\.io\/loadBalancerIPs/],
  },
  {
    name: 'an unreadable requested address',
    objects: [...base(), pool('lab', ['192.0.2.0/30']), svc('web', { annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.300' } })],
    id: 'requested-ips-invalid',
    metallb: 'invalid metallb.io/loadBalancerIPs: "192.0.2.300"',
    means: [/MetalLB cannot read the addresses the Service requests/],
    fix: [/write metallb\.io\/loadBalancerIPs as one address or "IPv4,IPv6"/],
  },
  {
    name: 'no IPAddressPool at all',
    objects: [...base(), svc('web')],
    id: 'no-pools',
    metallb: 'pools are empty',
    means: [/the controller has no IPAddressPool in metallb-system/],
    fix: [/create an IPAddressPool in metallb-system/],
  },
];

const list = (items: KubeObject[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

test("explain: MetalLB's allocation error, what it means and what to change", { concurrency: 4 }, async (t) => {
  await Promise.all(
    cases.map((c) =>
      t.test(c.name, async () => {
        const j = await runCliAsync(['explain', 'svc/web', '-n', 'default', '-o', 'json', '-f', '-'], list(c.objects));
        assert.equal(j.status, c.exit ?? 1, j.stderr);
        const e = JSON.parse(j.stdout);
        const f = e.findings.find((x: any) => x.id === c.id);
        assert.ok(f, `finding ${c.id} in ${JSON.stringify(e.findings.map((x: any) => x.id))}`);
        assert.equal(f.severity, c.severity ?? 'error');
        if ((c.severity ?? 'error') === 'error') assert.equal(e.findings[0].id, c.id, 'the allocation is the root cause: first');
        assert.ok(f.message.startsWith(`MetalLB reports: ${c.metallb}. It means: `), f.message);
        for (const m of c.means) assert.match(f.message, m);
        for (const m of c.fix) assert.match(f.fix, m);
        for (const x of e.findings) assert.doesNotMatch(x.fix, /see the message/, `${x.id}: a real fix`);

        const text = await runCliAsync(['explain', 'svc/web', '-n', 'default', '-f', '-'], list(c.objects));
        assert.ok(text.stdout.includes(c.metallb), 'the text output quotes MetalLB');
        assert.ok(text.stdout.includes(f.fix), 'and carries the fix');
      }),
    ),
  );
});

test('the differential file controller-nil-ip-error-text.yaml: the allocation is the root cause, not the missing Nodes', async () => {
  const file = referencePath('differential', 'controller-nil-ip-error-text.yaml');
  const j = await runCliAsync(['explain', 'svc/web', '-n', 'default', '-o', 'json', '-f', file]);
  assert.equal(j.status, 1);
  const e = JSON.parse(j.stdout);
  assert.deepEqual(
    e.findings.map((f: any) => f.id),
    ['pool-lacks-family', 'no-nodes'],
  );
  assert.equal(e.allocation.dryRun.error, '["<nil>"] is not allowed in config');
  assert.deepEqual(e.allocation.dryRun.reason, { kind: 'poolLacksFamily', pool: 'v6only', family: 'ipv4', ips: ['<nil>'], available: ['ipv6'] });
  // The file says what MetalLB does: the same text, the Service pending.
  assert.match(readFileSync(file, 'utf8'), /\["<nil>"\] is not allowed in config/);
  assert.ok(parse(readFileSync(file, 'utf8')).items.length > 0);
});
