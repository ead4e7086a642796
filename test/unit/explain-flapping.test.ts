/**
 * An unstable announcer (issue #12 item 8) on a realistic snapshot (fixtures/issue12/flapping.yaml:
 * the speaker of the hash winner OOMKilled every few minutes, the VIP moving to worker-2 and back,
 * as MetalLB's users report it): how often it moved in the time the Events cover, which speaker's
 * restarts move it, the fix; events.k8s.io/v1 Events read alike; a single failover and a stable
 * announcer report nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { diagnosticContext, explainService } from '../../src/core/explain/index.ts';
import { announcerFlapping, flappingFindings } from '../../src/core/explain/flapping.ts';
import { explainText } from '../../src/render/explain.ts';
import type { ClusterState, KubeObject, Service } from '../../src/core/kube.ts';
import { ROOT, runCliAsync } from '../helpers/cli.ts';

const FIXTURE = join(ROOT, 'test/unit/fixtures/issue12/flapping.yaml');

async function explainFixture(mutate: (s: ClusterState) => ClusterState = (s) => s) {
  const state = mutate(await loadSnapshot([FIXTURE]));
  const ctx = diagnosticContext(state);
  const service = state.services.find((s) => s.metadata?.name === 'ingress-nginx-controller')!;
  return explainService({ ...ctx, service });
}

test("flapping.yaml: moved between worker-1 and worker-2, worker-1's OOMKilled speaker named, nodeSelectors on stable nodes", async () => {
  const e = await explainFixture();
  assert.equal(e.announcer, 'worker-1');
  const f = e.flapping;
  assert.ok(f);
  assert.deepEqual(f.nodes, ['worker-1', 'worker-2']);
  assert.equal(f.moves, 2, 'the timeline worker-1 09:02, worker-2 09:10 … 10:31, worker-1 10:40');
  assert.equal(f.announcements, 15);
  assert.equal(f.movesAtMost, 14);
  assert.equal(f.from, '2026-11-30T09:02:41.000Z');
  assert.equal(f.to, '2026-11-30T10:40:15.000Z');
  assert.equal(f.windowMs, (97 * 60 + 34) * 1000); // 09:02:41 → 10:40:15
  assert.deepEqual(f.cause, { pod: 'metallb-system/speaker-7xk2p', node: 'worker-1', restarts: 14, lastReason: 'OOMKilled', lastFinishedAt: '2026-11-30T10:40:09Z' });
  const finding = e.findings.find((x) => x.id === 'unstable-announcer');
  assert.ok(finding);
  assert.equal(finding.severity, 'warning');
  assert.equal(finding.message, "moved 2–14 times between worker-1, worker-2 in 98 min of events: worker-1's speaker restarted 14 times (last OOMKilled), each restart moves it away and back");
  assert.match(finding.fix, /^give L2Advertisement lan-l2 nodeSelectors that pick stable nodes \(e\.g\. worker-2\)/);
  assert.match(finding.fix, /kubectl -n metallb-system describe pod speaker-7xk2p \(OOMKilled: raise its memory limit\)$/);
  const text = explainText(e, false).split('\n');
  assert.ok(
    text.slice(0, 6).some((l) => l.startsWith('Warning:      unstable-announcer: moved 2–14 times')),
    text.slice(0, 6).join('\n'),
  );
});

test('flapping through the CLI: the warning in the first lines, `flapping` in -o json', async () => {
  const r = await runCliAsync(['explain', '-f', FIXTURE, '-n', 'ingress-nginx', 'svc/ingress-nginx-controller']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout.split('\n').slice(0, 5).join('\n'), /^Warning: +unstable-announcer: moved 2–14 times between worker-1, worker-2/m);
  const j = await runCliAsync(['explain', '-f', FIXTURE, '-n', 'ingress-nginx', 'svc/ingress-nginx-controller', '-o', 'json']);
  const e = JSON.parse(j.stdout);
  assert.equal(e.flapping.cause.pod, 'metallb-system/speaker-7xk2p');
  assert.equal(e.flapping.moves, 2);
});

/** The fixture's core/v1 Events rewritten as `kubectl get events.events.k8s.io -o yaml` shows them. */
function asEventsV1(s: ClusterState): ClusterState {
  const events = (s.events as KubeObject[]).map((e: any) => ({
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: e.metadata,
    regarding: e.involvedObject,
    reason: e.reason,
    note: e.message,
    type: e.type,
    reportingController: 'metallb-speaker',
    deprecatedCount: e.count,
    deprecatedFirstTimestamp: e.firstTimestamp,
    deprecatedLastTimestamp: e.lastTimestamp,
    eventTime: null,
  }));
  return { ...s, events: events as ClusterState['events'] };
}

