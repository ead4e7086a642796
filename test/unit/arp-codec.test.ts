// ARP (RFC 826) and NDP (RFC 4861) codecs on frames captured with tcpdump -xx between two Linux
// network namespaces (kernel-generated: arping request and the kernel's reply; a neighbor
// solicitation and the solicited advertisement for 2001:db8::2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arp, ndp, solicitedNodeMulticast, countDrop, ipBytes, isLinkLocalV6 } from '../../src/core/arp/index.ts';

const hex = (s: string) => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));

// 06:25:23.211021 ARP, Request who-has 192.0.2.2 (ff:ff:ff:ff:ff:ff) tell 192.0.2.1 (iputils arping)
const ARP_REQUEST = hex('ffff ffff ffff 0200 0000 000a 0806 0001 0800 0604 0001 0200 0000 000a c000 0201 ffff ffff ffff c000 0202');
// 06:25:23.211035 ARP, Reply 192.0.2.2 is-at 02:00:00:00:00:0b (Linux kernel)
const ARP_REPLY = hex('0200 0000 000a 0200 0000 000b 0806 0001 0800 0604 0002 0200 0000 000b c000 0202 0200 0000 000a c000 0201');
// IPv6 frames; the ICMPv6 message starts at byte 54 (14 Ethernet + 40 IPv6).
const NS_FRAME = hex(`3333 ff00 0002 0200 0000 000a 86dd 6000 0000 0020 3aff 2001 0db8 0000 0000 0000 0000 0000 0001 ff02 0000 0000 0000 0000
  0001 ff00 0002 8700 1c1e 0000 0000 2001 0db8 0000 0000 0000 0000 0000 0002 0101 0200 0000 000a`);
const NA_FRAME = hex(`0200 0000 000a 0200 0000 000b 86dd 6000 0000 0020 3aff 2001 0db8 0000 0000 0000 0000 0000 0002 2001 0db8 0000 0000 0000
  0000 0000 0001 8800 8a68 6000 0000 2001 0db8 0000 0000 0000 0000 0000 0002 0201 0200 0000 000b`);
const NS = NS_FRAME.subarray(54);
const NA = NA_FRAME.subarray(54);

test('ARP: decodes a captured request and reply with RFC 826 field names', () => {
  assert.deepEqual(arp.decode(ARP_REQUEST), {
    ok: true,
    value: {
      ethernetDestination: 'ff:ff:ff:ff:ff:ff',
      ethernetSource: '02:00:00:00:00:0a',
      operation: 'request',
      senderHardwareAddress: '02:00:00:00:00:0a',
      senderProtocolAddress: '192.0.2.1',
      targetHardwareAddress: 'ff:ff:ff:ff:ff:ff',
      targetProtocolAddress: '192.0.2.2',
    },
  });
  const r = arp.decode(ARP_REPLY);
  assert.ok(r.ok);
  assert.equal(r.value.operation, 'reply');
  assert.equal(r.value.senderHardwareAddress, '02:00:00:00:00:0b');
  assert.equal(r.value.targetProtocolAddress, '192.0.2.1');
});

test('ARP: encode reproduces the captured bytes, padded to the 60-byte Ethernet minimum', () => {
  for (const frame of [ARP_REQUEST, ARP_REPLY]) {
    const d = arp.decode(frame);
    assert.ok(d.ok);
    const out = arp.encode(d.value);
    assert.equal(out.length, arp.encodingLength(d.value));
    assert.equal(out.length, 60);
    assert.deepEqual(out.subarray(0, 42), frame);
    assert.ok(out.subarray(42).every((b) => b === 0));
    assert.deepEqual(arp.decode(out), d, 'padding is ignored on decode');
  }
});

test('ARP: malformed frames are typed drops, never exceptions', () => {
  const mutate = (i: number, v: number) => {
    const b = Uint8Array.from(ARP_REQUEST);
    b[i] = v;
    return b;
  };
  const cases: Array<[string, Uint8Array, string]> = [
    ['empty', new Uint8Array(0), 'short-frame'],
    ['truncated by one byte', ARP_REQUEST.subarray(0, 41), 'short-frame'],
    ['IPv4 EtherType', mutate(13, 0x00), 'not-arp-ethertype'],
    ['802.1Q tag', mutate(12, 0x81), 'not-arp-ethertype'],
    ['HTYPE 6 (IEEE 802)', mutate(15, 6), 'hardware-type'],
    ['PTYPE IPv6', mutate(16, 0x86), 'protocol-type'],
    ['HLEN 8', mutate(18, 8), 'address-lengths'],
    ['PLEN 16', mutate(19, 16), 'address-lengths'],
    ['RARP request (3)', mutate(21, 3), 'operation'],
  ];
  for (const [name, frame, dropped] of cases) assert.deepEqual(arp.decode(frame), { ok: false, dropped }, name);
  // @ts-expect-error not bytes at all
  assert.deepEqual(arp.decode('x'), { ok: false, dropped: 'short-frame' });
});

