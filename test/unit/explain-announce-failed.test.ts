/**
 * `announce-failed` (issue #12, speaker parity): the elected node's speaker recorded MetalLB's
 * announceFailed Event — none of the interfaces the L2Advertisement names exists on that node —
 * so nothing answers ARP for the address although the Service shows it. Fixture: a user's report
 * (interfaces: [enp1s0] on nodes that call it ens18).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { diagnosticContext, explainService } from '../../src/core/explain/index.ts';
import { explainText } from '../../src/render/explain.ts';
import type { ClusterState } from '../../src/core/kube.ts';
import { ROOT, runCliAsync } from '../helpers/cli.ts';

const FIXTURE = join(ROOT, 'test/unit/fixtures/issue12/announce-failed.yaml');

async function explainFixture(mutate: (s: ClusterState) => ClusterState = (s) => s) {
  const state = mutate(await loadSnapshot([FIXTURE]));
  const ctx = diagnosticContext(state);
  const service = state.services.find((s) => s.metadata?.name === 'traefik')!;
  return explainService({ ...ctx, service });
}

test('announce-failed.yaml: the error names the node, the interfaces and the L2Advertisement to fix, first', async () => {
  const e = await explainFixture();
  assert.equal(e.announcer, 'worker-1');
  const f = e.findings.find((x) => x.id === 'announce-failed');
  assert.ok(f);
  assert.equal(f.severity, 'error');
  assert.equal(
    f.message,
    'the speaker on worker-1, which the election picks, reports announceFailed (2026-11-30T09:41:55Z): none of the interfaces its L2Advertisements name (enp1s0) exists on that node, so nothing answers ARP/NDP for the address',
  );
  assert.equal(f.fix, "add worker-1's interface to spec.interfaces of L2Advertisement metallb-system/lan-l2, or restrict its nodeSelectors to nodes that have enp1s0");
  const text = explainText(e, false).split('\n');
  assert.equal(text[1], 'Verdict:      elected worker-1 over layer2 but its speaker answers on no interface (announceFailed): 192.168.10.240');
  assert.match(text[2]!, /^Why: +the speaker on worker-1, which the election picks, reports announceFailed/);
});

test('announceFailed from a node that no longer announces, or for an earlier Service of that name, is not reported', async () => {
  const moved = await explainFixture((s) => ({ ...s, events: s.events.map((ev) => (ev.reason === 'announceFailed' ? { ...ev, message: ev.message!.replace('"worker-1"', '"worker-3"') } : ev)) }));
  assert.equal(
    moved.findings.find((x) => x.id === 'announce-failed'),
    undefined,
  );
  const earlier = await explainFixture((s) => ({ ...s, events: s.events.map((ev) => (ev.reason === 'announceFailed' ? { ...ev, involvedObject: { ...ev.involvedObject, uid: 'another-uid' } } : ev)) }));
  assert.equal(
    earlier.findings.find((x) => x.id === 'announce-failed'),
    undefined,
  );
  const none = await explainFixture((s) => ({ ...s, events: s.events.filter((ev) => ev.reason !== 'announceFailed') }));
  assert.equal(
    none.findings.find((x) => x.id === 'announce-failed'),
    undefined,
  );
  assert.match(explainText(none, false).split('\n')[1]!, /^Verdict: +announced by worker-1 over layer2: 192\.168\.10\.240$/);
});

test('announce-failed through the CLI: in the first lines, and in -o json', async () => {
  const r = await runCliAsync(['explain', '-f', FIXTURE, '-n', 'traefik', 'svc/traefik']);
  assert.match(r.stdout.split('\n').slice(0, 4).join('\n'), /^Fix: +add worker-1's interface to spec\.interfaces of L2Advertisement metallb-system\/lan-l2/m, r.stderr);
  const j = await runCliAsync(['explain', '-f', FIXTURE, '-n', 'traefik', 'svc/traefik', '-o', 'json']);
  const e = JSON.parse(j.stdout);
  assert.ok(e.findings.some((x: { id: string }) => x.id === 'announce-failed'));
});
