/**
 * What the running components report (their ConfigurationStates: `controller`, `speaker-<node>`),
 * next to what the snapshot's configuration makes each of them do, through the CLI: `explain`
 * (`configuration.reported`, the `Reported` line, `configuration-state-disagrees` findings) and
 * `validate` (`reported`, warnings), on the differential file where only node-a's speaker rejects
 * the configuration. The ConfigurationStates are written as MetalLB's (and metallb-ts's) speaker
 * writes them: labels, condition, `result`, `errorSummary` = `configuration error: <error>`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { runCliAsync } from '../helpers/cli.ts';
import { referencePath } from '../helpers/reference.ts';
import type { KubeObject } from '../../src/core/kube.ts';

/** The gap file's cluster: node-a's speaker rejects (a LOCAL_PREF conflict of advertisements selecting node-a only), node-b's accepts. */
function gap(): KubeObject[] {
  const doc = parse(readFileSync(referencePath('differential', 'speaker-gap-config-rejected-on-some-speakers.yaml'), 'utf8'));
  return (doc.cases[0].resources as KubeObject[]).map((r) => (r.kind === 'Service' ? { ...r, spec: { clusterIP: '10.96.0.10', ...(r as any).spec } } : r));
}

const NODE_A_ERROR =
  'metallb-system/BGPAdvertisement/bgp-2: invalid local preference 200 for pool "pool-0": local preference 100 was already set by BGPAdvertisement "bgp-1" for the same type of BGP update (common pool, aggregation lengths, peers and nodes)';

/** A ConfigurationState as the component writes it (`result` Valid/Invalid/Unknown; `error` becomes the condition and errorSummary). */
function state(component: 'controller' | string, result: 'Valid' | 'Invalid' | 'Unknown' | null, error?: string): KubeObject {
  const speaker = component !== 'controller';
  const type = speaker ? 'configReconcilerValid' : 'poolReconcilerValid';
  const condition =
    result === 'Invalid'
      ? { type, status: 'False', reason: 'ConfigurationError', message: `configuration error: ${error}`, lastTransitionTime: '2025-03-01T10:00:00Z' }
      : { type, status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: '2025-03-01T10:00:00Z' };
  return {
    apiVersion: 'metallb.io/v1beta1',
    kind: 'ConfigurationState',
    metadata: {
      name: speaker ? `speaker-${component}` : 'controller',
      namespace: 'metallb-system',
      labels: speaker ? { 'metallb.io/component-type': 'speaker', 'metallb.io/node-name': component } : { 'metallb.io/component-type': 'controller' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: speaker ? `speaker-${component}-x1` : 'controller-7d9f', uid: 'u', controller: true }],
    },
    ...(result === null ? {} : { status: { conditions: [condition], result, ...(result === 'Invalid' ? { errorSummary: `configuration error: ${error}` } : {}) } }),
  };
}

interface Case {
  name: string;
  states: KubeObject[];
  /** agreement per ConfigurationState name. */
  agreement: Record<string, string>;
  /** `configuration-state-disagrees` findings of explain: a pattern each. */
  disagreements: RegExp[];
  /** the Reported line of explain. */
  reportedLine: RegExp;
  /** a pattern the config-rejected-on-nodes finding must match. */
  rejectedFinding?: RegExp;
}

const cases: Case[] = [
  {
    name: 'every component reports what the snapshot gives',
    states: [state('controller', 'Valid'), state('node-a', 'Invalid', NODE_A_ERROR), state('node-b', 'Valid')],
    agreement: { controller: 'agrees', 'speaker-node-a': 'agrees', 'speaker-node-b': 'agrees' },
    disagreements: [],
    reportedLine: /^Reported: +ConfigurationState controller: Valid; speaker of node-a: Invalid, with the error this snapshot gives; speaker of node-b: Valid$/m,
    rejectedFinding: /\(its ConfigurationState speaker-node-a says so too: Invalid\)/,
  },
  {
    name: 'a stale snapshot: node-a still reports Valid, node-b and the controller report errors the snapshot does not have',
    states: [
      state('controller', 'Invalid', 'metallb-system/IPAddressPool/old: invalid CIDR "10.0.0.0/33" in pool old'),
      state('node-a', 'Valid'),
      state('node-b', 'Invalid', 'metallb-system/BGPPeer/r1: missing peer address'),
    ],
    agreement: { controller: 'disagrees', 'speaker-node-a': 'disagrees', 'speaker-node-b': 'disagrees' },
    disagreements: [
      /^the controller reports Invalid: configuration error: metallb-system\/IPAddressPool\/old: invalid CIDR .*, but this snapshot's configuration is accepted there: it runs another configuration than the snapshot's/,
      /^the speaker of node-a reports Valid, but this snapshot's configuration is rejected there \(.*invalid local preference 200.*\): it has not processed this configuration yet \(the snapshot is newer than its last load, or the ConfigurationState is stale\) and runs the one it accepted last until then/,
      /^the speaker of node-b reports Invalid: configuration error: metallb-system\/BGPPeer\/r1: missing peer address, but this snapshot's configuration is accepted there/,
    ],
    reportedLine:
      /^Reported: +ConfigurationState controller: Invalid \(.*\) \[disagrees with this snapshot\]; speaker of node-a: Valid \[disagrees with this snapshot\]; speaker of node-b: Invalid \(.*missing peer address\) \[disagrees with this snapshot\]$/m,
  },
  {
    name: 'node-a rejects, but for another error than the snapshot gives',
    states: [state('controller', 'Valid'), state('node-a', 'Invalid', 'metallb-system/BGPPeer/r9: invalid hold time "1s"'), state('node-b', 'Valid')],
    agreement: { controller: 'agrees', 'speaker-node-a': 'otherError', 'speaker-node-b': 'agrees' },
    disagreements: [
      /^the speaker of node-a reports Invalid: configuration error: metallb-system\/BGPPeer\/r9: invalid hold time "1s", but this snapshot's configuration fails there with another error \(.*invalid local preference 200.*\): it loaded another configuration than the snapshot's/,
    ],
    reportedLine: /speaker of node-a: Invalid \(configuration error: .*r9.*\) \[disagrees with this snapshot\]/,
  },
  {
    name: 'no result yet, and a speaker of a node the snapshot does not have: nothing to compare',
    states: [state('controller', null), state('node-a', 'Unknown'), state('node-gone', 'Valid')],
    agreement: { controller: 'unknown', 'speaker-node-a': 'unknown', 'speaker-node-gone': 'unknown' },
    disagreements: [],
    reportedLine: /^Reported: +ConfigurationState controller: no result yet; speaker of node-a: Unknown; speaker of node-gone: Valid \[no such Node in the snapshot\]$/m,
  },
];