test('NDP: decodes the captured neighbor solicitation and advertisement', () => {
  assert.deepEqual(ndp.decode(NS, '2001:db8::1'), {
    ok: true,
    value: { type: 'neighbor-solicitation', targetAddress: '2001:db8::2', sourceLinkLayerAddress: '02:00:00:00:00:0a' },
  });
  assert.deepEqual(ndp.decode(NA, '2001:db8::2'), {
    ok: true,
    value: { type: 'neighbor-advertisement', router: false, solicited: true, override: true, targetAddress: '2001:db8::2', targetLinkLayerAddress: '02:00:00:00:00:0b' },
  });
});

test('NDP: encode with the IPv6 addresses reproduces the captured bytes including the checksum', () => {
  const ns = ndp.decode(NS);
  const na = ndp.decode(NA);
  assert.ok(ns.ok && na.ok);
  assert.deepEqual(ndp.encode(ns.value, { source: '2001:db8::1', destination: 'ff02::1:ff00:2' }), NS);
  assert.deepEqual(ndp.encode(na.value, { source: '2001:db8::2', destination: '2001:db8::1' }), NA);
  assert.equal(ndp.icmpv6Checksum('2001:db8::1', 'ff02::1:ff00:2', NS), 0x1c1e);
  const raw = ndp.encode(na.value);
  assert.equal(raw.length, ndp.encodingLength(na.value));
  assert.equal(raw[2], 0);
  assert.equal(raw[3], 0, 'checksum left to the kernel');
});

test('NDP: RFC 4861 7.1 validity checks drop, never throw', () => {
  const mutate = (i: number, v: number, base = NS) => {
    const b = Uint8Array.from(base);
    b[i] = v;
    return b;
  };
  const cases: Array<[string, Uint8Array, string | undefined, string]> = [
    ['empty', new Uint8Array(0), undefined, 'short-message'],
    ['23 bytes', NS.subarray(0, 23), undefined, 'short-message'],
    ['router solicitation', mutate(0, 133), undefined, 'not-neighbor-discovery'],
    ['echo request', mutate(0, 128), undefined, 'not-neighbor-discovery'],
    ['code 1', mutate(1, 1), undefined, 'code'],
    ['multicast target', mutate(8, 0xff), undefined, 'target-multicast'],
    ['option length 0', mutate(25, 0), undefined, 'option-length-zero'],
    ['option runs past the end', mutate(25, 2), undefined, 'option-truncated'],
    ['lone option type byte', Uint8Array.from([...NS, 1]), undefined, 'option-truncated'],
    ['link-layer option of 16 bytes', Uint8Array.from([...NS.subarray(0, 24), 1, 2, ...new Array(14).fill(0)]), undefined, 'link-layer-option-size'],
    ['DAD probe with a source LLA', NS, '::', 'unspecified-source-with-lla'],
  ];
  for (const [name, msg, src, dropped] of cases) assert.deepEqual(ndp.decode(msg, src), { ok: false, dropped }, name);
  // unknown options are skipped
  const withNonce = Uint8Array.from([...NS, 14, 1, 1, 2, 3, 4, 5, 6]);
  assert.ok(ndp.decode(withNonce).ok);
  // a DAD probe (from ::, no options) decodes: the responder ignores it
  assert.deepEqual(ndp.decode(NS.subarray(0, 24), '::'), { ok: true, value: { type: 'neighbor-solicitation', targetAddress: '2001:db8::2', sourceLinkLayerAddress: null } });
});

test('addresses: solicited-node multicast (RFC 4291 2.7.1), link-local, bytes', () => {
  assert.equal(solicitedNodeMulticast('2001:db8::2'), 'ff02::1:ff00:2');
  assert.equal(solicitedNodeMulticast('2001:db8::abcd:1234:5678'), 'ff02::1:ff34:5678');
  assert.ok(isLinkLocalV6('fe80::1'));
  assert.ok(!isLinkLocalV6('2001:db8::1'));
  assert.ok(!isLinkLocalV6('192.0.2.1'));
  assert.deepEqual([...ipBytes('192.0.2.1', 'ipv4')], [192, 0, 2, 1]);
  assert.throws(() => ipBytes('2001:db8::1', 'ipv4'), TypeError);
  assert.throws(() => ipBytes('192.0.2.1', 'ipv6'), TypeError);
  assert.deepEqual(countDrop(countDrop({}, 'a'), 'a'), { a: 2 });
});
