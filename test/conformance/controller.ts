/**
 * Conformance adapter for test/reference/conformance/controller: feeds each case's steps to
 * setControllerPools / reconcileService (src/core/controller) and compares outcomes. No behaviour here.
 */
import { basename, dirname } from 'node:path';
import { newController, reconcileService, setControllerPools, ANNOTATION_IP_ALLOCATED_FROM_POOL } from '../../src/core/controller/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import type { IPAddressPool, Namespace, Service } from '../../src/core/kube.ts';
import type { CaseResult, SuiteAdapter } from './types.ts';

/** JSON with null/undefined members dropped, for structural comparison. */
function clean(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clean);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined && x !== null) out[k] = clean(x);
    }
    return out;
  }
  return v;
}

const show = (v: unknown): string => JSON.stringify(clean(v));

function runCase(doc: any, c: any): string | undefined {
  const ctrl = newController();
  const namespaces: Namespace[] = c.namespaces ?? doc.namespaces ?? [];
  const toPools = (list: IPAddressPool[] | null) => (list === null ? null : list.map((p) => parsePool(p, namespaces)));
  const pools = c.pools ?? doc.pools;
  if (pools !== undefined) setControllerPools(ctrl, toPools(pools));
  for (const [i, step] of (c.steps as any[]).entries()) {
    const e = step.expect;
    const where = `step ${i + 1} (${step.op})`;
    if (step.op === 'setPools') {
      const result = setControllerPools(ctrl, toPools(step.pools ?? null));
      if (e && e.result !== result) return `${where}: result ${result}, expected ${e.result}`;
      continue;
    }
    if (step.op !== 'reconcile') return `${where}: unknown op`;
    const out = reconcileService(ctrl, step.key, (step.service ?? null) as Service | null);
    if (!e) continue;
    if (e.result !== undefined && out.result !== e.result) return `${where}: result ${out.result}, expected ${e.result}`;
    if (e.updated !== undefined && out.updated !== e.updated) return `${where}: updated ${out.updated}, expected ${e.updated}`;
    if (out.updated) {
      if (e.status !== undefined && show(out.status) !== show(e.status)) return `${where}: status ${show(out.status)}, expected ${show(e.status)}`;
      const annotations = { ...(out.annotations ?? {}) };
      const fromPool = annotations[ANNOTATION_IP_ALLOCATED_FROM_POOL] ?? null;
      delete annotations[ANNOTATION_IP_ALLOCATED_FROM_POOL];
      if (e.annotations !== undefined && show(annotations) !== show(e.annotations ?? {})) {
        return `${where}: annotations ${show(annotations)}, expected ${show(e.annotations)}`;
      }
      if (e.allocatedFromPool !== undefined) {
        const ok = Array.isArray(e.allocatedFromPool) ? e.allocatedFromPool.includes(fromPool) : fromPool === e.allocatedFromPool;
        if (!ok) return `${where}: ip-allocated-from-pool ${fromPool}, expected ${JSON.stringify(e.allocatedFromPool)}`;
      }
    }
    const warning = out.events.some((ev) => ev.type === 'Warning');
    if (e.warning !== undefined && warning !== e.warning) return `${where}: warning ${warning}, expected ${e.warning} (events ${show(out.events)})`;
    if (e.events !== undefined) {
      const got = out.events.map((ev) => ({ type: ev.type, reason: ev.reason }));
      if (show(got) !== show(e.events)) return `${where}: events ${show(got)}, expected ${show(e.events)}`;
    }
  }
  return undefined;
}

export const adapter: SuiteAdapter = {
  name: 'controller',
  accepts(file: string, doc: unknown): boolean {
    return basename(dirname(file)) === 'controller' && typeof doc === 'object' && doc !== null && Array.isArray((doc as any).cases);
  },
  run(doc: any): CaseResult[] {
    return (doc.cases as any[]).map((c) => {
      const name = String(c.id);
      try {
        const why = runCase(doc, c);
        return why ? { name, ok: false, why } : { name, ok: true };
      } catch (err) {
        return { name, ok: false, why: `crashed: ${(err as Error).stack ?? err}` };
      }
    });
  },
};
