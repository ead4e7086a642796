/**
 * src/core/ip.ts's wire-byte codec (ipToBytes, ipFromBytes, formatIPBytes, parseIPBytes): the one
 * the ARP/NDP codecs and memberlist use (issue #13 item 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import ipaddr from 'ipaddr.js';
import { formatIP, formatIPBytes, ipFromBytes, ipToBytes, parseIP, parseIPBytes } from '../../src/core/ip.ts';
import { ipBytes, ipv4At, ipv6At } from '../../src/core/arp/index.ts';
import { ipToString } from '../../src/core/membership/messages.ts';
import { ipToBytes as memberlistIpToBytes } from '../../src/speaker/membership-memberlist.ts';
import { mulberry32 } from '../helpers/rng.ts';

test('parseIPBytes: 4 bytes for a dotted quad, 16 for IPv6 and IPv4-mapped literals; undefined for non-addresses', () => {
  assert.deepEqual(Array.from(parseIPBytes('10.0.0.200')!), [10, 0, 0, 200]);
  assert.deepEqual(Array.from(parseIPBytes('2001:db8::1')!), [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(Array.from(parseIPBytes('::ffff:1.2.3.4')!), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
  for (const bad of ['nope', '010.0.0.1', 'fe80::1%eth0', ' 1.2.3.4', '1.2.3.4/32', '']) assert.equal(parseIPBytes(bad), undefined, bad);
});

test('formatIPBytes: dotted quad, RFC 5952 IPv6, IPv4-mapped as dotted quad, "" for other lengths', () => {
  assert.equal(formatIPBytes(Uint8Array.of(192, 0, 2, 1)), '192.0.2.1');
  assert.equal(formatIPBytes(parseIPBytes('2001:0db8:0:0:1:0:0:1')!), '2001:db8::1:0:0:1');
  assert.equal(formatIPBytes(parseIPBytes('::ffff:10.1.2.3')!), '10.1.2.3');
  // Go prints an IPv4-compatible address (::/96, not ::ffff:0:0/96) as hex groups: ::102:304
  assert.equal(formatIPBytes(Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4)), '::102:304');
  assert.equal(formatIPBytes(new Uint8Array(16)), '::');
  assert.equal(formatIPBytes(parseIPBytes('1:0:0:2:0:0:0:3')!), '1:0:0:2::3', 'the longest zero run');
  assert.equal(formatIPBytes(parseIPBytes('1:0:0:2:0:0:3:4')!), '1::2:0:0:3:4', 'the first of two equal runs');
  assert.equal(formatIPBytes(parseIPBytes('1:0:2:3:4:5:6:7')!), '1:0:2:3:4:5:6:7', 'one zero group stays');
  assert.equal(formatIPBytes(new Uint8Array(0)), '');
  assert.equal(formatIPBytes(new Uint8Array(5)), '');
  assert.equal(formatIPBytes(Uint8Array.of(9, 9, 10, 0, 0, 1), 2, 4), '10.0.0.1');
  assert.equal(formatIPBytes(Uint8Array.of(1, 2, 3), 0, 4), '', 'runs past the end');
});

test('random addresses: bytes → text → bytes round-trips, the text is ipaddr.js RFC 5952, and the four callers agree', () => {
  const rnd = mulberry32(13);
  for (let i = 0; i < 5000; i++) {
    const v6 = rnd() < 0.7;
    const b = new Uint8Array(v6 ? 16 : 4);
    for (let j = 0; j < b.length; j++) b[j] = rnd() < 0.4 ? 0 : Math.floor(rnd() * 256);
    if (v6 && rnd() < 0.1) b.set([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
    const text = formatIPBytes(b);
    const mapped = v6 && b.subarray(0, 12).every((x, k) => x === (k < 10 ? 0 : 0xff));
    const want = v6 && !mapped ? new ipaddr.IPv6(Array.from(b)).toRFC5952String() : Array.from(b.subarray(b.length - 4)).join('.');
    assert.equal(text, want);
    assert.deepEqual(Array.from(parseIPBytes(text)!), Array.from(mapped ? b.subarray(12) : b));
    assert.deepEqual(Array.from(ipToBytes(ipFromBytes(b)!)), Array.from(mapped ? b.subarray(12) : b));
    assert.deepEqual(ipFromBytes(b), parseIP(text));
    assert.equal(ipToString(b), text);
    assert.equal(v6 ? ipv6At(b, 0) : ipv4At(b, 0), text);
    if (!mapped) {
      assert.deepEqual(Array.from(memberlistIpToBytes(text)), Array.from(b));
      assert.deepEqual(Array.from(ipBytes(text, v6 ? 'ipv6' : 'ipv4')), Array.from(b));
    }
  }
});

test("parseIP reads an embedded IPv4 tail where Go's net.ParseIP puts it: ::1.2.3.4 is IPv6 ::102:304 (ipaddr.js would read it IPv4-mapped); ::ffff:1.2.3.4 is IPv4", () => {
  const cases: Array<[string, string | undefined]> = [
    ['::1.2.3.4', '::102:304'],
    ['1::1.2.3.4', '1::102:304'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
    ['::ffff:1.2.3.4', '1.2.3.4'],
    ['::FFFF:10.0.0.1', '10.0.0.1'],
    ['1:2:3:4:5:6:7:1.2.3.4', undefined], // nine groups
    ['::1.2.3', undefined],
    ['::1.2.3.04', undefined], // leading zero, as Go
    ['::1.2.3.4:5', undefined],
  ];
  for (const [text, want] of cases) {
    const ip = parseIP(text);
    assert.equal(ip ? formatIP(ip) : undefined, want, text);
  }
  assert.equal(parseIP('::1.2.3.4')?.family, 'ipv6');
});
