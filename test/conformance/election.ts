/**
 * Conformance adapter for test/reference/conformance/election: builds the cluster state from each
 * case's `resources`, the Config with diagnosticConfig, runs electL2 once per expected service and
 * compares the speaker's decision on every listed node (decideL2ForNode), the winner and the
 * optional `candidates`, `advertisements` and `interfaces`. No behaviour here: translation only.
 * One result per case (every expected entry must match).
 *
 * Why diagnosticConfig and not each speaker's own configuration (speakerConfigs, what the CLI
 * uses): these cases come from MetalLB's unit tests, which build their configurations directly and
 * so bypass the parser's duplicate checks; some carry repeated selectors that the real speakers
 * would reject. diagnosticConfig parses the whole cluster once and, when the only objection is
 * repeated entries, parses it again with them removed — the configuration those tests mean, not
 * one any speaker would run. `explain` never uses it as the truth.
 */
import { diagnosticConfig } from '../../src/core/explain/index.ts';
import { buildElectionIndex, decideL2ForNode, electL2 } from '../../src/core/election/index.ts';
import { clusterStateFromObjects, namespacedName, type KubeObject, type Service } from '../../src/core/kube.ts';
import type { CaseResult, SuiteAdapter } from './types.ts';

const show = (v: unknown): string => JSON.stringify(v);

function runCase(c: any): CaseResult {
  const name = String(c.name);
  const state = clusterStateFromObjects((c.resources ?? []) as KubeObject[]);
  const { config } = diagnosticConfig(state);
  const speakers: string[] | null = c.speakers === null || c.speakers === undefined ? null : c.speakers.map(String);
  const ignoreExcludeLB = c.ignoreExcludeLB === true;
  const index = buildElectionIndex(state, speakers);
  const diffs: string[] = [];
  for (const exp of (c.expected ?? []) as any[]) {
    const service = state.services.find((s: Service) => namespacedName(s) === exp.service);
    if (!service) {
      diffs.push(`${exp.service}: no such Service in resources`);
      continue;
    }
    const e = electL2({ config, state, service, speakers, ignoreExcludeLB, index });
    const where = exp.service;
    if ((exp.winner ?? null) !== e.winner) diffs.push(`${where}: winner ${show(e.winner)}, expected ${show(exp.winner ?? null)}`);
    for (const [node, want] of Object.entries(exp.nodes ?? {})) {
      const got = decideL2ForNode(e, node).decision;
      if (got !== want) diffs.push(`${where} on ${node}: ${got}, expected ${want}`);
    }
    if (exp.candidates !== undefined && show(e.candidates) !== show(exp.candidates)) {
      diffs.push(`${where}: candidates ${show(e.candidates)}, expected ${show(exp.candidates)}`);
    }
    if (exp.advertisements !== undefined && show(e.advertisements) !== show(exp.advertisements)) {
      diffs.push(`${where}: advertisements ${show(e.advertisements)}, expected ${show(exp.advertisements)}`);
    }
    for (const [node, want] of Object.entries(exp.interfaces ?? {})) {
      const got = decideL2ForNode(e, node).interfaces;
      if (show(got) !== show(want)) diffs.push(`${where} on ${node}: interfaces ${show(got)}, expected ${show(want)}`);
    }
  }
  return diffs.length ? { name, ok: false, why: diffs.join('; ') } : { name, ok: true };
}

export const adapter: SuiteAdapter = {
  name: 'election',
  accepts(file: string, doc: unknown): boolean {
    const d = doc as any;
    if (!d || !Array.isArray(d.cases)) return false;
    if (/(^|[\\/])election[\\/]/.test(file)) return true;
    return d.cases.every((c: any) => Array.isArray(c?.resources) && Array.isArray(c?.expected) && c.expected.every((x: any) => x && 'nodes' in x && 'winner' in x));
  },
  run(doc: any): CaseResult[] {
    return (doc.cases as any[]).map((c) => {
      try {
        return runCase(c);
      } catch (err) {
        return { name: String(c?.name), ok: false, why: `threw: ${(err as Error).message}` };
      }
    });
  },
};
