// RawL2Announcer (src/speaker/l2.ts) over a fake addon: which sockets open and close as interfaces
// come and go, solicited-node groups joined once per announced IPv6 address and left on withdraw,
// replies written to the right socket, gratuitous sends on MetalLB's schedule (mocked clock).
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { RawL2Announcer } from '../../src/speaker/l2.ts';
import type { L2Native, WatchHandle } from '../../src/speaker/l2-native.ts';
import { arp, ndp, ipv6At, ipBytes } from '../../src/core/arp/index.ts';
import type { LinkInfo } from '../../src/core/arp/index.ts';

type OnFrame = (frame: Buffer, source: Buffer, hopLimit: number) => void;

function fakeNative() {
  let nextFd = 10;
  const calls: string[] = [];
  const watchers = new Map<number, OnFrame>();
  const sent: Array<{ fd: number; bytes: Uint8Array; to?: string }> = [];
  const n: L2Native = {
    openArp: (ifindex) => {
      calls.push(`openArp ${ifindex}`);
      return nextFd++;
    },
    openNetlink: () => {
      calls.push('openNetlink');
      return nextFd++;
    },
    openNdp: (ifindex, ll) => {
      calls.push(`openNdp ${ifindex} ${ipv6At(ll, 0)}`);
      return nextFd++;
    },
    group: (fd, _ifindex, g, join) => {
      calls.push(`${join ? 'join' : 'leave'} ${fd} ${ipv6At(g, 0)}`);
    },
    sendArp: (fd, _i, frame) => {
      sent.push({ fd, bytes: Uint8Array.from(frame) });
    },
    sendNdp: (fd, _i, dst, icmp) => {
      sent.push({ fd, bytes: Uint8Array.from(icmp), to: ipv6At(dst, 0) });
    },
    watch: (fd, _kind, cb) => {
      watchers.set(fd, cb);
      return { fd } as unknown as WatchHandle;
    },
    stop: (h) => {
      const fd = (h as unknown as { fd: number }).fd;
      calls.push(`stop ${fd}`);
      watchers.delete(fd);
    },
    unref: () => {},
    closeFd: (fd) => {
      calls.push(`close ${fd}`);
    },
  };
  return { n, calls, watchers, sent };
}

const quiet = { with: () => quiet, debug() {}, info() {}, warn() {}, error() {} };
const eth = (name: string, index: number, over: Partial<LinkInfo> = {}): LinkInfo => ({
  name,
  index,
  up: true,
  broadcast: true,
  noarp: false,
  master: null,
  hardwareAddress: `02:00:00:00:00:0${index}`,
  linkLocal: `fe80::${index}`,
  ...over,
});

test('responders follow the interfaces: open on usable ones, close when down or gone', () => {
  const f = fakeNative();
  let links = [eth('eth0', 2), eth('veth9', 3), eth('eth1', 4, { linkLocal: null })];
  const l2 = new RawL2Announcer({ log: quiet, native: f.n, exclude: ['^veth.*'], links: () => links });
  l2.scan();
  assert.deepEqual(f.calls, ['openArp 2', 'openNdp 2 fe80::2', 'openArp 4']);
  f.calls.length = 0;
  links = [eth('eth0', 2, { linkLocal: 'fe80::22' }), eth('eth1', 4, { linkLocal: null })];
  l2.scan();
  assert.deepEqual(f.calls, ['stop 11', 'openNdp 2 fe80::22'], 'a new link-local address: the NDP socket is rebound');
  f.calls.length = 0;
  links = [eth('eth0', 2, { up: false }), eth('eth1', 4, { linkLocal: null })];
  l2.scan();
  assert.deepEqual(f.calls, ['stop 10', 'stop 13']);
  l2.close();
});

test('solicited-node groups: joined once per address on every NDP responder, left when the last service withdraws', () => {
  const f = fakeNative();
  const l2 = new RawL2Announcer({ log: quiet, native: f.n, links: () => [eth('eth0', 2)] });
  l2.scan();
  f.calls.length = 0;
  mock.timers.enable({ apis: ['setInterval', 'Date'] });
  try {
    l2.announce('a/one', ['2001:db8::10', '192.0.2.10'], 'all');
    l2.announce('b/two', ['2001:db8::10'], 'all'); // shared IP
    assert.deepEqual(f.calls, ['join 11 ff02::1:ff00:10']);
    l2.withdraw('a/one');
    assert.deepEqual(f.calls, ['join 11 ff02::1:ff00:10']);
    l2.withdraw('b/two');
    assert.deepEqual(f.calls, ['join 11 ff02::1:ff00:10', 'leave 11 ff02::1:ff00:10']);
  } finally {
    l2.close();
    mock.timers.reset();
  }
});