const list = (items: KubeObject[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

test('explain and validate put each ConfigurationState next to what the snapshot makes the component do', { concurrency: 4 }, async (t) => {
  await Promise.all(
    cases.map((c) =>
      t.test(c.name, async () => {
        const input = list([...gap(), ...c.states]);
        const j = await runCliAsync(['explain', 'svc/web', '-o', 'json', '-f', '-'], input);
        assert.equal(j.status, 1, j.stderr);
        const e = JSON.parse(j.stdout);
        assert.deepEqual(Object.fromEntries(e.configuration.reported.map((r: any) => [r.name, r.agreement])), c.agreement);
        const a = e.configuration.reported.find((r: any) => r.name === 'speaker-node-a');
        assert.deepEqual([a.component, a.node, a.computed], ['speaker', 'node-a', 'rejected']);
        assert.match(a.computedError, /invalid local preference 200/);
        const found = e.findings.filter((f: any) => f.id === 'configuration-state-disagrees');
        assert.equal(found.length, c.disagreements.length, JSON.stringify(found));
        for (const [i, re] of c.disagreements.entries()) {
          assert.match(found[i].message, re);
          assert.equal(found[i].severity, 'warning');
          assert.match(found[i].fix, /take a fresh snapshot \(metallb-ts snapshot\) or explain live/);
        }
        if (c.rejectedFinding) assert.match(e.findings.find((f: any) => f.id === 'config-rejected-on-nodes').message, c.rejectedFinding);
        // The root cause stays node-a's rejection, whatever the reports say.
        assert.equal(e.findings[0].id, 'config-rejected-on-nodes');

        const text = await runCliAsync(['explain', 'svc/web', '-f', '-'], input);
        assert.match(text.stdout, c.reportedLine);
        for (const f of found) assert.ok(text.stdout.includes(f.message), 'every disagreement reaches the text output');

        const v = await runCliAsync(['validate', '-o', 'json', '-f', '-'], input);
        assert.equal(v.status, 1);
        const report = JSON.parse(v.stdout);
        assert.deepEqual(report.reported, e.configuration.reported, 'validate compares as explain does');
        const warned = report.warnings.filter((w: any) => w.id === 'configuration-state-disagrees');
        assert.equal(warned.length, c.disagreements.length);
        for (const w of warned) assert.match(w.object, /^metallb-system\/ConfigurationState\//);
        const vt = await runCliAsync(['validate', '-f', '-'], input);
        assert.match(vt.stdout, /^ConfigurationState \(what the running components report\): controller: /m);
      }),
    ),
  );
});

test('metallb-ts snapshot keeps the ConfigurationStates, so a replay compares the same reports', async () => {
  const input = list([...gap(), state('controller', 'Valid'), state('node-a', 'Invalid', NODE_A_ERROR)]);
  const snap = await runCliAsync(['snapshot', '-o', 'json', '-f', '-'], input);
  assert.equal(snap.status, 0, snap.stderr);
  const kept = JSON.parse(snap.stdout)
    .items.filter((o: any) => o.kind === 'ConfigurationState')
    .map((o: any) => [o.metadata.name, o.status.result]);
  assert.deepEqual(kept, [
    ['controller', 'Valid'],
    ['speaker-node-a', 'Invalid'],
  ]);
  const e = JSON.parse((await runCliAsync(['explain', 'svc/web', '-o', 'json', '-f', '-'], snap.stdout)).stdout);
  assert.deepEqual(
    e.configuration.reported.map((r: any) => r.agreement),
    ['agrees', 'agrees'],
  );
});

test("ConfigurationStates outside MetalLB's namespace are not MetalLB's", async () => {
  const other = { ...state('node-b', 'Invalid', 'x'), metadata: { ...(state('node-b', 'Invalid', 'x').metadata as object), namespace: 'elsewhere' } } as KubeObject;
  const e = JSON.parse((await runCliAsync(['explain', 'svc/web', '-o', 'json', '-f', '-'], list([...gap(), other]))).stdout);
  assert.deepEqual(e.configuration.reported, []);
});
