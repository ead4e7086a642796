// memberlist wire codecs against bytes memberlist v0.5.1 writes (memberlist-wire.md §15, captured
// from Go; the integration suite also compares live against the Go libraries for random inputs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lzwDecode, lzwEncode } from '../../src/core/membership/lzw.ts';
import { Keyring, decryptPayload, encryptPayload, metallbSecretKey } from '../../src/core/membership/crypto.ts';
import {
  METALLB_VSN,
  decodeMessage,
  decodePacket,
  decodeStreamMessage,
  encodeCompound,
  encodeCrc,
  encodeMessage,
  encodePacket,
  encodePushPull,
  encodeStreamMessage,
  IncompleteError,
  WireError,
  streamMessageLength,
  type Message,
  type WireOptions,
} from '../../src/core/membership/messages.ts';

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const txt = (s: string): string => Buffer.from(s).toString('hex');
const addr = (s: string): Uint8Array => hex(s);
const vsn = Uint8Array.from(METALLB_VSN);

const cases: { name: string; msg: Message; hex: string }[] = [
  { name: 'ping', msg: { type: 'ping', seqNo: 7, node: 'node-b' }, hex: `00 82 a4 ${txt('Node')} a6 ${txt('node-b')} a5 ${txt('SeqNo')} 07` },
  {
    name: 'ping with source',
    msg: { type: 'ping', seqNo: 7, node: 'node-b', sourceAddr: addr('0a000001'), sourcePort: 7946, sourceNode: 'node-a' },
    hex: `00 85 a4 ${txt('Node')} a6 ${txt('node-b')} a5 ${txt('SeqNo')} 07 aa ${txt('SourceAddr')} a4 0a000001 aa ${txt('SourceNode')} a6 ${txt('node-a')} aa ${txt('SourcePort')} cd 1f0a`,
  },
  { name: 'ack nil payload', msg: { type: 'ack', seqNo: 7, payload: null }, hex: `02 82 a7 ${txt('Payload')} c0 a5 ${txt('SeqNo')} 07` },
  { name: 'ack empty payload', msg: { type: 'ack', seqNo: 7, payload: new Uint8Array(0) }, hex: `02 82 a7 ${txt('Payload')} a0 a5 ${txt('SeqNo')} 07` },
  {
    name: 'alive',
    msg: { type: 'alive', incarnation: 1, node: 'node-a', addr: addr('0a000001'), port: 7946, meta: null, vsn },
    hex: `04 86 a4 ${txt('Addr')} a4 0a000001 ab ${txt('Incarnation')} 01 a4 ${txt('Meta')} c0 a4 ${txt('Node')} a6 ${txt('node-a')} a4 ${txt('Port')} cd 1f0a a3 ${txt('Vsn')} a6 010502000000`,
  },
  {
    name: 'suspect inc 300',
    msg: { type: 'suspect', incarnation: 300, node: 'node-c', from: 'node-a' },
    hex: `03 83 a4 ${txt('From')} a6 ${txt('node-a')} ab ${txt('Incarnation')} cd 012c a4 ${txt('Node')} a6 ${txt('node-c')}`,
  },
  {
    name: 'dead (leave)',
    msg: { type: 'dead', incarnation: 2, node: 'node-a', from: 'node-a' },
    hex: `05 83 a4 ${txt('From')} a6 ${txt('node-a')} ab ${txt('Incarnation')} 02 a4 ${txt('Node')} a6 ${txt('node-a')}`,
  },
  {
    name: 'indirect ping',
    msg: { type: 'indirectPing', seqNo: 9, target: addr('0a000003'), port: 7946, node: 'node-c', nack: true, sourceAddr: addr('0a000001'), sourcePort: 7946, sourceNode: 'node-a' },
    hex: `01 88 a4 ${txt('Nack')} c3 a4 ${txt('Node')} a6 ${txt('node-c')} a4 ${txt('Port')} cd 1f0a a5 ${txt('SeqNo')} 09 aa ${txt('SourceAddr')} a4 0a000001 aa ${txt('SourceNode')} a6 ${txt('node-a')} aa ${txt('SourcePort')} cd 1f0a a6 ${txt('Target')} a4 0a000003`,
  },
  { name: 'nack', msg: { type: 'nack', seqNo: 300 }, hex: `0b 81 a5 ${txt('SeqNo')} cd 012c` },
];