test('replies go out on the socket the request came in on; other IPs and interfaces stay silent', () => {
  const f = fakeNative();
  const l2 = new RawL2Announcer({ log: quiet, native: f.n, links: () => [eth('eth0', 2), eth('eth1', 3)] });
  l2.scan(); // fds: eth0 arp 10, ndp 11; eth1 arp 12, ndp 13
  mock.timers.enable({ apis: ['setInterval', 'Date'] });
  try {
    l2.announce('a/one', ['192.0.2.10', '2001:db8::10'], ['eth1']);
    f.sent.length = 0;
    const req = (target: string) =>
      Buffer.from(
        arp.encode({
          ethernetDestination: 'ff:ff:ff:ff:ff:ff',
          ethernetSource: '02:00:00:00:00:aa',
          operation: 'request',
          senderHardwareAddress: '02:00:00:00:00:aa',
          senderProtocolAddress: '192.0.2.1',
          targetHardwareAddress: '00:00:00:00:00:00',
          targetProtocolAddress: target,
        }),
      );
    f.watchers.get(10)!(req('192.0.2.10'), Buffer.alloc(6), -1); // eth0: not allowed
    f.watchers.get(12)!(req('192.0.2.99'), Buffer.alloc(6), -1); // eth1: not ours
    f.watchers.get(12)!(req('192.0.2.10'), Buffer.alloc(6), -1); // eth1: answer
    assert.equal(f.sent.length, 1);
    assert.equal(f.sent[0]!.fd, 12);
    const reply = arp.decode(f.sent[0]!.bytes);
    assert.ok(reply.ok);
    assert.equal(reply.value.senderHardwareAddress, '02:00:00:00:00:03');
    const ns = Buffer.from(ndp.encode({ type: 'neighbor-solicitation', targetAddress: '2001:db8::10', sourceLinkLayerAddress: '02:00:00:00:00:aa' }));
    f.watchers.get(13)!(ns, Buffer.from(ipBytes('2001:db8::1', 'ipv6')), 254); // crossed a router
    f.watchers.get(13)!(ns, Buffer.from(ipBytes('2001:db8::1', 'ipv6')), 255);
    assert.equal(f.sent.length, 2);
    assert.equal(f.sent[1]!.to, '2001:db8::1');
    assert.deepEqual(l2.drops, { 'arp:interface-not-allowed': 1, 'arp:not-announced': 1, 'ndp:hop-limit': 1 });
    assert.equal(l2.sent.replies, 2);
  } finally {
    l2.close();
    mock.timers.reset();
  }
});

test('gratuitous: at once and every 1.1 s for 5 s; withdraw stops them', () => {
  const f = fakeNative();
  const l2 = new RawL2Announcer({ log: quiet, native: f.n, links: () => [eth('eth0', 2)] });
  l2.scan();
  mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 });
  try {
    l2.announce('a/one', ['192.0.2.10'], 'all');
    const at: number[] = [Date.now()];
    let last = 1;
    for (let t = 0; t < 8000; t += 100) {
      mock.timers.tick(100);
      if (l2.sent.gratuitous > last) {
        at.push(Date.now());
        last = l2.sent.gratuitous;
      }
    }
    assert.deepEqual(at, [0, 1100, 2200, 3300, 4400]);
    assert.equal(f.sent.length, 10, 'a request and a reply each time');
    l2.announce('a/two', ['2001:db8::10'], 'all');
    l2.withdraw('a/two');
    const before = l2.sent.gratuitous;
    mock.timers.tick(5000);
    assert.equal(l2.sent.gratuitous, before, 'nothing after withdraw');
  } finally {
    l2.close();
    mock.timers.reset();
  }
});

