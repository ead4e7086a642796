/**
 * More than 63 communities on a BGP advertisement (KNOWN.md K5), as MetalLB v0.16.1 handles it:
 * the limit is checked only by the frr-k8s session (`session.Set` → `validate`), so
 *  (a) with a session on the node the BGP handler's SetBalancer fails and the speaker's
 *      SetBalancer returns before layer2: the node announces the Service over neither;
 *  (b) without a session nothing checks it and the Service counts as announced over BGP.
 * The clusters are the differential test's minimized ones (test/differential/found/).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { clusterStateFromObjects, type ClusterState } from '../../src/core/kube.ts';
import { communityLimitError, type BGPRoute } from '../../src/core/bgp/routes.ts';
import { speakerDryRun } from '../../src/speaker/dry-run.ts';
import { ROOT, runCliAsync } from '../helpers/cli.ts';

const FOUND = `${ROOT}test/differential/found`;
const layer2Skipped = `${FOUND}/speaker-too-many-communities-layer2-skipped.yaml`;
const noSession = `${FOUND}/speaker-too-many-communities-no-session.yaml`;

function stateOf(file: string): ClusterState {
  return clusterStateFromObjects((parse(readFileSync(file, 'utf8')) as { items: never[] }).items);
}

const route = (communities: number, peers: string[]): BGPRoute => ({
  prefix: '10.0.1.1/32',
  family: 'ipv4',
  localPref: 0,
  peers,
  communities: Array.from({ length: communities }, (_, i) => `65000:${i}`),
});

test("communityLimitError: only a route with more than 63 communities that reaches a session fails, with MetalLB's text", () => {
  assert.equal(communityLimitError([route(63, ['p'])]), null);
  assert.equal(communityLimitError([route(64, [])]), null, 'no session gets it: never checked');
  const e = communityLimitError([route(1, ['p']), route(64, ['p'])]);
  assert.equal(e?.message, 'max supported communities is 63, got 64');
  assert.equal(e?.route.communities.length, 64);
});

test('speaker with a session: BGP fails and layer2 is not handled (the elected node does not announce)', async () => {
  const r = await speakerDryRun(stateOf(layer2Skipped), { node: 'n3' });
  const svc = r.services.find((s) => s.service === 'default/svc-1');
  assert.deepEqual(svc, { service: 'default/svc-1', bgp: 'syncError', layer2: 'syncError', peers: [] });
  assert.equal(r.serviceL2Statuses.length, 0, 'no ServiceL2Status: nothing announced over layer2');
  assert.equal(r.events.filter((e) => e.reason === 'nodeAssigned').length, 0);
});

test('speaker without a session: nothing checks the limit, the Service counts as announced over BGP and layer2', async () => {
  const r = await speakerDryRun(stateOf(noSession), { node: 'n3' });
  const svc = r.services.find((s) => s.service === 'default/svc-1');
  assert.deepEqual(svc, { service: 'default/svc-1', bgp: 'announce', layer2: 'announce', peers: [] });
});

test('explain says the elected node announces the Service over neither protocol, and why', async () => {
  const run = await runCliAsync(['explain', 'default/svc-1', '-o', 'json', '-f', layer2Skipped]);
  const e = JSON.parse(run.stdout) as {
    announcer: string | null;
    bgpAnnouncers: string[];
    nodes: Array<{ node: string; decision: string; detail: string }>;
    findings: Array<{ id: string; severity: string; message: string }>;
  };
  assert.equal(e.announcer, null);
  assert.deepEqual(e.bgpAnnouncers, []);
  assert.equal(e.nodes[0]?.decision, 'syncError');
  const f = e.findings.find((x) => x.id === 'bgp-too-many-communities');
  assert.equal(f?.severity, 'error');
  assert.match(f!.message, /64 communities.*at most 63.*max supported communities is 63, got 64.*neither over BGP nor over layer2/);
  assert.notEqual(run.status, 0, 'not announced: explain exits non-zero');

  const ok = JSON.parse((await runCliAsync(['explain', 'default/svc-1', '-o', 'json', '-f', noSession])).stdout) as typeof e;
  assert.equal(ok.announcer, 'n3');
  assert.equal(
    ok.findings.some((x) => x.id === 'bgp-too-many-communities'),
    false,
  );
});
