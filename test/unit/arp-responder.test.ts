// The responders' decisions (MetalLB internal/layer2 arp.go / ndp.go / announcer.go), the
// gratuitous schedule and interface selection, table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYAML } from 'yaml';
import {
  announcedIPs,
  addAnnounced,
  removeAnnounced,
  arp,
  ndp,
  respondARP,
  respondNDP,
  shouldAnnounce,
  gratuitousARP,
  unsolicitedNA,
  takeOver,
  tick,
  forget,
  gratuitousOffsetsMs,
  GRATUITOUS_INTERVAL_MS,
  GRATUITOUS_WINDOW_MS,
  selectInterfaces,
  excludeRegExp,
  parseExcludeL2,
  DEFAULT_EXCLUDE_L2,
  nodeInterfaces,
} from '../../src/core/arp/index.ts';
import type { ARPFrame, LinkInfo } from '../../src/core/arp/index.ts';
import type { InterfaceSet } from '../../src/core/election/types.ts';

const OUR_MAC = '02:00:00:00:00:0b';
const CLIENT_MAC = '02:00:00:00:00:0a';
const announced = announcedIPs([
  { ips: ['192.0.2.10', '2001:db8::10'], interfaces: 'all' },
  { ips: ['192.0.2.11'], interfaces: ['eth1'] },
  { ips: ['192.0.2.11'], interfaces: ['eth2'] }, // shared IP, another service's advertisement
  { ips: ['192.0.2.12'], interfaces: null },
]);
const ctx = { interface: 'eth0', hardwareAddress: OUR_MAC, announced };

function request(target: string, over: Partial<ARPFrame> = {}): Uint8Array {
  return arp.encode({
    ethernetDestination: 'ff:ff:ff:ff:ff:ff',
    ethernetSource: CLIENT_MAC,
    operation: 'request',
    senderHardwareAddress: CLIENT_MAC,
    senderProtocolAddress: '192.0.2.1',
    targetHardwareAddress: '00:00:00:00:00:00',
    targetProtocolAddress: target,
    ...over,
  });
}

test('shouldAnnounce: announced IPs on allowed interfaces only (MetalLB dropReason)', () => {
  const cases: Array<[string, string, string]> = [
    ['192.0.2.10', 'eth0', 'announce'],
    ['192.0.2.10', 'whatever', 'announce'],
    ['192.0.2.11', 'eth1', 'announce'],
    ['192.0.2.11', 'eth2', 'announce'],
    ['192.0.2.11', 'eth0', 'interface-not-allowed'],
    ['192.0.2.12', 'eth0', 'interface-not-allowed'],
    ['192.0.2.99', 'eth0', 'not-announced'],
    ['2001:db8:0::10', 'eth0', 'announce'],
    ['2001:db8::11', 'eth0', 'not-announced'],
  ];
  for (const [ip, intf, want] of cases) assert.equal(shouldAnnounce(announced, ip, intf), want, `${ip} on ${intf}`);
});

test('ARP responder: replies to the requester with our MAC as sender (RFC 826)', () => {
  const r = respondARP(request('192.0.2.10'), ctx);
  assert.ok('reply' in r);
  assert.deepEqual(r.reply, {
    ethernetDestination: CLIENT_MAC,
    ethernetSource: OUR_MAC,
    operation: 'reply',
    senderHardwareAddress: OUR_MAC,
    senderProtocolAddress: '192.0.2.10',
    targetHardwareAddress: CLIENT_MAC,
    targetProtocolAddress: '192.0.2.1',
  });
  assert.deepEqual(arp.decode(r.bytes), { ok: true, value: r.reply });
  // unicast to our MAC (a neighbor cache refresh) is answered too
  assert.ok('reply' in respondARP(request('192.0.2.10', { ethernetDestination: OUR_MAC }), ctx));
});

test('ARP responder: silent cases and their reasons', () => {
  const cases: Array<[string, Uint8Array, string, string?]> = [
    ['IP nobody here announces', request('192.0.2.99'), 'not-announced'],
    ['interface not in the advertisement', request('192.0.2.11'), 'interface-not-allowed'],
    ['a reply, not a request', request('192.0.2.10', { operation: 'reply' }), 'arp-reply'],
    ['unicast to another MAC', request('192.0.2.10', { ethernetDestination: '02:00:00:00:00:0c' }), 'ethernet-destination'],
    ['truncated frame', request('192.0.2.10').subarray(0, 30), 'short-frame'],
  ];
  for (const [name, frame, why] of cases) {
    const r = respondARP(frame, ctx);
    assert.ok('dropped' in r, name);
    assert.equal(r.dropped, why, name);
  }
  assert.ok('reply' in respondARP(request('192.0.2.11'), { ...ctx, interface: 'eth2' }));
});

