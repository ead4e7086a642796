// What a hostile peer can send a memberlist member: every case is real bytes (the attacks a
// reviewer ran against a live member), and each asserts outcomes and counters, never timings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { LAN_CONFIG } from '../../src/core/membership/config.ts';
import { lzwDecode, lzwEncode, LzwLimitError } from '../../src/core/membership/lzw.ts';
import {
  MAX_PACKET_DECOMPRESSED_BYTES,
  MAX_PACKET_MESSAGES,
  MAX_STREAM_BYTES,
  META_MAX_BYTES,
  METALLB_VSN,
  NAME_MAX_BYTES,
  WireError,
  decodeMessage,
  decodePacket,
  decodeStreamMessage,
  encodeCompound,
  streamDecompressLimit,
  encodeCompress,
  encodeMessage,
  encodePacket,
  encodePushPull,
  encodeStreamMessage,
  type Message,
  type WireOptions,
} from '../../src/core/membership/messages.ts';
import { metallbSecretKey } from '../../src/core/membership/crypto.ts';
import { INBOUND_STREAM_BUDGET_BYTES, MemberlistMember } from '../../src/speaker/membership-memberlist.ts';

const plain: WireOptions = { keyring: null, label: '', enableCompression: false, gossipVerifyIncoming: true, gossipVerifyOutgoing: true };
const compressed: WireOptions = { ...plain, enableCompression: true };
const vsn = Uint8Array.from(METALLB_VSN);