for (const c of cases) {
  test(`msgpack: ${c.name} encodes as memberlist v0.5.1 and decodes back`, () => {
    const bytes = encodeMessage(c.msg);
    assert.equal(toHex(bytes), toHex(hex(c.hex)));
    assert.deepEqual(encodeMessage(decodeMessage(bytes)), bytes);
  });
}

test('msgpack: byte fields keep bytes above 0x7f (no UTF-8 corruption); 45-byte names use str16', () => {
  const name = 'n'.repeat(45);
  const m: Message = { type: 'alive', incarnation: 70000, node: name, addr: addr('0a0000c8'), port: 7946, meta: null, vsn };
  const b = encodeMessage(m);
  assert.ok(toHex(b).includes(`da002d${txt(name)}`));
  const back = decodeMessage(b);
  assert.equal(back.type, 'alive');
  assert.deepEqual(back.type === 'alive' && Array.from(back.addr), [10, 0, 0, 200]);
});

test('push/pull header and node state as v0.5.1 (signed int for Nodes)', () => {
  const node = { name: 'node-a', addr: addr('0a000001'), port: 7946, meta: null, incarnation: 1, state: 0, vsn };
  const two = encodePushPull({ join: true, nodes: [node, node], userState: new Uint8Array(0) });
  const state = `87 a4 ${txt('Addr')} a4 0a000001 ab ${txt('Incarnation')} 01 a4 ${txt('Meta')} c0 a4 ${txt('Name')} a6 ${txt('node-a')} a4 ${txt('Port')} cd 1f0a a5 ${txt('State')} 00 a3 ${txt('Vsn')} a6 010502000000`;
  assert.equal(toHex(two), toHex(hex(`06 83 a4 ${txt('Join')} c3 a5 ${txt('Nodes')} 02 ac ${txt('UserStateLen')} 00 ${state} ${state}`)));
  const many = encodePushPull({ join: false, nodes: Array(200).fill(node), userState: new Uint8Array(0) });
  assert.ok(toHex(many.subarray(0, 20)).includes(`a5${txt('Nodes')}d100c8`));
});

test('LZW equals Go compress/lzw (LSB, 8) on the captured vector and round-trips at every width', () => {
  const p = hex('0082a44e6f6465a66e6f64652d62a55365714e6f07');
  assert.equal(toHex(lzwEncode(p)), '00010822e5e40d9932a6dc182cd3424ca92965e2143c1010');
  assert.deepEqual(lzwDecode(lzwEncode(p), 1 << 20), p);
  let seed = 1;
  const rnd = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (const size of [0, 1, 2, 255, 600, 5000, 20000, 100000]) {
    const input = Uint8Array.from({ length: size }, () => Math.floor(rnd() * (size > 5000 ? 256 : 6)));
    assert.deepEqual(lzwDecode(lzwEncode(input), 1 << 20), input, `size ${size}`);
  }
  assert.throws(() => lzwDecode(lzwEncode(new Uint8Array(5000)), 100), /exceeds/);
  assert.throws(() => lzwDecode(hex('0001'), 100), /unexpected end|invalid/);
});

test('LZW decoding copies each code from the output: long runs, two-symbol text, table resets and KwKwK codes round-trip', () => {
  let seed = 7;
  const rnd = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const runs = (n: number): Uint8Array => {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; ) {
      const len = 1 + Math.floor(rnd() * 5000);
      out.fill(Math.floor(rnd() * 3), i, Math.min(n, i + len));
      i += len;
    }
    return out;
  };
  const inputs = [
    new Uint8Array(3_000_000), // one byte: strings up to ~3,840 bytes, the table filled and cleared
    Uint8Array.from({ length: 300_000 }, () => (rnd() < 0.9 ? 0 : 1)), // KwKwK codes throughout
    runs(1_000_000),
    Uint8Array.from({ length: 70_000 }, (_, i) => i & 0xff),
  ];
  for (const [i, input] of inputs.entries()) assert.deepEqual(lzwDecode(lzwEncode(input), 1 << 23), input, `input ${i}`);
  // a stream cut before its end code: the bytes written so far are reported
  const cut = lzwEncode(new Uint8Array(64_000));
  assert.throws(
    () => lzwDecode(cut.subarray(0, cut.length - 2), 1 << 20),
    (e: { outputBytes?: number }) => (e.outputBytes ?? 0) > 60_000 && (e.outputBytes ?? 0) <= 64_000,
  );
});

