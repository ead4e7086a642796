/**
 * Allocator.clone (the dry run forks its state with it): a copy taken in the middle of a random
 * operation sequence goes on exactly like an allocator that ran the whole sequence, and neither
 * the copy nor the original sees the other's later operations.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Allocator, AllocationError, type AllocRequest } from '../../src/core/allocator/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import type { Pool } from '../../src/core/config/types.ts';

function mkPool(name: string, addresses: string[]): Pool {
  return parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'm' }, spec: { addresses } }, []);
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

type Op = { kind: 'unassign'; key: string } | { kind: 'allocate'; req: AllocRequest };

function ops(seed: number, n: number): Op[] {
  const rand = rng(seed);
  const sharing = ['', '', 'a', 'b'];
  return Array.from({ length: n }, (): Op => {
    const key = `default/s${Math.floor(rand() * 30)}`;
    if (rand() < 0.3) return { kind: 'unassign', key };
    return {
      kind: 'allocate',
      req: {
        key,
        namespace: 'default',
        sharingKey: sharing[Math.floor(rand() * sharing.length)]!,
        backendKey: rand() < 0.5 ? '' : 'x',
        ports: [{ protocol: 'TCP', port: 80 + Math.floor(rand() * 2) }],
      },
    };
  });
}

/** Applies `op`; the addresses it got, or the failure's reason. */
function apply(alloc: Allocator, op: Op): string {
  if (op.kind === 'unassign') {
    alloc.unassign(op.key);
    return 'unassigned';
  }
  try {
    return alloc.allocate(op.req, 'ipv4').ips.join(',');
  } catch (err) {
    assert.ok(err instanceof AllocationError);
    return `failed: ${err.reason.kind}`;
  }
}

/** Everything observable of an allocator's state: each Service's addresses and pool, the counters. */
function state(alloc: Allocator): string {
  const services = Array.from({ length: 30 }, (_, i) => `default/s${i}`).map((k) => [k, alloc.ipsOf(k), alloc.poolOf(k)]);
  return JSON.stringify([services, ['a', 'b'].map((p) => alloc.counters(p))], (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

for (const seed of [1, 2, 3]) {
  test(`a clone goes on like the original would, and they stay apart (seed ${seed})`, () => {
    const pools = [mkPool('a', ['10.0.0.0/29']), mkPool('b', ['10.0.1.0/30'])];
    const list = ops(seed, 400);
    const whole = new Allocator();
    whole.setPools(pools);
    const original = new Allocator();
    original.setPools(pools);
    original.preferredPools.set('default/s3', 'b');
    whole.preferredPools.set('default/s3', 'b');
    for (const op of list.slice(0, 200)) apply(original, op);
    const copy = original.clone();
    const atFork = state(original);
    assert.equal(state(copy), atFork);

    const got = list.map((op, i) => (i < 200 ? apply(whole, op) : ''));
    for (let i = 200; i < list.length; i++) assert.equal(apply(copy, list[i]!), apply(whole, list[i]!), `step ${i}`);
    assert.equal(state(copy), state(whole));
    assert.equal(state(original), atFork, 'the original did not move');
    assert.ok(
      got.some((g) => g.startsWith('failed')),
      'the sequence fills the pools at least once',
    );

    // Operations on the original leave the copy alone.
    const copyState = state(copy);
    for (const op of ops(seed + 100, 100)) apply(original, op);
    assert.equal(state(copy), copyState);
    assert.equal(copy.preferredPools.get('default/s3'), 'b');
  });
}
