/**
 * The pure stream framing of src/core/membership/stream.ts (issue #13 item 5): `encodeStream` and
 * `readStream` over random messages, wire options and chunkings (round-trips), and over random and
 * mutated byte streams cut at random points (never throws anything but WireError).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Keyring } from '../../src/core/membership/crypto.ts';
import { WireError, encodeMessage, encodePushPull, encodeStream, readStream, type Message, type WireOptions } from '../../src/core/membership/messages.ts';
import { mulberry32 } from '../helpers/rng.ts';

const KEY = Uint8Array.from({ length: 16 }, (_, i) => i + 1);

function randomBytes(rnd: () => number, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
}

function randomOptions(rnd: () => number): WireOptions {
  return {
    keyring: rnd() < 0.4 ? new Keyring([KEY]) : null,
    label: rnd() < 0.3 ? `label-${Math.floor(rnd() * 100)}` : '',
    enableCompression: rnd() < 0.5,
    gossipVerifyIncoming: true,
    gossipVerifyOutgoing: true,
  };
}

/** A random stream message: ping, ack, err or push/pull, as the value readStream should give back. */
function randomMessage(rnd: () => number): { bytes: Uint8Array; want: unknown } {
  const pick = Math.floor(rnd() * 4);
  if (pick === 3) {
    const nodes = Array.from({ length: Math.floor(rnd() * 20) }, (_, i) => ({
      name: `node-${i}-${Math.floor(rnd() * 1e6)}`,
      addr: randomBytes(rnd, rnd() < 0.5 ? 4 : 16),
      port: Math.floor(rnd() * 65536),
      meta: null,
      incarnation: Math.floor(rnd() * 2 ** 32),
      state: Math.floor(rnd() * 4),
      vsn: Uint8Array.of(1, 5, 2, 0, 0, 0),
    }));
    const pp = { join: rnd() < 0.5, nodes, userState: rnd() < 0.2 ? randomBytes(rnd, 30) : new Uint8Array(0) };
    return { bytes: encodePushPull(pp), want: { type: 'pushPull', ...pp } };
  }
  const m: Message =
    pick === 0
      ? { type: 'ping', seqNo: Math.floor(rnd() * 2 ** 32), node: `n${Math.floor(rnd() * 1000)}`, sourceAddr: null, sourcePort: 0, sourceNode: '' }
      : pick === 1
        ? { type: 'ack', seqNo: Math.floor(rnd() * 2 ** 32), payload: null }
        : { type: 'err', error: `remote error ${Math.floor(rnd() * 1000)}` };
  return { bytes: encodeMessage(m), want: m };
}

/** Cut points splitting `n` bytes into 1 to 8 random chunks (ascending, the last is `n`). */
function chunking(rnd: () => number, n: number): number[] {
  const cuts = new Set<number>([n]);
  const k = Math.floor(rnd() * 8);
  for (let i = 0; i < k; i++) cuts.add(1 + Math.floor(rnd() * Math.max(1, n - 1)));
  return [...cuts].filter((c) => c > 0 && c <= n).sort((a, b) => a - b);
}

test('encodeStream then readStream round-trips 2,000 random messages under random options and chunkings; a prefix is always incomplete', () => {
  const rnd = mulberry32(5);
  for (let i = 0; i < 2000; i++) {
    const opts = randomOptions(rnd);
    const { bytes, want } = randomMessage(rnd);
    const withLabel = opts.label !== '' || rnd() < 0.5;
    const stream = encodeStream(bytes, opts, withLabel);
    const labelBytes = opts.label === '' ? 0 : 2 + opts.label.length;
    for (const cut of chunking(rnd, stream.length)) {
      const got = readStream(stream.subarray(0, cut), opts);
      if (cut < stream.length) {
        assert.equal(got.kind, 'incomplete', `message ${i} cut at ${cut} of ${stream.length}`);
        continue;
      }
      assert.equal(got.kind, 'message');
      if (got.kind !== 'message') continue;
      assert.equal(got.labelBytes, labelBytes);
      assert.equal(got.labelBytes + got.consumed, stream.length, 'consumes the whole message');
      assert.deepEqual({ ...got.msg }, want);
    }
    // bytes after the message (the next one, or garbage) do not change what is read
    const more = new Uint8Array(stream.length + 7);
    more.set(stream);
    more.set(randomBytes(rnd, 7), stream.length);
    const again = readStream(more, opts);
    assert.equal(again.kind, 'message');
    if (again.kind === 'message') assert.equal(again.consumed, stream.length - labelBytes);
  }
});

test('readStream over 10,000 random and mutated byte streams cut at random points: returns incomplete or a message, or throws WireError, nothing else', () => {
  const rnd = mulberry32(17);
  const outcomes = new Map<string, number>();
  for (let i = 0; i < 10_000; i++) {
    const opts = randomOptions(rnd);
    let stream: Uint8Array;
    if (rnd() < 0.5) {
      stream = randomBytes(rnd, Math.floor(rnd() * 200));
      if (stream.length > 0 && rnd() < 0.5) stream[0] = [6, 9, 10, 244, 0, 2, 13][Math.floor(rnd() * 7)]!;
    } else {
      stream = encodeStream(randomMessage(rnd).bytes, { ...randomOptions(rnd), label: opts.label }, rnd() < 0.8).slice();
      for (let k = Math.floor(rnd() * 4); k > 0 && stream.length > 0; k--) stream[Math.floor(rnd() * stream.length)] = Math.floor(rnd() * 256);
    }
    for (const cut of chunking(rnd, stream.length)) {
      let outcome: string;
      try {
        outcome = readStream(stream.subarray(0, cut), opts).kind;
      } catch (e) {
        assert.ok(e instanceof WireError, `stream ${i} cut at ${cut}: threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
        outcome = `WireError ${e.reason}`;
      }
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
  }
  // the fuzzing reaches each kind of outcome, not only one
  for (const kind of ['incomplete', 'message', 'WireError label', 'WireError decrypt', 'WireError malformed']) assert.ok((outcomes.get(kind) ?? 0) > 0, `${kind}: ${JSON.stringify([...outcomes])}`);
});