test('MetalLB key derivation: secret + SHA-256("") prefix, first 32 bytes', () => {
  assert.equal(toHex(metallbSecretKey(Buffer.from('short-secret'))), '73686f72742d736563726574e3b0c44298fc1c149afbf4c8996fb92427ae41e4');
  assert.equal(toHex(metallbSecretKey(Buffer.from('9Zq3mKx1TQ2bHc7LwY8pVg'))), '395a71336d4b7831545132624863374c775938705667e3b0c44298fc1c149afb');
  assert.equal(toHex(metallbSecretKey(Buffer.from('x'.repeat(40)))), txt('x'.repeat(32)));
});

const P = hex('0082a44e6f6465a66e6f64652d62a55365714e6f07');
const ring = new Keyring([metallbSecretKey(Buffer.from('9Zq3mKx1TQ2bHc7LwY8pVg'))]);
const nonce = hex('000102030405060708090a0b');

test('AES-GCM packet and stream encryption equal memberlist bytes; wrong key and tampering rejected', () => {
  const pkt = encryptPayload(ring, P, new Uint8Array(0), 1, nonce);
  assert.equal(toHex(pkt), '01000102030405060708090a0beafb0a0f6895285ba703fa308ba91f71fb7d99ad53e9d9e72ff618b2e1014256c2be36c959');
  assert.deepEqual(decryptPayload(ring, pkt, new Uint8Array(0)), P);
  const aad = hex('0a00000032');
  assert.equal(toHex(encryptPayload(ring, P, aad, 1, nonce)), '01000102030405060708090a0beafb0a0f6895285ba703fa308ba91f71fb7d99ad53054ec6bc23ad211278ba18533f143ee3');
  const other = new Keyring([metallbSecretKey(Buffer.from('another'))]);
  assert.throws(() => decryptPayload(other, pkt, new Uint8Array(0)), /no installed keys/);
  const two = new Keyring([metallbSecretKey(Buffer.from('another')), ring.keys[0]!]);
  assert.deepEqual(decryptPayload(two, pkt, new Uint8Array(0)), P);
  const v0 = encryptPayload(ring, P, new Uint8Array(0), 0);
  assert.deepEqual(decryptPayload(ring, v0, new Uint8Array(0)), P);
  const bad = pkt.slice();
  bad[20]! ^= 1;
  assert.throws(() => decryptPayload(ring, bad, new Uint8Array(0)));
  assert.throws(() => decryptPayload(ring, hex('02' + '00'.repeat(40)), new Uint8Array(0)), /version/);
});

const plain: WireOptions = { keyring: null, label: '', enableCompression: true, gossipVerifyIncoming: true, gossipVerifyOutgoing: true };
const enc: WireOptions = { ...plain, keyring: ring };

test('packets: CRC, compound, compression when shorter, encryption, label; bad ones dropped', () => {
  assert.equal(toHex(encodeCrc(P)), '0c0aa08625' + toHex(P));
  const alive: Message = { type: 'alive', incarnation: 1, node: 'node-a', addr: addr('7f000001'), port: 7946, meta: null, vsn };
  const many = encodeCompound(Array.from({ length: 20 }, () => encodeMessage(alive)));
  for (const opts of [plain, enc, { ...plain, label: 'lab' }]) {
    for (const crc of [false, true]) {
      const pkt = encodePacket(many, opts, crc);
      const { messages, dropped } = decodePacket(pkt, opts);
      assert.equal(messages.length, 20);
      assert.equal(dropped.length, 0);
    }
  }
  assert.equal(encodePacket(many, plain, false)[0], 9, 'a repetitive compound is sent compressed');
  assert.equal(encodePacket(P, plain, false)[0], 0, 'a small ping stays plain');
  assert.throws(
    () => decodePacket(encodePacket(P, plain, false), enc),
    (e: unknown) => e instanceof WireError && e.reason === 'decrypt',
  );
  assert.throws(
    () => decodePacket(encodePacket(P, { ...plain, label: 'x' }, false), plain),
    (e: unknown) => e instanceof WireError && e.reason === 'label',
  );
  const crcPkt = encodeCrc(P);
  crcPkt[3]! ^= 0xff;
  assert.throws(
    () => decodePacket(crcPkt, plain),
    (e: unknown) => e instanceof WireError && e.reason === 'crc',
  );
  const cut = encodeCompound([P, P]).subarray(0, 30);
  const r = decodePacket(cut, plain);
  assert.equal(r.messages.length, 1);
  assert.equal(r.dropped[0]?.reason, 'truncated');
});

