/**
 * Conformance adapter for test/reference/conformance/bgp (MetalLB v0.16.1's speaker in frr-k8s mode,
 * see its README): for every expected node, `speakerDryRun` — the daemon's own Speaker run once
 * over the case's resources with recording ports, the code `metallb-ts speaker --dry-run` runs —
 * and compares the configuration error (null vs not), the FRRConfiguration sent (as data: maps
 * unordered, lists ordered; `{}` and absent alike), the ServiceBGPStatus objects (generateName,
 * namespace, labels, owner, status; the generated suffix ignored), each Service's BGP decision
 * and peers, and the Events as a multiset. One result per (case, node). Translation only.
 */
import { isDeepStrictEqual } from 'node:util';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { speakerDryRun, type SpeakerDryRun } from '../../src/speaker/dry-run.ts';
import type { CaseResult, SuiteAdapter } from './types.ts';

const show = (v: unknown): string => JSON.stringify(v);

/** `{}` and absent are the same to the apiserver: drop empty objects (but keep empty lists). */
function compact(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(compact);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const c = compact(x);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return v;
}

/** The parts of a ServiceBGPStatus the README says to compare. */
function statusShape(s: any): unknown {
  return {
    generateName: s?.metadata?.generateName,
    namespace: s?.metadata?.namespace,
    labels: s?.metadata?.labels,
    ownerReferences: (s?.metadata?.ownerReferences ?? []).map((o: any) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name, uid: o.uid })),
    status: s?.status,
  };
}

function eventKey(e: { service: string; type: string; reason: string; message: string }): string {
  return show([e.service, e.type, e.reason, e.message]);
}

function compare(got: SpeakerDryRun, want: any): string[] {
  const diffs: string[] = [];
  const rejected = !got.configuration.accepted;
  if (rejected !== (want.configError !== null)) {
    diffs.push(`configError ${rejected ? show((got.configuration as { error: string }).error) : 'null'}, expected ${show(want.configError)}`);
  }
  if (!isDeepStrictEqual(compact(got.frrConfiguration), compact(want.frrConfiguration))) {
    diffs.push(`frrConfiguration ${show(got.frrConfiguration)}, expected ${show(want.frrConfiguration)}`);
  }
  const gotStatuses = got.serviceBGPStatuses.map(statusShape);
  const wantStatuses = (want.serviceBGPStatuses ?? []).map(statusShape);
  if (!isDeepStrictEqual(compact(gotStatuses), compact(wantStatuses))) diffs.push(`serviceBGPStatuses ${show(gotStatuses)}, expected ${show(wantStatuses)}`);
  for (const [svc, exp] of Object.entries<any>(want.services ?? {})) {
    const s = got.services.find((x) => x.service === svc);
    if (!s) {
      diffs.push(`${svc}: not in the dry run`);
      continue;
    }
    if (s.bgp !== exp.decision) diffs.push(`${svc}: decision ${s.bgp}, expected ${exp.decision}`);
    if (!isDeepStrictEqual([...s.peers], exp.peers ?? [])) diffs.push(`${svc}: peers ${show(s.peers)}, expected ${show(exp.peers)}`);
  }
  const gotEvents = got.events.map(eventKey).sort();
  const wantEvents = (want.events ?? []).map(eventKey).sort();
  if (!isDeepStrictEqual(gotEvents, wantEvents)) diffs.push(`events ${show(gotEvents)}, expected ${show(wantEvents)}`);
  return diffs;
}

async function runCase(c: any): Promise<CaseResult[]> {
  const id = String(c.id ?? c.name);
  const state = clusterStateFromObjects((c.resources ?? []) as KubeObject[]);
  const out: CaseResult[] = [];
  for (const [node, want] of Object.entries<any>(c.expected ?? {})) {
    const name = `${id} [${node}]`;
    try {
      const got = await speakerDryRun(state, {
        node,
        namespace: c.speaker?.namespace ?? 'metallb-system',
        frrk8sNamespace: c.speaker?.frrk8sNamespace ?? c.speaker?.namespace ?? 'metallb-system',
        ignoreExcludeLB: c.speaker?.ignoreExcludeLB === true,
        bgpType: 'frr-k8s',
        speakers: null,
        // the cases hold MetalLB's events: our notAnnounced Warning (beyond MetalLB) is off, as --no-unannounced-events
        unannouncedEvents: false,
      });
      const diffs = compare(got, want);
      out.push(diffs.length ? { name, ok: false, why: diffs.join('; ') } : { name, ok: true });
    } catch (err) {
      out.push({ name, ok: false, why: `threw: ${(err as Error).stack ?? err}` });
    }
  }
  return out;
}

export const adapter: SuiteAdapter = {
  name: 'bgp',
  accepts(file: string, doc: unknown): boolean {
    const d = doc as any;
    if (!d || !Array.isArray(d.cases)) return false;
    if (/(^|[\\/])bgp[\\/]/.test(file)) return true;
    return d.cases.every((c: any) => c?.speaker && c?.expected && typeof c.expected === 'object' && !Array.isArray(c.expected));
  },
  async run(doc: any): Promise<CaseResult[]> {
    const out: CaseResult[] = [];
    for (const c of doc.cases as any[]) out.push(...(await runCase(c)));
    return out;
  },
};
