// Fuzzing the ARP and NDP decoders and the responders with random and mutated frames: nothing
// throws, every result is a value or a typed drop, and every reply re-decodes. Deterministic
// (seeded xorshift) so a failure reproduces; 300,000 inputs in all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { announcedIPs, arp, ndp, respondARP, respondNDP } from '../../src/core/arp/index.ts';

function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

const ARP_SEED = arp.encode({
  ethernetDestination: 'ff:ff:ff:ff:ff:ff',
  ethernetSource: '02:00:00:00:00:0a',
  operation: 'request',
  senderHardwareAddress: '02:00:00:00:00:0a',
  senderProtocolAddress: '192.0.2.1',
  targetHardwareAddress: '00:00:00:00:00:00',
  targetProtocolAddress: '192.0.2.10',
});
const NS_SEED = ndp.encode({ type: 'neighbor-solicitation', targetAddress: '2001:db8::10', sourceLinkLayerAddress: '02:00:00:00:00:0a' });
const NA_SEED = ndp.encode({ type: 'neighbor-advertisement', router: false, solicited: true, override: false, targetAddress: '2001:db8::10', targetLinkLayerAddress: '02:00:00:00:00:0b' });
const ctx = { interface: 'eth0', hardwareAddress: '02:00:00:00:00:0b', announced: announcedIPs([{ ips: ['192.0.2.10', '2001:db8::10'], interfaces: 'all' }]) };
const SOURCES = ['2001:db8::1', '::', 'fe80::1'];

function mutant(next: () => number, seed: Uint8Array): Uint8Array {
  const kind = next() % 4;
  if (kind === 0) {
    // random bytes, random length
    const b = new Uint8Array(next() % 96);
    for (let i = 0; i < b.length; i++) b[i] = next() & 255;
    return b;
  }
  let b = Uint8Array.from(seed);
  if (kind === 3)
    b = b.subarray(0, next() % (b.length + 1)); // truncation
  else if (kind === 2) {
    // extension with random option-like tails
    const tail = new Uint8Array(next() % 24);
    for (let i = 0; i < tail.length; i++) tail[i] = next() & 255;
    b = Uint8Array.from([...b, ...tail]);
  }
  const flips = 1 + (next() % 4);
  for (let i = 0; i < flips && b.length; i++) b[next() % b.length] = next() & 255;
  return b;
}

test('fuzz: 150,000 ARP frames through decode and the responder', () => {
  const next = rng(0x4152503);
  const seen = new Set<string>();
  for (let i = 0; i < 150_000; i++) {
    const frame = mutant(next, ARP_SEED);
    const d = arp.decode(frame);
    if (!d.ok) seen.add(d.dropped);
    const r = respondARP(frame, ctx);
    if ('reply' in r) {
      assert.ok(arp.decode(r.bytes).ok);
      seen.add('reply');
    } else seen.add(r.dropped);
  }
  for (const reason of ['short-frame', 'not-arp-ethertype', 'operation', 'reply', 'not-announced']) assert.ok(seen.has(reason), `fuzzing reached ${reason}`);
});

test('fuzz: 150,000 ICMPv6 messages through decode and the responder', () => {
  const next = rng(0x4e4450);
  const seen = new Set<string>();
  for (let i = 0; i < 150_000; i++) {
    const msg = mutant(next, i % 2 ? NS_SEED : NA_SEED);
    const src = SOURCES[i % SOURCES.length]!;
    ndp.decode(msg, src);
    const r = respondNDP(msg, src, ctx);
    if ('reply' in r) {
      assert.ok(ndp.decode(r.bytes).ok);
      seen.add('reply');
    } else seen.add(r.dropped);
  }
  for (const reason of ['short-message', 'not-neighbor-discovery', 'option-truncated', 'option-length-zero', 'reply', 'not-announced']) {
    assert.ok(seen.has(reason), `fuzzing reached ${reason}`);
  }
});