test('streams: push/pull compressed and encrypted round-trip; partial buffers ask for more', () => {
  const node = { name: 'node-a', addr: addr('7f000001'), port: 7946, meta: null, incarnation: 3, state: 1, vsn };
  const pp = encodePushPull({ join: true, nodes: [node, { ...node, name: 'node-b', state: 3 }], userState: new Uint8Array(0) });
  for (const opts of [plain, enc, { ...plain, enableCompression: false }]) {
    const s = encodeStreamMessage(pp, opts);
    const { msg, consumed } = decodeStreamMessage(s, opts);
    assert.equal(consumed, s.length);
    assert.equal(msg.type, 'pushPull');
    assert.deepEqual(msg.type === 'pushPull' && msg.nodes.map((n) => [n.name, n.state, n.incarnation]), [
      ['node-a', 1, 3],
      ['node-b', 3, 3],
    ]);
    for (let cutAt = 0; cutAt < s.length; cutAt += 7) {
      assert.throws(() => decodeStreamMessage(s.subarray(0, cutAt), opts), IncompleteError);
    }
  }
  assert.throws(
    () => decodeStreamMessage(encodeStreamMessage(pp, plain), enc),
    (e: unknown) => e instanceof WireError && e.reason === 'decrypt',
  );
});

test('streamMessageLength: an encrypted stream message gives its whole length in its 5-byte header; plain and compressed ones do not', () => {
  const pp = encodePushPull({ join: true, nodes: [], userState: new Uint8Array(300) });
  const e = encodeStreamMessage(pp, enc);
  for (let cutAt = 5; cutAt <= e.length; cutAt += 50) assert.equal(streamMessageLength(e.subarray(0, cutAt)), e.length);
  assert.equal(streamMessageLength(e.subarray(0, 4)), null, 'header not whole yet');
  assert.equal(streamMessageLength(encodeStreamMessage(pp, plain)), null, 'compressed');
  assert.equal(streamMessageLength(pp), null, 'plain');
  assert.equal(streamMessageLength(Uint8Array.of(10, 0xff, 0xff, 0xff, 0xff)), 5 + 0xffffffff, 'an announced length is reported as is (the decoder refuses it as oversized)');
});

test('fuzz: random and mutated packets and streams only ever throw WireError', () => {
  let seed = 42;
  const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const alive = encodeMessage({ type: 'alive', incarnation: 1, node: 'node-a', addr: addr('7f000001'), port: 7946, meta: null, vsn });
  const seeds = [P, alive, encodeCompound([P, alive]), encodePacket(encodeCompound(Array(9).fill(alive)), plain, true), encodePushPull({ join: true, nodes: [], userState: new Uint8Array(0) })];
  for (let i = 0; i < 8000; i++) {
    const base = seeds[rnd(seeds.length)]!;
    const b = i % 4 === 0 ? Uint8Array.from({ length: rnd(80) }, () => rnd(256)) : base.slice(0, rnd(base.length + 1));
    for (let k = rnd(4); k > 0 && b.length > 0; k--) b[rnd(b.length)] = rnd(256);
    for (const opts of [plain, enc]) {
      try {
        decodePacket(b, opts);
      } catch (e) {
        assert.ok(e instanceof WireError, `packet ${toHex(b)}: ${e}`);
      }
      try {
        decodeStreamMessage(b, opts);
      } catch (e) {
        assert.ok(e instanceof WireError || e instanceof IncompleteError, `stream ${toHex(b)}: ${e}`);
      }
    }
  }
});

test('ipToString: IPv6 in RFC 5952 form (the longest zero run becomes "::"), the same text as src/core/ip.ts formatIP', async () => {
  const { formatIP, parseIP } = await import('../../src/core/ip.ts');
  const { ipToBytes } = await import('../../src/speaker/membership-memberlist.ts');
  const { ipToString } = await import('../../src/core/membership/messages.ts');
  const cases = ['2001:db8:0:1:0:0:0:1', '2001:0:0:1:0:0:0:1', '2001:db8::1', '::1', '::', 'fe80::', '1:0:2:0:3:0:4:0', '2001:db8:1:2:3:4:5:6', '0:0:1::'];
  for (const text of cases) {
    const want = formatIP(parseIP(text)!);
    assert.equal(ipToString(ipToBytes(text)), want, text);
  }
  assert.equal(ipToString(ipToBytes('2001:db8:0:1:0:0:0:1')), '2001:db8:0:1::1');
  assert.equal(ipToString(Uint8Array.from([192, 0, 2, 7])), '192.0.2.7');
});
