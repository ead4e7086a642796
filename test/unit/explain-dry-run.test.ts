/**
 * What the controller's dry run knows beyond an address, in `allocate --dry-run` and `explain`:
 * Services MetalLB never settles on (`oscillates`), the events with their counts, a run stopped at
 * its pass limit (`passLimitReached`), and the other pools MetalLB could have chosen (Go map order).
 * On the differential file where MetalLB's controller reprocesses and never settles, and on
 * snapshots shaped as `kubectl get -o yaml` prints them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCliAsync } from '../helpers/cli.ts';
import { referencePath } from '../helpers/reference.ts';
import { allocateDryRun } from '../../src/core/explain/allocate.ts';
import { allocateTable } from '../../src/render/allocate.ts';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { diagnosticContext, explainService } from '../../src/core/explain/index.ts';
import { allocateAll } from '../../src/core/controller/index.ts';
import { explainText } from '../../src/render/explain.ts';
import { palette } from '../../src/render/color.ts';

const FLIP = referencePath('differential', 'controller-prefer-dual-single-clusterip-second-pass.yaml');

test('allocate --dry-run: a Service MetalLB never settles on, and its events with counts (json, table, wide)', async () => {
  const j = await runCliAsync(['allocate', '--dry-run', '-o', 'json', '-f', FLIP]);
  assert.equal(j.status, 0, j.stderr);
  const r = JSON.parse(j.stdout);
  assert.equal(r.passLimitReached, undefined, 'converged: no pass limit');
  const web = r.services[0];
  assert.deepEqual(web.oscillates, [['10.0.0.0'], ['10.0.0.0', '2001:db8:1::']]);
  assert.deepEqual(
    web.events.map((e: any) => [e.reason, e.count]),
    [
      ['IPAllocated', 2],
      ['IPAllocated', 2],
    ],
  );
  const table = await runCliAsync(['allocate', '--dry-run', '-f', FLIP]);
  assert.match(table.stdout, /^default\/web +10\.0\.0\.0 +public +changed +never settles: MetalLB writes \[10\.0\.0\.0\] → \[10\.0\.0\.0, 2001:db8:1::\] → \[10\.0\.0\.0\] … forever$/m);
  const wide = await runCliAsync(['allocate', '--dry-run', '-o', 'wide', '-f', FLIP]);
  assert.match(wide.stdout, /IPAllocated \(x2\),IPAllocated \(x2\)/);
});

test('allocate --dry-run: a run stopped at its pass limit says so (json and table)', async () => {
  const state = await loadSnapshot([FLIP]);
  const cases: Array<{ maxPasses: number | undefined; limited: boolean }> = [
    { maxPasses: undefined, limited: false },
    { maxPasses: 1, limited: true }, // MetalLB needs a second pass here
  ];
  for (const c of cases) {
    const report = allocateDryRun(state, c.maxPasses === undefined ? {} : { maxPasses: c.maxPasses });
    assert.equal(report.passLimitReached, c.limited ? true : undefined, `maxPasses ${c.maxPasses}`);
    const text = allocateTable(report, false, palette(false));
    assert.equal(/^Stopped after 1 pass while a Service still asked MetalLB to reprocess every Service: MetalLB's controller keeps going/m.test(text), c.limited);
  }
});

test("explain: the flip between address lists, with MetalLB's events and counts; the fix says which field to change", async () => {
  const j = await runCliAsync(['explain', 'svc/web', '-n', 'default', '-o', 'json', '-f', FLIP]);
  const e = JSON.parse(j.stdout);
  const f = e.findings.find((x: any) => x.id === 'allocation-oscillates');
  assert.ok(f, JSON.stringify(e.findings));
  assert.match(
    f.message,
    /^MetalLB's controller never settles on this Service: it writes \[10\.0\.0\.0\] → \[10\.0\.0\.0, 2001:db8:1::\] → \[10\.0\.0\.0\] … forever\. This PreferDualStack Service has cluster IPs of one family \(IPv4\)/,
  );
  assert.match(f.message, /the dry run's events repeat: IPAllocated ×2 \(Assigned additional IP "2001:db8:1::"\)/);
  assert.match(f.fix, /^set spec\.ipFamilyPolicy: SingleStack/);
  const text = (await runCliAsync(['explain', 'svc/web', '-n', 'default', '-f', FLIP])).stdout;
  assert.match(text, /^Controller events \(dry run, as kubectl describe lists them\):\n  TYPE +REASON +COUNT +MESSAGE\n  Normal +IPAllocated +2 +Assigned additional IP "2001:db8:1::"$/m);
  assert.ok(text.includes(f.message));
});

function pool(name: string, addresses: string[]): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'metallb-system' }, spec: { addresses } };
}
function svc(name: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', creationTimestamp: '2025-03-01T10:00:00Z' },
    spec: {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.20',
      clusterIPs: ['10.96.0.20'],
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      selector: { app: name },
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      ...extra,
    },
    status: { loadBalancer: {} },
  };
}
const NODE: KubeObject = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-a', labels: { 'kubernetes.io/hostname': 'worker-a' } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
const L2: KubeObject = { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'l2', namespace: 'metallb-system' }, spec: {} };

test('explain: the other pools MetalLB could have chosen, with the address each gives, when the dry run carries them; the pass limit', () => {
  const state = clusterStateFromObjects([NODE, L2, pool('pool-b', ['10.0.2.0/30']), pool('pool-a', ['10.0.1.0/30']), svc('web')]);
  const ctx = diagnosticContext(state);
  const service = state.services[0]!;
  const plain = explainService({ ...ctx, service });
  const nd = plain.findings.find((f) => f.id === 'allocation-nondeterministic');
  assert.ok(nd, 'two generic pools: MetalLB walks them in map order');
  assert.match(nd.message, /^MetalLB may choose differently: pools pool-a, pool-b could each be chosen/);

  // The allocator's tiedChoices, as the dry run may carry them for the Service.
  const outcome = ctx.dryRun.services[0]!;
  const dryRun = { ...ctx.dryRun, services: [{ ...outcome, tiedChoices: [{ pool: 'pool-b', ips: ['10.0.2.0'] }] }] };
  const tied = explainService({ ...ctx, dryRun, service }).findings.find((f) => f.id === 'allocation-nondeterministic')!;
  assert.match(
    tied.message,
    /^MetalLB could also have chosen pool pool-b \(10\.0\.2\.0\) for this Service: it walks the eligible pools in Go map order, which is random; metallb-ts took pool pool-a \(10\.0\.1\.0\)/,
  );
  assert.ok(explainText(explainService({ ...ctx, dryRun, service }), false, palette(false)).includes(tied.message));

  const limited = { ...allocateAll(ctx.controllerConfig, state.services, { maxPasses: 1 }), passLimitReached: true as const };
  const f = explainService({ ...ctx, dryRun: limited, service }).findings.find((x) => x.id === 'allocation-pass-limit');
  assert.ok(f);
  assert.match(f.message, /^the controller's dry run stopped after 1 pass while a Service still asked MetalLB to reprocess every Service; MetalLB keeps going/);
  assert.equal(f.severity, 'warning');
});
