/**
 * Conformance adapter for test/reference/conformance/allocator: translates each case's steps to
 * the Allocator's public API (src/core/allocator) and compares outcomes. No behaviour here.
 */
import { basename, dirname } from 'node:path';
import { Allocator, AllocationError, type AllocRequest, type Family, type Port } from '../../src/core/allocator/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import { canonicalIP, parseIP, type IP } from '../../src/core/ip.ts';
import type { IPAddressPool, Namespace } from '../../src/core/kube.ts';
import type { CaseResult, SuiteAdapter } from './types.ts';

function request(step: any): AllocRequest {
  const key: string = step.service;
  return {
    key,
    namespace: key.includes('/') ? key.slice(0, key.indexOf('/')) : 'default',
    labels: step.labels ?? {},
    ipFamilyPolicy: step.ipFamilyPolicy ?? null,
    ipFamilies: step.ipFamilies ?? null,
    ports: ((step.ports ?? []) as any[]).map((p): Port => ({ protocol: String(p.protocol), port: Number(p.port) })),
    sharingKey: step.sharingKey ?? '',
    backendKey: step.backendKey ?? '',
  };
}

function ips(list: string[]): IP[] {
  return list.map((s) => {
    const ip = parseIP(s);
    if (!ip) throw new Error(`fixture address ${s} does not parse`);
    return ip;
  });
}

function canon(list: readonly string[]): string[] {
  return list.map((s) => canonicalIP(s) ?? s);
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function big(v: unknown): bigint {
  return BigInt(v as string | number);
}

/** Runs one step; returns a mismatch description or undefined. */
function runStep(alloc: Allocator, step: any, namespaces: Namespace[]): string | undefined {
  const expect = step.expect;
  switch (step.op) {
    case 'setPools':
      alloc.setPools(((step.pools ?? []) as IPAddressPool[]).map((p) => parsePool(p, step.namespaces ?? namespaces)));
      return undefined;
    case 'unassign':
      alloc.unassign(step.service);
      return undefined;
    case 'assign':
    case 'allocate':
    case 'allocateFromPool': {
      const req = request(step);
      let got: readonly string[] | undefined;
      let err: AllocationError | undefined;
      try {
        if (step.op === 'assign') got = alloc.assign(req, ips(step.ips)).ips;
        else if (step.op === 'allocate') got = alloc.allocate(req, step.family as Family).ips;
        else got = alloc.allocateFromPool(req, step.family as Family, step.pool).ips;
      } catch (e) {
        if (!(e instanceof AllocationError)) throw e;
        err = e;
      }
      if (!expect) return undefined;
      if (expect.error !== undefined && expect.error !== (err !== undefined)) {
        return `${step.op} ${step.service}: expected ${expect.error ? 'an error' : 'success'}, got ${err ? `error: ${err.message}` : `[${got!.join(', ')}]`}`;
      }
      if (expect.held !== undefined) {
        const held = alloc.ipsOf(step.service);
        if (!same(held, canon(expect.held))) return `${step.op} ${step.service}: held [${held.join(', ')}], expected [${expect.held.join(', ')}]`;
      }
      if (got && expect.ips !== undefined && !same(got, canon(expect.ips))) {
        return `${step.op} ${step.service}: returned [${got.join(', ')}], expected [${expect.ips.join(', ')}]`;
      }
      if (got && expect.ipsWithin !== undefined) {
        const within = new Set(canon(expect.ipsWithin));
        const fams: string[] = expect.families ?? [];
        const ok = got.length === fams.length && got.every((s, i) => within.has(s) && parseIP(s)!.family === fams[i]);
        if (!ok) return `${step.op} ${step.service}: returned [${got.join(', ')}], expected families [${fams.join(', ')}] within [${[...within].join(', ')}]`;
      }
      return undefined;
    }
    case 'poolOf': {
      const pool = alloc.poolOf(step.service);
      if (expect && pool !== (expect.pool ?? null)) return `poolOf ${step.service}: ${pool}, expected ${expect.pool}`;
      return undefined;
    }
    case 'capacity': {
      const c = alloc.capacity(step.pool);
      if (!expect) return undefined;
      if (!c) return `capacity ${step.pool}: unknown pool`;
      for (const k of ['total', 'ipv4', 'ipv6'] as const) {
        if (expect[k] !== undefined && c[k] !== big(expect[k])) return `capacity ${step.pool}.${k}: ${c[k]}, expected ${expect[k]}`;
      }
      return undefined;
    }
    case 'counters': {
      const c = alloc.counters(step.pool);
      if (!expect) return undefined;
      for (const k of ['availableIPv4', 'availableIPv6', 'assignedIPv4', 'assignedIPv6'] as const) {
        if (expect[k] !== undefined && c[k] !== big(expect[k])) return `counters ${step.pool}.${k}: ${c[k]}, expected ${expect[k]}`;
      }
      return undefined;
    }
    case 'notificationCount':
      if (expect && alloc.notificationCount !== Number(expect.count)) {
        return `notificationCount: ${alloc.notificationCount}, expected ${expect.count}`;
      }
      return undefined;
    default:
      return `unknown op ${step.op}`;
  }
}

export const adapter: SuiteAdapter = {
  name: 'allocator',
  accepts(file: string, doc: unknown): boolean {
    return basename(dirname(file)) === 'allocator' && typeof doc === 'object' && doc !== null && Array.isArray((doc as any).cases);
  },
  run(doc: any): CaseResult[] {
    const results: CaseResult[] = [];
    for (const c of doc.cases as any[]) {
      const name = String(c.id);
      try {
        const alloc = new Allocator();
        const namespaces: Namespace[] = c.namespaces ?? doc.namespaces ?? [];
        const pools = c.pools ?? doc.pools;
        if (pools) runStep(alloc, { op: 'setPools', pools }, namespaces);
        let why: string | undefined;
        for (const step of c.steps as any[]) {
          const mismatch = runStep(alloc, step, namespaces);
          if (mismatch && step.expect) {
            why = mismatch;
            break;
          }
        }
        results.push(why ? { name, ok: false, why } : { name, ok: true });
      } catch (err) {
        results.push({ name, ok: false, why: `crashed: ${(err as Error).stack ?? err}` });
      }
    }
    return results;
  },
};