test("metrics: MetalLB's metallb_layer2_* counters by ip on the speaker registry", async () => {
  const { speakerMetrics } = await import('../../src/speaker/metrics.ts');
  const m = speakerMetrics();
  const f = fakeNative();
  const l2 = new RawL2Announcer({ log: quiet, native: f.n, links: () => [eth('eth0', 2)], metrics: m.layer2 });
  l2.scan(); // eth0 arp 10, ndp 11
  mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 });
  try {
    l2.announce('a/one', ['192.0.2.10', '2001:db8::10'], 'all'); // gratuitous at once: ARP request + reply, one NA
    const req = (target: string) =>
      Buffer.from(
        arp.encode({
          ethernetDestination: 'ff:ff:ff:ff:ff:ff',
          ethernetSource: '02:00:00:00:00:aa',
          operation: 'request',
          senderHardwareAddress: '02:00:00:00:00:aa',
          senderProtocolAddress: '192.0.2.1',
          targetHardwareAddress: '00:00:00:00:00:00',
          targetProtocolAddress: target,
        }),
      );
    f.watchers.get(10)!(req('192.0.2.10'), Buffer.alloc(6), -1);
    f.watchers.get(10)!(req('192.0.2.10'), Buffer.alloc(6), -1);
    f.watchers.get(10)!(req('192.0.2.99'), Buffer.alloc(6), -1); // not ours: not counted
    const ns = Buffer.from(ndp.encode({ type: 'neighbor-solicitation', targetAddress: '2001:db8::10', sourceLinkLayerAddress: '02:00:00:00:00:aa' }));
    f.watchers.get(11)!(ns, Buffer.from(ipBytes('2001:db8::1', 'ipv6')), 255);
    const text = await m.registry.metrics();
    const value = (name: string, ip: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}{ip="${ip}"}`));
      return line === undefined ? undefined : Number(line.split(' ').at(-1));
    };
    assert.equal(value('metallb_layer2_requests_received', '192.0.2.10'), 2);
    assert.equal(value('metallb_layer2_responses_sent', '192.0.2.10'), 2);
    assert.equal(value('metallb_layer2_requests_received', '2001:db8::10'), 1);
    assert.equal(value('metallb_layer2_responses_sent', '2001:db8::10'), 1);
    assert.equal(value('metallb_layer2_requests_received', '192.0.2.99'), undefined);
    assert.equal(value('metallb_layer2_gratuitous_sent', '192.0.2.10'), 2);
    assert.equal(value('metallb_layer2_gratuitous_sent', '2001:db8::10'), 1);
    assert.match(text, /# TYPE metallb_layer2_requests_received counter/);
  } finally {
    l2.close();
    mock.timers.reset();
  }
});

test('rescan on change: netlink messages trigger one debounced scan (100 ms); the periodic rescan stays; close stops the socket', () => {
  const f = fakeNative();
  let scans = 0;
  let links = [eth('eth0', 2)];
  mock.timers.enable({ apis: ['setInterval', 'setTimeout', 'Date'], now: 0 });
  const l2 = new RawL2Announcer({
    log: quiet,
    native: f.n,
    links: () => {
      scans++;
      return links;
    },
  });
  try {
    l2.start(); // fds: arp 10, ndp 11, netlink 12
    assert.deepEqual(f.calls, ['openArp 2', 'openNdp 2 fe80::2', 'openNetlink']);
    assert.equal(scans, 1);
    const netlink = f.watchers.get(12)!;
    links = [eth('eth0', 2, { up: false })];
    for (let i = 0; i < 5; i++) netlink(Buffer.alloc(20), Buffer.alloc(0), -1);
    mock.timers.tick(99);
    assert.equal(scans, 1, 'not before the debounce delay');
    mock.timers.tick(1);
    assert.equal(scans, 2, 'one scan for the burst');
    assert.ok(f.calls.includes('stop 10') && f.calls.includes('stop 11'), 'the down interface lost its responders');
    netlink(Buffer.alloc(0), Buffer.alloc(0), -1); // overflow: also rescans
    mock.timers.tick(100);
    assert.equal(scans, 3);
    mock.timers.tick(10_000);
    assert.equal(scans, 4, 'the 10 s periodic rescan');
    f.calls.length = 0;
    l2.close();
    assert.deepEqual(f.calls, ['stop 12']);
  } finally {
    l2.close();
    mock.timers.reset();
  }
});

test('rescan on change: without a netlink socket the announcer still starts (periodic rescan only)', () => {
  const f = fakeNative();
  f.n.openNetlink = () => {
    throw Object.assign(new Error('socket: Operation not permitted'), { code: 'EPERM' });
  };
  const errors: object[] = [];
  const log = {
    with: () => log,
    debug() {},
    info() {},
    warn() {},
    error(o: object) {
      errors.push(o);
    },
  };
  const l2 = new RawL2Announcer({ log, native: f.n, links: () => [eth('eth0', 2)] }).start();
  try {
    assert.deepEqual(f.calls, ['openArp 2', 'openNdp 2 fe80::2']);
    assert.equal(errors.length, 1);
    assert.match(JSON.stringify(errors[0]), /watchInterfaces/);
  } finally {
    l2.close();
  }
});