test('NDP responder: solicited advertisement to the source, S=1 O=0, target LLA = our MAC', () => {
  const ns = ndp.encode({ type: 'neighbor-solicitation', targetAddress: '2001:db8::10', sourceLinkLayerAddress: CLIENT_MAC });
  const r = respondNDP(ns, '2001:db8::1', ctx);
  assert.ok('reply' in r);
  assert.equal(r.destination, '2001:db8::1');
  assert.deepEqual(r.reply, { type: 'neighbor-advertisement', router: false, solicited: true, override: false, targetAddress: '2001:db8::10', targetLinkLayerAddress: OUR_MAC });
  assert.deepEqual(ndp.decode(r.bytes), { ok: true, value: r.reply });
});

test('NDP responder: silent cases (DAD probes, no source LLA, not ours, advertisements)', () => {
  const ns = (target: string, lla: string | null) => ndp.encode({ type: 'neighbor-solicitation', targetAddress: target, sourceLinkLayerAddress: lla });
  const cases: Array<[string, Uint8Array, string, string]> = [
    ['no source link-layer option', ns('2001:db8::10', null), '2001:db8::1', 'no-source-link-layer-address'],
    ['DAD probe', ns('2001:db8::10', null), '::', 'no-source-link-layer-address'],
    ['IP nobody here announces', ns('2001:db8::99', CLIENT_MAC), '2001:db8::1', 'not-announced'],
    ['advertisement', ndp.encode(unsolicitedNA('2001:db8::10', CLIENT_MAC).message), '2001:db8::1', 'not-neighbor-solicitation'],
    ['garbage', Uint8Array.of(135, 0, 0), '2001:db8::1', 'short-message'],
  ];
  for (const [name, msg, src, why] of cases) {
    const r = respondNDP(msg, src, ctx);
    assert.ok('dropped' in r, name);
    assert.equal(r.dropped, why, name);
  }
  // RFC 4861 7.1.1: a solicitation that crossed a router (hop limit below 255) is ignored
  const good = ns('2001:db8::10', CLIENT_MAC);
  assert.deepEqual(respondNDP(good, '2001:db8::1', ctx, 254), { dropped: 'hop-limit' });
  assert.ok('reply' in respondNDP(good, '2001:db8::1', ctx, 255));
  assert.ok('reply' in respondNDP(good, '2001:db8::1', ctx, -1), 'unknown hop limit (socket without IPV6_RECVHOPLIMIT)');
});

test('gratuitous frames as MetalLB: ARP request + reply to broadcast, SPA = TPA; NA to ff02::1 with O=1 S=0', () => {
  const frames = gratuitousARP('192.0.2.10', OUR_MAC);
  assert.deepEqual(
    frames.map((f) => f.operation),
    ['request', 'reply'],
  );
  for (const f of frames) {
    assert.equal(f.ethernetDestination, 'ff:ff:ff:ff:ff:ff');
    assert.equal(f.targetHardwareAddress, 'ff:ff:ff:ff:ff:ff');
    assert.equal(f.senderProtocolAddress, '192.0.2.10');
    assert.equal(f.targetProtocolAddress, '192.0.2.10');
    assert.equal(f.senderHardwareAddress, OUR_MAC);
  }
  const na = unsolicitedNA('2001:db8::10', OUR_MAC);
  assert.equal(na.destination, 'ff02::1');
  assert.equal(na.message.override, true);
  assert.equal(na.message.solicited, false);
});

test('gratuitous schedule: at once, then every 1.1 s until 5 s after takeover (MetalLB spamLoop)', () => {
  assert.equal(GRATUITOUS_INTERVAL_MS, 1100);
  assert.equal(GRATUITOUS_WINDOW_MS, 5000);
  assert.deepEqual(gratuitousOffsetsMs(), [0, 1100, 2200, 3300, 4400]);
  let s = takeOver(new Map(), '192.0.2.10', 1000);
  assert.equal(s.sendNow, true);
  const again = takeOver(s.state, '192.0.2.10', 3000);
  assert.equal(again.sendNow, false, 'already in its window: extended, no immediate send');
  assert.equal(again.state.get('192.0.2.10'), 8000);
  assert.deepEqual(tick(again.state, 7900).send, ['192.0.2.10']);
  assert.equal(tick(again.state, 8001).state.size, 0);
  s = takeOver(s.state, '192.0.2.11', 1500);
  assert.deepEqual(forget(s.state, '192.0.2.10').size, 1);
});

