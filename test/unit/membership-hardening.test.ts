// Issue #15 item 1-2: decompression charged whether it succeeds or fails, the decoding work one
// source address may cause per second, and drops logged at most once per reason per minute.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LAN_CONFIG } from '../../src/core/membership/config.ts';
import { LzwError, LzwLimitError, lzwDecode, lzwEncode } from '../../src/core/membership/lzw.ts';
import { DecodeAllowance, DECODE_BURST_BYTES, DECODE_BYTES_PER_SECOND } from '../../src/core/membership/decode-allowance.ts';
import {
  MAX_PACKET_DECOMPRESSED_BYTES,
  WireError,
  decodePacket,
  encodeCompound,
  decodeStreamMessage,
  encodeCompress,
  encodeMessage,
  encodePacket,
  encodePushPull,
  encodeStreamMessage,
  type WireOptions,
} from '../../src/core/membership/messages.ts';
import { DROP_LOG_INTERVAL_MS, MemberlistMember } from '../../src/speaker/membership-memberlist.ts';
import { amplificationPacket, failingCompressPart, garbagePacket } from '../integration/setup/hostile-memberlist.ts';

const plain: WireOptions = { keyring: null, label: '', enableCompression: false, gossipVerifyIncoming: true, gossipVerifyOutgoing: true };

test('LZW: a stream that fails reports the bytes it unpacked first (outputBytes), the limit reports the limit', () => {
  const z = lzwEncode(new Uint8Array(60_000));
  assert.throws(
    () => lzwDecode(z.subarray(0, z.length - 2), 1 << 20),
    (e: unknown) => e instanceof LzwError && !(e instanceof LzwLimitError) && e.outputBytes > 59_000 && e.outputBytes <= 60_000,
  );
  assert.throws(
    () => lzwDecode(z, 10_000),
    (e: unknown) => e instanceof LzwLimitError && e.outputBytes === 10_000,
  );
  assert.deepEqual(lzwDecode(z, 60_000), new Uint8Array(60_000));
});

test('the amplification packet (150 parts each unpacking ~64 KB, then failing) unpacks at most MAX_PACKET_DECOMPRESSED_BYTES in all', () => {
  const { packet, parts } = amplificationPacket();
  assert.ok(packet.length <= 65_000 && parts >= 140, `${packet.length} bytes, ${parts} parts`);
  const out = decodePacket(packet, plain);
  assert.equal(out.messages.length, 0);
  assert.ok(out.unpackedBytes <= MAX_PACKET_DECOMPRESSED_BYTES, `${out.unpackedBytes}`);
  // the first part fails after ~64 KB (malformed), the second hits the spent allowance: nothing more is unpacked
  assert.deepEqual(
    out.dropped.map((d) => d.reason),
    ['malformed', 'amplification'],
  );
  // a smaller allowance (the sender's decoding budget) binds first
  const small = decodePacket(packet, plain, 1000);
  assert.equal(small.unpackedBytes, 1000);
  assert.deepEqual(
    small.dropped.map((d) => d.reason),
    ['amplification'],
  );
});

test('failed compress parts are charged: a good part after them finds the allowance spent', () => {
  const ping = encodeMessage({ type: 'ping', seqNo: 7, node: 'me' });
  const good = encodeCompress(ping);
  const bad = failingCompressPart(40_000); // unpacks ~40 KB, then fails
  const before = decodePacket(encodeCompound([good, bad, bad]), plain);
  assert.equal(before.messages.length, 1, 'the good part first: decoded');
  const after = decodePacket(encodeCompound([bad, bad, good]), plain);
  assert.equal(after.messages.length, 0, 'after two failed parts of ~40 KB each the allowance is spent: the good part is not decoded');
  assert.deepEqual(
    after.dropped.map((d) => d.reason),
    ['malformed', 'amplification'],
  );
});