async function waitFor(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** attack 11: compound of compress parts, each a compound of 255 compounds of 255 `leaf`s. */
function nestedBomb(leaf: Uint8Array): { packet: Uint8Array; messages: number } {
  const c3 = encodeCompound(Array(255).fill(leaf));
  const c2 = encodeCompound(Array(Math.min(255, Math.floor(1_000_000 / (c3.length + 2)))).fill(c3));
  const z = encodeCompress(c2);
  const nParts = Math.min(255, Math.floor(65_000 / (z.length + 2)));
  return { packet: encodePacket(encodeCompound(Array(nParts).fill(z)), plain, false), messages: nParts * c2[1]! * 255 };
}

test('amplification: one datagram of nested compressed compounds yields at most MAX_PACKET_MESSAGES messages, counted once', () => {
  const { packet, messages } = nestedBomb(encodeMessage({ type: 'nack', seqNo: 1 }));
  assert.ok(packet.length < 65_000 && messages > 100_000, `${packet.length} bytes carrying ${messages} messages`);
  const out = decodePacket(packet, plain);
  assert.ok(out.messages.length <= MAX_PACKET_MESSAGES, `${out.messages.length} messages`);
  assert.equal(out.dropped.filter((d) => d.reason === 'amplification').length, 1);
  // compressed parts within the byte budget: the message count stops it (layers count too)
  const z = encodeCompress(encodeCompound(Array(255).fill(encodeMessage({ type: 'nack', seqNo: 1 }))));
  const many = decodePacket(encodePacket(encodeCompound(Array(100).fill(z)), plain, false), plain);
  assert.ok(many.messages.length > MAX_PACKET_MESSAGES - 10 && many.messages.length < MAX_PACKET_MESSAGES, `${many.messages.length} messages`);
  assert.deepEqual(
    many.dropped.map((d) => d.reason),
    ['amplification'],
  );
});

test('amplification: compressed parts may decompress to MAX_PACKET_DECOMPRESSED_BYTES per datagram together, the rest is dropped', () => {
  // 3 parts, each a compressed 30,000-byte user message (LZW of zeros: tiny): the third would exceed 64 KiB
  const part = encodeCompress(new Uint8Array(30_000).fill(0).map((_, i) => (i === 0 ? 8 : 0)));
  assert.ok(part.length < 2000);
  const out = decodePacket(encodePacket(encodeCompound([part, part, part]), plain, false), plain);
  assert.equal(out.messages.length, 2);
  assert.deepEqual(
    out.dropped.map((d) => d.reason),
    ['amplification'],
  );
  // one LZW bomb (1 MiB of zeros from a few KB) is refused whole, not decompressed to 1 MiB
  const bomb = encodePacket(encodeCompress(new Uint8Array(1 << 20)), plain, false);
  assert.ok(bomb.length < 10_000, `${bomb.length}`);
  const b = decodePacket(bomb, plain);
  assert.equal(b.messages.length, 0);
  assert.deepEqual(
    b.dropped.map((d) => d.reason),
    ['amplification'],
  );
  assert.equal(MAX_PACKET_DECOMPRESSED_BYTES, 65536);
});

test('legitimate packets stay far below the per-datagram limits: a full 1400-byte compound of nacks, compressed or not', () => {
  const nack = encodeMessage({ type: 'nack', seqNo: 4_000_000_000 });
  const parts: Uint8Array[] = [];
  while (2 + 2 * (parts.length + 1) + (parts.length + 1) * nack.length <= 1400) parts.push(nack);
  for (const wire of [plain, compressed]) {
    const out = decodePacket(encodePacket(encodeCompound(parts), wire, true), plain);
    assert.equal(out.messages.length, parts.length);
    assert.deepEqual(out.dropped, []);
  }
  assert.ok(parts.length < MAX_PACKET_MESSAGES / 4, `${parts.length} messages in 1400 bytes`);
});

test('LZW: output beyond the limit is LzwLimitError; a stream bomb beyond MAX_STREAM_BYTES is `oversized`, not decoded', () => {
  assert.throws(() => lzwDecode(lzwEncode(new Uint8Array(5000)), 4096), LzwLimitError);
  assert.equal(lzwDecode(lzwEncode(new Uint8Array(4096)), 4096).length, 4096);
  const oversized = (e: unknown): boolean => e instanceof WireError && e.reason === 'oversized';
  const bomb = encodeStreamMessage(Uint8Array.from([6, ...new Uint8Array(MAX_STREAM_BYTES + 10)]), compressed);
  assert.ok(bomb.length < 100_000, `${bomb.length}`);
  assert.throws(() => decodeStreamMessage(bomb, plain), oversized);
  // the ratio bound: 2 MiB of one byte (Go's LZW: ~800:1) is refused, though under MAX_STREAM_BYTES
  const dense = encodeStreamMessage(Uint8Array.from([6, ...new Uint8Array(2 << 20).fill(0x61)]), compressed);
  assert.ok(streamDecompressLimit(dense.length) < 2 << 20, `${dense.length} compressed bytes`);
  assert.throws(() => decodeStreamMessage(dense, plain), oversized);
  // a legitimate push/pull near the worst ratio (many nodes with 512 identical Meta bytes, ~48:1) decodes
  const nodes = Array.from({ length: 5000 }, (_, i) => ({ name: `node-${i}`, addr: Uint8Array.from([10, 0, i >> 8, i & 255]), port: 7946, meta: new Uint8Array(META_MAX_BYTES), incarnation: 1, state: 0, vsn }));
  const pp = encodeStreamMessage(encodePushPull({ join: false, nodes, userState: new Uint8Array(0) }), compressed);
  const back = decodeStreamMessage(pp, plain).msg;
  assert.equal(back.type === 'pushPull' && back.nodes.length, 5000);
});

test('unknown message types are `unknownType` whatever follows the type byte; alive/suspect/dead with oversized meta or names are dropped', () => {
  for (const b of [[99], [99, 0xc1], [99, 0x80], [200, 1, 2, 3]]) {
    assert.throws(
      () => decodeMessage(Uint8Array.from(b)),
      (e: unknown) => e instanceof WireError && e.reason === 'unknownType',
      String(b),
    );
  }
  const alive = (node: string, meta: Uint8Array | null): Message => ({ type: 'alive', incarnation: 1, node, addr: Uint8Array.from([10, 0, 0, 1]), port: 7946, meta, vsn });
  const reason = (m: Message): string | null => {
    try {
      decodeMessage(encodeMessage(m));
      return null;
    } catch (e) {
      return (e as WireError).reason;
    }
  };
  assert.equal(reason(alive('n', new Uint8Array(META_MAX_BYTES))), null);
  assert.equal(reason(alive('n', new Uint8Array(META_MAX_BYTES + 1))), 'oversizedMeta');
  assert.equal(reason(alive('n'.repeat(NAME_MAX_BYTES), null)), null);
  assert.equal(reason(alive('n'.repeat(NAME_MAX_BYTES + 1), null)), 'oversizedName');
  assert.equal(reason(alive('é'.repeat(NAME_MAX_BYTES / 2 + 1), null)), 'oversizedName', 'UTF-8 bytes, not characters');
  assert.equal(reason({ type: 'suspect', incarnation: 1, node: 'n', from: 'f'.repeat(NAME_MAX_BYTES + 1) }), 'oversizedName');
  assert.equal(reason({ type: 'dead', incarnation: 1, node: 'n'.repeat(60_000), from: 'f' }), 'oversizedName');
  // the largest acceptable alive message still fits memberlist's 1400-byte UDP buffer
  assert.ok(encodeMessage(alive('n'.repeat(NAME_MAX_BYTES), new Uint8Array(META_MAX_BYTES))).length < 1400 - 100);
});

async function startMember(opts: Partial<ConstructorParameters<typeof MemberlistMember>[0]> = {}): Promise<{ member: MemberlistMember; logs: string[] }> {
  const logs: string[] = [];
  const member = new MemberlistMember({ name: 'me', bindAddr: '127.0.0.1', bindPort: 0, config: LAN_CONFIG, seed: 1, log: (m) => logs.push(m), ...opts });
  await member.start();
  return { member, logs };
}

test('a datagram to a bad port (0, 70000) is counted as sendError, not thrown (dgram throws synchronously)', async () => {
  const { member } = await startMember();
  try {
    const send = (member as unknown as { sendPacket(to: { host: string; port: number }, buf: Uint8Array): void }).sendPacket.bind(member);
    assert.doesNotThrow(() => send({ host: '127.0.0.1', port: 0 }, Uint8Array.from([1])));
    assert.doesNotThrow(() => send({ host: '127.0.0.1', port: 70_000 }, Uint8Array.from([1])));
    assert.equal(member.stats().dropped.sendError, 2);
  } finally {
    member.kill();
  }
});

test('an exception inside a packet handler is counted as internalError and logged once; the member keeps answering', async () => {
  const { member, logs } = await startMember();
  const client = dgram.createSocket('udp4');
  await new Promise<void>((r) => client.bind(0, '127.0.0.1', () => r()));
  try {
    const from = { host: '127.0.0.1', port: client.address().port };
    const inner = member as unknown as { applyAll(events: unknown[]): void };
    const real = inner.applyAll;
    inner.applyAll = () => {
      throw new Error('boom');
    };
    const ping = (seqNo: number): Uint8Array => encodePacket(encodeMessage({ type: 'ping', seqNo, node: 'me' }), plain, false);
    assert.doesNotThrow(() => member.receivePacket(ping(1), from));
    assert.doesNotThrow(() => member.receivePacket(ping(2), from));
    assert.equal(member.stats().dropped.internalError, 2);
    assert.equal(logs.filter((l) => /internal error/.test(l)).length, 1);
    inner.applyAll = real;
    const acked = new Promise<Message>((resolve) => client.once('message', (buf) => resolve(decodePacket(new Uint8Array(buf), plain).messages[0]!)));
    client.send(ping(3), member.port, '127.0.0.1');
    const ack = await acked;
    assert.equal(ack.type === 'ack' && ack.seqNo, 3);
  } finally {
    client.close();
    member.kill();
  }
});

test('amplification on a live member: the nested ping bomb is answered by at most MAX_PACKET_MESSAGES acks', async () => {
  const { member } = await startMember();
  try {
    const { packet } = nestedBomb(encodeMessage({ type: 'ping', seqNo: 1, node: '' }));
    const before = member.stats().packetsOut;
    member.receivePacket(packet, { host: '127.0.0.1', port: 9 });
    const s = member.stats();
    assert.ok(s.packetsOut - before <= MAX_PACKET_MESSAGES, `${s.packetsOut - before} acks`);
    assert.equal(s.dropped.amplification, 1);
  } finally {
    member.kill();
  }
});

test('encrypted streams announcing 20 MB: buffers hold only bytes received, not the announced length', async () => {
  const key = metallbSecretKey(Buffer.from('s3cret'));
  const { member } = await startMember({ keys: [key] });
  const socks: net.Socket[] = [];
  try {
    const head = Uint8Array.from([10, 0x01, 0x3f, 0xff, 0xff]); // 20,971,519 bytes announced
    for (let i = 0; i < 100; i++) {
      const s = net.connect({ host: '127.0.0.1', port: member.port });
      s.on('error', () => {});
      s.on('connect', () => s.write(Buffer.concat([head, Buffer.alloc(1000)])));
      socks.push(s);
    }
    await waitFor('100 streams to buffer their bytes', () => member.stats().inboundStreams === 100 && member.stats().inboundReceivedBytes === 100 * 1005);
    const s = member.stats();
    assert.ok(s.inboundBufferedBytes >= s.inboundReceivedBytes && s.inboundBufferedBytes <= 2 * s.inboundReceivedBytes, `${s.inboundBufferedBytes} bytes buffered`);
    assert.equal(s.dropped.streamBudget ?? 0, 0);
  } finally {
    for (const s of socks) s.destroy();
    member.kill();
  }
});

test('stream budget counts buffer capacity: streams sending more than INBOUND_STREAM_BUDGET_BYTES together are evicted, the total never exceeds it', async () => {
  const { member } = await startMember();
  const socks: net.Socket[] = [];
  let maxSeen = 0;
  try {
    // 8 uncompressed push/pulls whose user state claims 12 MiB each: 96 MiB > 64 MiB
    const full = encodePushPull({ join: false, nodes: [], userState: new Uint8Array(12 << 20) });
    for (let i = 0; i < 8; i++) {
      const s = net.connect({ host: '127.0.0.1', port: member.port });
      s.on('error', () => {});
      s.on('connect', () => s.write(full.subarray(0, full.length - 1))); // all but the last byte
      socks.push(s);
    }
    await waitFor(
      'evictions',
      () => {
        maxSeen = Math.max(maxSeen, member.stats().inboundBufferedBytes);
        return (member.stats().dropped.streamBudget ?? 0) >= 3;
      },
      30_000,
    );
    assert.ok(maxSeen <= INBOUND_STREAM_BUDGET_BYTES, `${maxSeen}`);
    assert.ok(member.stats().inboundBufferedBytes <= INBOUND_STREAM_BUDGET_BYTES);
  } finally {
    for (const s of socks) s.destroy();
    member.kill();
  }
});

test('push/pull node states with oversized meta or names are not merged, counted', async () => {
  const { member } = await startMember();
  try {
    const node = (name: string, meta: Uint8Array | null) => ({ name, addr: Uint8Array.from([127, 0, 0, 1]), port: 7, meta, incarnation: 1, state: 0, vsn });
    const pp = encodePushPull({ join: false, nodes: [node('ok', new Uint8Array(10)), node('fat', new Uint8Array(1 << 20)), node('x'.repeat(1000), null)], userState: new Uint8Array(0) });
    await new Promise<void>((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port: member.port }, () => s.write(pp));
      s.on('data', () => {});
      s.on('close', () => resolve());
      s.on('error', reject);
    });
    await waitFor('the merge', () => member.alive().includes('ok'));
    assert.deepEqual(member.alive(), ['me', 'ok']);
    assert.equal(member.stats().dropped.oversizedMeta, 1);
    assert.equal(member.stats().dropped.oversizedName, 1);
  } finally {
    member.kill();
  }
});

test('alive over UDP with meta over MetaMaxSize is dropped and counted, never queued', async () => {
  const { member } = await startMember();
  try {
    const m: Message = { type: 'alive', incarnation: 1, node: 'fat', addr: Uint8Array.from([127, 0, 0, 1]), port: 7, meta: new Uint8Array(60_000), vsn };
    member.receivePacket(encodePacket(encodeMessage(m), plain, false), { host: '127.0.0.1', port: 9 });
    assert.equal(member.stats().dropped.oversizedMeta, 1);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(member.alive(), ['me']);
  } finally {
    member.kill();
  }
});
