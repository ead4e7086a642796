// MetalLB's memberlist secret handling: the `secretkey` file read as is, the key derived from it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ipToBytes, memberlistEnabled, readMemberlistKey } from '../../src/speaker/membership-memberlist.ts';

test('readMemberlistKey: file read as is (a trailing newline counts), empty = unencrypted, missing = error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ml-secret-'));
  writeFileSync(join(dir, 'secretkey'), 'short-secret');
  assert.equal(Buffer.from(readMemberlistKey(dir)!).toString('hex'), '73686f72742d736563726574e3b0c44298fc1c149afbf4c8996fb92427ae41e4');
  writeFileSync(join(dir, 'secretkey'), 'short-secret\n');
  assert.equal(Buffer.from(readMemberlistKey(dir)!).toString('hex'), '73686f72742d7365637265740ae3b0c44298fc1c149afbf4c8996fb92427ae41');
  writeFileSync(join(dir, 'secretkey'), '');
  assert.equal(readMemberlistKey(dir), null);
  assert.throws(() => readMemberlistKey(join(dir, 'nope')), /ENOENT/);
});

test('memberlistEnabled needs both the bind address and the labels, as MetalLB', () => {
  assert.equal(memberlistEnabled('10.0.0.1', 'app=metallb'), true);
  assert.equal(memberlistEnabled('10.0.0.1', ''), false);
  assert.equal(memberlistEnabled(undefined, 'app=metallb'), false);
});

test('ipToBytes: IPv4 as 4 bytes, IPv6 as 16', () => {
  assert.deepEqual(Array.from(ipToBytes('10.0.0.200')), [10, 0, 0, 200]);
  assert.deepEqual(Array.from(ipToBytes('2001:db8::1')), [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(Array.from(ipToBytes('::ffff:1.2.3.4')).slice(10), [0xff, 0xff, 1, 2, 3, 4]);
  assert.throws(() => ipToBytes('nope'));
});