test('streams: the compress layer is bounded by the sender allowance (rateLimited) and reports what it unpacked', () => {
  const pp = encodePushPull({ join: false, nodes: [], userState: new Uint8Array(200_000) });
  const stream = encodeStreamMessage(pp, { ...plain, enableCompression: true });
  const ok = decodeStreamMessage(stream, plain);
  assert.equal(ok.unpackedBytes, pp.length);
  assert.throws(
    () => decodeStreamMessage(stream, plain, 50_000),
    (e: unknown) => e instanceof WireError && e.reason === 'rateLimited' && e.unpackedBytes === 50_000,
  );
});

test('DecodeAllowance: a burst, then the rate; sources are separate; full buckets are forgotten first when too many are tracked', () => {
  const a = new DecodeAllowance({ bytesPerSecond: 1000, burstBytes: 5000 }, 3);
  assert.equal(a.available('x', 0), 5000);
  a.charge('x', 7000, 0);
  assert.equal(a.available('x', 0), -2000);
  assert.equal(a.available('y', 0), 5000);
  assert.equal(a.available('x', 2000), 0);
  assert.equal(a.available('x', 3000), 1000);
  assert.equal(a.available('x', 60_000), 5000, 'never above the burst');
  a.charge('y', 10, 60_000);
  a.charge('z', 6000, 60_000);
  assert.equal(a.size, 3);
  a.charge('w', 1, 60_001); // x is full again: forgotten
  assert.equal(a.size, 3);
  assert.ok(a.available('z', 60_001) < 0, 'the penalised source is still tracked');
  assert.equal(DECODE_BYTES_PER_SECOND, 1024 * 1024);
  assert.equal(DECODE_BURST_BYTES, 2 * 1024 * 1024);
});

async function startMember(opts: Partial<ConstructorParameters<typeof MemberlistMember>[0]> = {}): Promise<{ member: MemberlistMember; logs: string[] }> {
  const logs: string[] = [];
  const member = new MemberlistMember({ name: 'me', bindAddr: '127.0.0.1', bindPort: 0, config: LAN_CONFIG, seed: 1, log: (m) => logs.push(m), ...opts });
  await member.start();
  return { member, logs };
}

test('a member drops a flooding source beyond its allowance (rateLimited) while another source is decoded; each drop reason is logged once a minute', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const { member, logs } = await startMember();
  try {
    const { packet } = amplificationPacket();
    const attacker = { host: '127.0.0.66', port: 7946 };
    for (let i = 0; i < 100; i++) member.receivePacket(packet, attacker);
    const s = member.stats();
    // 2 MiB burst at ~128 KiB of work per packet (its bytes + 64 KiB unpacked): ~16 decoded, the rest rate-limited
    assert.ok((s.dropped.rateLimited ?? 0) >= 80, JSON.stringify(s.dropped));
    assert.ok((s.dropped.amplification ?? 0) <= 20, JSON.stringify(s.dropped));
    for (let i = 0; i < 50; i++) member.receivePacket(garbagePacket(1, 2000), attacker);
    assert.ok(member.stats().dropped.rateLimited! >= 130);
    // another source is decoded: its ping gets an ack (packetsOut grows)
    const out = member.stats().packetsOut;
    member.receivePacket(encodePacket(encodeMessage({ type: 'ping', seqNo: 1, node: 'me' }), plain, false), { host: '127.0.0.1', port: 9 });
    assert.equal(member.stats().packetsOut, out + 1);
    const lines = (reason: string): string[] => logs.filter((l) => l.includes(`(reason ${reason}`));
    assert.equal(lines('rateLimited').length, 1, logs.join('\n'));
    assert.match(lines('rateLimited')[0]!, /the last from 127\.0\.0\.66/);
    assert.equal(lines('amplification').length, 1, logs.join('\n'));
    // a minute later, the allowance is back and the next drop of a reason logs again, with the count since
    t.mock.timers.tick(DROP_LOG_INTERVAL_MS);
    for (let i = 0; i < 40; i++) member.receivePacket(packet, attacker);
    assert.equal(lines('rateLimited').length, 2, logs.join('\n'));
    assert.match(lines('rateLimited')[1]!, /dropped \d+ packets or streams .* since /);
  } finally {
    member.kill();
  }
});
