/**
 * Conformance adapter for test/reference/conformance/config (files with a `check` key): feeds each
 * case's manifests to the configuration layer's public functions and compares the outcome with
 * the expectation (see that folder's README). Translation only: no behaviour lives here.
 */
import { isDeepStrictEqual } from 'node:util';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { admissionReview, clusterValidation, effectiveSummary, parseConfig, resetTransient, validateFRR, validateNative } from '../../src/core/config/index.ts';
import type { CaseResult, SuiteAdapter } from './types.ts';

interface Case {
  name: string;
  manifests?: KubeObject[];
  error?: boolean;
  errorContains?: string;
  effective?: Record<string, unknown>;
  expectedManifests?: KubeObject[];
  metallbNamespace?: string;
  operation?: 'create' | 'update' | 'delete';
  object?: KubeObject;
  clusterValidation?: 'pass' | 'fail';
  validated?: Record<string, string[]> | null;
}

const SECTIONS = { pools: {}, peers: {}, bfdProfiles: {}, poolsByNamespace: {}, poolsByServiceSelector: [] };

/** Removes keys whose value is null, "", {} or [] (recursively), for reset-transient comparisons. */
function prune(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(prune);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const p = prune(x);
      if (p === null || p === undefined || p === '') continue;
      if (Array.isArray(p) && p.length === 0) continue;
      if (typeof p === 'object' && !Array.isArray(p) && Object.keys(p as object).length === 0) continue;
      out[k] = p;
    }
    return out;
  }
  return v;
}

/** Runs fn and checks error/errorContains; `onOk` checks the value when no error is expected. */
function expectOutcome<T>(c: Case, fn: () => T, onOk?: (v: T) => string | undefined): CaseResult {
  let value: T;
  try {
    value = fn();
  } catch (err) {
    const message = (err as Error).message;
    if (!c.error) return { name: c.name, ok: false, why: `unexpected error: ${message}` };
    if (c.errorContains && !message.includes(c.errorContains)) {
      return { name: c.name, ok: false, why: `error ${JSON.stringify(message)} lacks ${JSON.stringify(c.errorContains)}` };
    }
    return { name: c.name, ok: true };
  }
  if (c.error) return { name: c.name, ok: false, why: 'expected an error, got none' };
  const why = onOk?.(value);
  return why ? { name: c.name, ok: false, why } : { name: c.name, ok: true };
}

function diff(got: unknown, want: unknown): string | undefined {
  return isDeepStrictEqual(got, want) ? undefined : `got ${JSON.stringify(got)}\n  want ${JSON.stringify(want)}`;
}

function runCase(check: string, c: Case): CaseResult {
  const manifests = c.manifests ?? [];
  const state = () => clusterStateFromObjects(manifests);
  switch (check) {
    case 'parse':
      return expectOutcome(
        c,
        () => effectiveSummary(parseConfig(state())),
        (got) => diff(got, { ...SECTIONS, ...c.effective }),
      );
    case 'validate-native':
      return expectOutcome(c, () => validateNative(state()));
    case 'validate-frr':
      return expectOutcome(c, () => validateFRR(state()));
    case 'cluster-validation':
      return expectOutcome(c, () => clusterValidation()(manifests));
    case 'reset-transient':
      return expectOutcome(
        c,
        () => resetTransient(manifests),
        (got) => diff(prune(got), prune(c.expectedManifests ?? [])),
      );
    case 'webhook': {
      let calls = 0;
      const decision = admissionReview({
        metallbNamespace: c.metallbNamespace ?? '',
        operation: c.operation ?? 'create',
        object: c.object ?? {},
        stored: manifests,
        clusterValidation: () => {
          calls++;
          if (c.clusterValidation === 'fail') throw new Error('cluster validation failed (stub)');
        },
      });
      if (decision.allowed === !!c.error) {
        return { name: c.name, ok: false, why: `allowed=${decision.allowed} (${decision.reason})` };
      }
      if (c.validated === null && (decision.validated !== null || calls > 0)) {
        return { name: c.name, ok: false, why: 'cluster validation was called' };
      }
      if (c.validated) {
        if (!decision.validated) return { name: c.name, ok: false, why: 'cluster validation was not called' };
        for (const [kind, names] of Object.entries(c.validated)) {
          const got = decision.validated.filter((o) => o.kind === kind).map((o) => o.metadata?.name);
          const why = diff(got, names);
          if (why) return { name: c.name, ok: false, why: `validated ${kind}: ${why}` };
        }
      }
      return { name: c.name, ok: true };
    }
    default:
      return { name: c.name, ok: false, why: `unknown check ${JSON.stringify(check)}` };
  }
}

export const adapter: SuiteAdapter = {
  name: 'config',
  accepts: (_file, doc) => !!doc && typeof doc === 'object' && 'check' in doc,
  run(doc: { check: string; cases?: Case[] }) {
    return (doc.cases ?? []).map((c) => {
      try {
        return runCase(doc.check, c);
      } catch (err) {
        return { name: c.name, ok: false, why: `crashed: ${(err as Error).stack}` };
      }
    });
  },
};