test('the announced table kept in place (addAnnounced/removeAnnounced) equals announcedIPs of the services left, through 2,000 random changes', () => {
  const sets: InterfaceSet[] = ['all', null, ['eth0'], ['eth1', 'eth2']];
  const services = new Map<string, { ips: string[]; interfaces: InterfaceSet }>();
  const table = new Map<string, InterfaceSet[]>();
  let seed = 7;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return (seed >>> 12) % n;
  };
  const normal = (m: ReadonlyMap<string, readonly InterfaceSet[]>): string[] =>
    [...m]
      .map(
        ([ip, l]) =>
          `${ip} ${l
            .map((x) => JSON.stringify(x))
            .sort()
            .join(' ')}`,
      )
      .sort();
  for (let step = 0; step < 2000; step++) {
    const name = `s${rnd(40)}`;
    const old = services.get(name);
    if (old) removeAnnounced(table, old.ips, old.interfaces);
    if (rnd(3) === 0) services.delete(name);
    else {
      // few addresses, so that services share them; one written non-canonically
      const ips = Array.from({ length: 1 + rnd(2) }, () => (rnd(2) ? `192.0.2.${rnd(12)}` : `2001:db8::${rnd(12).toString(16)}`));
      if (rnd(5) === 0) ips.push('2001:0db8:0:0::1');
      const s = { ips, interfaces: sets[rnd(sets.length)]! };
      services.set(name, s);
      addAnnounced(table, s.ips, s.interfaces);
    }
    assert.deepEqual(normal(table), normal(announcedIPs(services.values())), `step ${step}`);
  }
  assert.ok(table.size > 5, 'the run held several addresses at the end');
});

const link = (name: string, over: Partial<LinkInfo> = {}): LinkInfo => ({
  name,
  index: 1,
  up: true,
  broadcast: true,
  noarp: false,
  master: null,
  hardwareAddress: '02:00:00:00:00:01',
  linkLocal: 'fe80::1',
  ...over,
});

test('interface selection as MetalLB updateInterfaces', () => {
  const exclude = excludeRegExp(DEFAULT_EXCLUDE_L2);
  const cases: Array<[LinkInfo, { arp: boolean; ndp: boolean; skipped: string | null }]> = [
    [link('eth0'), { arp: true, ndp: true, skipped: null }],
    [link('eth1', { linkLocal: null }), { arp: true, ndp: false, skipped: null }],
    [link('eth2', { up: false }), { arp: false, ndp: false, skipped: 'down' }],
    [link('eth3', { master: 'br0' }), { arp: false, ndp: false, skipped: 'enslaved' }],
    [link('eth4', { noarp: true }), { arp: false, ndp: false, skipped: 'noarp' }],
    [link('wg0', { broadcast: false, linkLocal: null }), { arp: false, ndp: false, skipped: null }],
    [link('lo', { broadcast: false, hardwareAddress: null }), { arp: false, ndp: false, skipped: 'excluded' }],
    [link('veth1234'), { arp: false, ndp: false, skipped: 'excluded' }],
    [link('cali9'), { arp: false, ndp: false, skipped: 'excluded' }],
    [link('lo0'), { arp: true, ndp: true, skipped: null }], // ^lo$ only
    [link('br0'), { arp: true, ndp: true, skipped: null }], // the bridge itself answers
  ];
  for (const [l, want] of cases) {
    const [got] = selectInterfaces([l], exclude);
    assert.deepEqual({ arp: got!.arp, ndp: got!.ndp, skipped: got!.skipped }, want, l.name);
  }
  assert.deepEqual(nodeInterfaces([link('eth0'), link('veth1'), link('eth2', { up: false })], exclude), ['eth0', 'eth2']);
  assert.equal(excludeRegExp([]), null);
});

// MetalLB's metallb-excludel2 ConfigMap as its manifests ship it.
const EXCLUDE_L2_CONFIGMAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: metallb-excludel2
  namespace: metallb-system
data:
  excludel2.yaml: |
    announcedInterfacesToExclude: ["^docker.*", "^cbr.*", "^dummy.*", "^virbr.*", "^lxcbr.*", "^veth.*", "^lo$", "^cali.*", "^tunl.*", "^flannel.*", "^kube-ipvs.*", "^cni.*", "^nodelocaldns.*", "^lxc.*"]
`;

test("excludel2.yaml: MetalLB's ConfigMap parses to its default list", () => {
  const cm = parseYAML(EXCLUDE_L2_CONFIGMAP) as { data: Record<string, string> };
  assert.deepEqual(parseExcludeL2(cm.data['excludel2.yaml']!), [...DEFAULT_EXCLUDE_L2]);
  assert.deepEqual(parseExcludeL2(''), []);
  assert.deepEqual(parseExcludeL2('announcedInterfacesToExclude: []'), []);
  assert.throws(() => parseExcludeL2('announcedInterfacesToExclude: 3'), /list of strings/);
  assert.throws(() => excludeRegExp(['(']), SyntaxError);
});