test('events.k8s.io/v1 Events (regarding, note, deprecated*) give the same answer', async () => {
  const e = await explainFixture(asEventsV1);
  assert.equal(e.flapping?.moves, 2);
  assert.equal(e.flapping?.announcements, 15);
  assert.equal(e.flapping?.cause?.node, 'worker-1');
});

test("not unstable: one failover, one node, another Service's or an older Service's events", async () => {
  const svc: Service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default', uid: 'u2' } };
  const ev = (node: string, first: string, last: string, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `web.${node}`, namespace: 'default' },
    involvedObject: { kind: 'Service', name: 'web', namespace: 'default', uid: 'u2' },
    reason: 'nodeAssigned',
    message: `announcing from node "${node}" with protocol "layer2"`,
    count: 1,
    firstTimestamp: first,
    lastTimestamp: last,
    ...extra,
  });
  const state = (events: unknown[]) => ({ events, pods: [] }) as unknown as Pick<ClusterState, 'events' | 'pods'>;
  assert.equal(announcerFlapping(state([ev('a', '2026-11-30T09:00:00Z', '2026-11-30T09:00:00Z'), ev('b', '2026-11-30T09:30:00Z', '2026-11-30T09:30:00Z')]), svc, []), null, 'a → b: one failover');
  assert.equal(announcerFlapping(state([ev('a', '2026-11-30T09:00:00Z', '2026-11-30T10:00:00Z', { count: 9 })]), svc, []), null, 'one node');
  const back = [ev('a', '2026-11-30T09:00:00Z', '2026-11-30T09:40:00Z', { count: 2 }), ev('b', '2026-11-30T09:30:00Z', '2026-11-30T09:30:00Z')];
  assert.equal(announcerFlapping(state(back), svc, [])?.moves, 2, 'a → b → a');
  assert.equal(announcerFlapping(state(back.map((e) => ({ ...e, involvedObject: { ...e.involvedObject, uid: 'old' } }))), svc, []), null, 'an earlier Service of the same name');
  assert.equal(announcerFlapping(state(back.map((e) => ({ ...e, message: e.message.replace('layer2', 'bgp') }))), svc, []), null, 'BGP: every node announces, no move');
  assert.deepEqual(flappingFindings(null, [], 'metallb-system'), []);
});

test("which speaker's restarts move it: the one ranking first in the hash order", () => {
  const svc: Service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' } };
  const ev = (node: string, first: string, last: string) => ({
    kind: 'Event',
    metadata: { namespace: 'default' },
    involvedObject: { kind: 'Service', name: 'web', namespace: 'default' },
    reason: 'nodeAssigned',
    message: `announcing from node "${node}" with protocol "layer2"`,
    count: 3,
    firstTimestamp: first,
    lastTimestamp: last,
  });
  const pod = (node: string, restarts: number) => ({
    kind: 'Pod',
    metadata: { name: `speaker-${node}`, namespace: 'metallb-system', labels: { 'app.kubernetes.io/component': 'speaker' } },
    spec: { nodeName: node },
    status: { containerStatuses: [{ name: 'speaker', restartCount: restarts, lastState: { terminated: { reason: 'Error', finishedAt: '2026-11-30T10:00:00Z' } } }] },
  });
  const st = { events: [ev('a', '2026-11-30T09:00:00Z', '2026-11-30T10:00:00Z'), ev('b', '2026-11-30T09:10:00Z', '2026-11-30T09:50:00Z')], pods: [pod('a', 2), pod('b', 9), pod('c', 30)] } as unknown as Pick<
    ClusterState,
    'events' | 'pods'
  >;
  const f = announcerFlapping(st, svc, ['a', 'b', 'c'])!;
  assert.equal(f.cause?.node, 'a', 'a is first in the hash order: its restarts move the announcement');
  assert.deepEqual(
    f.restarts.map((r) => r.node),
    ['b', 'a'],
    'only nodes it moved through, most restarts first',
  );
  assert.equal(announcerFlapping(st, svc, ['b', 'a'])!.cause?.node, 'b');
  const [finding] = flappingFindings(f, ['l2'], 'metallb-system');
  assert.match(finding!.message, /: a's speaker restarted 2 times \(last Error\), each restart moves it away and back; also restarting: b \(9\)$/);
});
