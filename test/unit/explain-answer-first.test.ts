/**
 * `explain` answers first: line 2 the verdict, line 3 the root cause (the most severe finding, never
 * the symptom when a finding knows the cause), line 4 its fix; then the detail. Identical per-node
 * rows are grouped and long lists cut in the text (complete with `-o wide` and in JSON), so a
 * healthy Service on a 500-node cluster fits one screen; every reason the JSON carries reaches the
 * text. Snapshots: the bundled example clusters, the differential file, and a generated 500-node
 * cluster with cloud-style node names (`ip-10-0-1-7.eu-west-1.compute.internal`).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { referencePath } from '../helpers/reference.ts';

const EXAMPLE = join(ROOT, 'examples/cluster.yaml');
const CP_ONLY = join(ROOT, 'examples/cluster-cp-only.yaml');
const NIL = referencePath('differential', 'controller-nil-ip-error-text.yaml');

interface Case {
  name: string;
  args: string[];
  exit: number;
  verdict: RegExp;
  why: RegExp;
  /** the Fix line, or null when there is none (no error finding). */
  fix: RegExp | null;
  /** must not be the Why line (the symptom a finding explains). */
  notWhy?: RegExp;
}

const cases: Case[] = [
  {
    name: 'pending: the allocation is the root cause, not the missing Nodes',
    args: ['svc/web', '-n', 'default', '-f', NIL],
    exit: 1,
    verdict: /^pending: the controller gives it no address, so nobody announces it$/,
    why: /^MetalLB reports: \["<nil>"\] is not allowed in config\. It means: pool v6only/,
    fix: /^add an IPv4 range to pool v6only/,
    notWhy: /no speaker runs|no Node object/,
  },
  {
    name: 'the exclusion-label trap: the trap, not "no candidate left"',
    args: ['svc/frontend', '-n', 'shop', '-f', CP_ONLY],
    exit: 1,
    verdict: /^nobody announces 192\.0\.2\.10$/,
    why: /^the nodeSelectors of lab-l2 select only lab-cp-1, lab-cp-2, lab-cp-3, and every one of them carries node\.kubernetes\.io\/exclude-from-external-load-balancers/,
    fix: /^select nodes without that label/,
    notWhy: /no candidate left/,
  },
  {
    name: 'no ready endpoint: the endpoints, not "notOwner"',
    args: ['svc/ingest-udp', '-n', 'ingest', '-f', EXAMPLE],
    exit: 1,
    verdict: /^nobody announces 192\.0\.2\.40$/,
    why: /^the Service has no ready or serving endpoint, so no speaker announces it \(every node: notOwner\): both of its endpoints \(on lab-worker-a, lab-worker-b\) are neither ready nor serving$/,
    fix: /^find why the pods are not ready \(kubectl get pods -n ingest -l app\.kubernetes\.io\/name=ingest-udp -o wide; kubectl describe pod shows the failing readiness probe\)$/,
  },
  {
    name: 'healthy: the winner and why, no fix',
    args: ['svc/frontend', '-n', 'shop', '-f', EXAMPLE],
    exit: 0,
    verdict: /^announced by lab-worker-b over layer2: 192\.0\.2\.10$/,
    why: /^lab-worker-b announces 192\.0\.2\.10: first of 2 candidates in the hash order of 192\.0\.2\.10$/,
    fix: null,
  },
];

/** `Label:       value` → value, for the first lines of the text output. */
function fields(text: string): Array<[string, string]> {
  return text
    .split('\n')
    .map((l) => /^([A-Za-z ]*):? +(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1]!.replace(/:$/, ''), m[2]!]);
}

test('explain: verdict, root cause and fix on the first lines', { concurrency: 4 }, async (t) => {
  await Promise.all(
    cases.map((c) =>
      t.test(c.name, async () => {
        const r = await runCliAsync(['explain', ...c.args]);
        assert.equal(r.status, c.exit, r.stderr);
        const lines = r.stdout.split('\n');
        assert.match(lines[0]!, /^Service: /);
        const [verdict, why, fix] = [lines[1]!, lines[2]!, lines[3]!];
        assert.match(verdict, /^Verdict: +/);
        assert.match(verdict.replace(/^Verdict: +/, ''), c.verdict);
        assert.match(why, /^Why: +/);
        assert.match(why.replace(/^Why: +/, ''), c.why);
        if (c.notWhy) assert.doesNotMatch(why, c.notWhy);
        if (c.fix) assert.match(fix.replace(/^Fix: +/, ''), c.fix);
        else assert.ok(!fields(r.stdout).some(([k]) => k === 'Fix'), 'no error finding: no Fix line');
        // The JSON's first finding is the one the text names.
        const e = JSON.parse((await runCliAsync(['explain', ...c.args, '-o', 'json'])).stdout);
        const first = e.findings.find((f: any) => f.severity === 'error');
        if (first) assert.equal(why.replace(/^Why: +/, ''), first.message);
      }),
    ),
  );
});

/** A 500-node cluster as `kubectl get -o json` dumps it: cloud-style node names, speaker pods, ConfigurationStates, Services with endpoints. */
function bigCluster(opts: { trap: boolean }): string {
  const items: unknown[] = [];
  const names: string[] = [];
  for (let i = 0; i < 500; i++) {
    const name = `ip-10-0-${i >> 8}-${i & 255}.eu-west-1.compute.internal`;
    names.push(name);
    const cp = i < 3;
    const labels: Record<string, string> = { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'topology.kubernetes.io/zone': `eu-west-1${'abc'[i % 3]}` };
    if (cp) Object.assign(labels, { 'node-role.kubernetes.io/control-plane': '', 'node.kubernetes.io/exclude-from-external-load-balancers': '' });
    items.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels, uid: `n${i}` },
      status: {
        addresses: [{ type: 'InternalIP', address: `10.0.${i >> 8}.${i & 255}` }],
        conditions: [
          { type: 'NetworkUnavailable', status: 'False' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
    items.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `speaker-${i.toString(36)}`, namespace: 'metallb-system', labels: { app: 'metallb', component: 'speaker' } },
      spec: { nodeName: name },
      status: { phase: 'Running', podIP: `10.0.${i >> 8}.${i & 255}`, conditions: [{ type: 'Ready', status: 'True' }] },
    });
    items.push({
      apiVersion: 'metallb.io/v1beta1',
      kind: 'ConfigurationState',
      metadata: { name: `speaker-${name}`, namespace: 'metallb-system', labels: { 'metallb.io/component-type': 'speaker', 'metallb.io/node-name': name } },
      status: { result: 'Valid', conditions: [{ type: 'configReconcilerValid', status: 'True', reason: 'Reconciled', message: '' }] },
    });
  }
  items.push({
    apiVersion: 'metallb.io/v1beta1',
    kind: 'ConfigurationState',
    metadata: { name: 'controller', namespace: 'metallb-system', labels: { 'metallb.io/component-type': 'controller' } },
    status: { result: 'Valid' },
  });
  items.push({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'public', namespace: 'metallb-system' }, spec: { addresses: ['198.51.100.0/24'] } });
  items.push({
    apiVersion: 'metallb.io/v1beta1',
    kind: 'L2Advertisement',
    metadata: { name: opts.trap ? 'control-plane' : 'workers', namespace: 'metallb-system' },
    spec: {
      ipAddressPools: ['public'],
      nodeSelectors: [
        opts.trap
          ? { matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] }
          : { matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'DoesNotExist' }] },
      ],
    },
  });
  for (let s = 0; s < 20; s++) {
    const name = `web-${s}`;
    items.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'shop', creationTimestamp: '2025-03-01T10:00:00Z' },
      spec: {
        type: 'LoadBalancer',
        clusterIP: `10.96.1.${s}`,
        clusterIPs: [`10.96.1.${s}`],
        ipFamilies: ['IPv4'],
        ipFamilyPolicy: 'SingleStack',
        externalTrafficPolicy: s % 2 ? 'Local' : 'Cluster',
        selector: { app: name },
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080, nodePort: 30000 + s }],
      },
      status: { loadBalancer: { ingress: [{ ip: `198.51.100.${s + 1}`, ipMode: 'VIP' }] } },
    });
    items.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      addressType: 'IPv4',
      metadata: { name: `${name}-x7k2p`, namespace: 'shop', labels: { 'kubernetes.io/service-name': name } },
      endpoints: [0, 1, 2].map((k) => ({ addresses: [`10.244.${k}.${s}`], nodeName: names[(s * 37 + k * 101) % 500], conditions: { ready: true, serving: true, terminating: false } })),
    });
  }
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-answer-first-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('500 nodes: a healthy Service fits one screen (40 lines, none over 200 characters); -o wide and JSON stay complete', async () => {
  const file = join(dir, 'healthy.json');
  writeFileSync(file, bigCluster({ trap: false }));
  for (const target of ['svc/web-0', 'svc/web-1']) {
    // externalTrafficPolicy Cluster, then Local
    const r = await runCliAsync(['explain', target, '-n', 'shop', '-f', file]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.ok(lines.length <= 40, `${target}: ${lines.length} lines:\n${r.stdout}`);
    for (const l of lines) assert.ok(l.length <= 200, `${target}: a line of ${l.length} characters: ${l}`);
    assert.match(r.stdout, /^Reported: +ConfigurationState controller: Valid; speakers of every node \(500\): Valid$/m);
    assert.match(r.stdout, /^ip-10-0-0-\d+\.eu-west-1\.compute\.internal and 4\d\d more +notOwner /m, 'the notOwner rows grouped, the list cut');
    assert.match(r.stdout, /Hash order \(sha256 of node#ip, first wins\): .* and \d+ more \(-o wide shows every one\)$/m);

    const wide = await runCliAsync(['explain', target, '-n', 'shop', '-o', 'wide', '-f', file]);
    const nodesListed = new Set(wide.stdout.match(/ip-10-0-\d+-\d+\.eu-west-1\.compute\.internal/g));
    assert.equal(nodesListed.size, 500, '-o wide names every node');
    const e = JSON.parse((await runCliAsync(['explain', target, '-n', 'shop', '-o', 'json', '-f', file])).stdout);
    assert.equal(e.nodes.length, 500, 'JSON: one entry per node');
    assert.equal(e.configuration.reported.length, 501);
  }
});

test('500 nodes, the exclusion-label trap: named within the first 8 lines', async () => {
  const file = join(dir, 'trap.json');
  writeFileSync(file, bigCluster({ trap: true }));
  const r = await runCliAsync(['explain', 'svc/web-0', '-n', 'shop', '-f', file]);
  assert.equal(r.status, 1, r.stderr);
  const head = r.stdout.split('\n').slice(0, 8).join('\n');
  assert.match(
    head,
    /^Why: +the nodeSelectors of control-plane select only ip-10-0-0-0\.eu-west-1\.compute\.internal, ip-10-0-0-1\.eu-west-1\.compute\.internal, ip-10-0-0-2\.eu-west-1\.compute\.internal, and every one of them carries node\.kubernetes\.io\/exclude-from-external-load-balancers/m,
  );
  assert.match(head, /^Fix: +select nodes without that label/m);
  assert.ok(r.stdout.trimEnd().split('\n').length <= 40);
});

test('every reason -o json carries reaches the text output', { concurrency: 4 }, async (t) => {
  const targets: Array<[string, string[]]> = [
    ['nil', ['svc/web', '-n', 'default', '-f', NIL]],
    ['cp-only', ['svc/frontend', '-n', 'shop', '-f', CP_ONLY]],
    ['no endpoints', ['svc/ingest-udp', '-n', 'ingest', '-f', EXAMPLE]],
    ['flip', ['svc/web', '-n', 'default', '-f', referencePath('differential', 'controller-prefer-dual-single-clusterip-second-pass.yaml')]],
  ];
  await Promise.all(
    targets.map(([name, args]) =>
      t.test(name, async () => {
        const e = JSON.parse((await runCliAsync(['explain', ...args, '-o', 'json'])).stdout);
        const text = (await runCliAsync(['explain', ...args])).stdout;
        const reasons = [
          ...e.findings.flatMap((f: any) => [f.message, f.fix]),
          ...(e.allocation.reason ? [e.allocation.reason] : []),
          ...(e.allocation.dryRun?.events ?? []).map((x: any) => x.message),
          ...e.configuration.speakers.map((g: any) => g.error).filter(Boolean),
          ...e.nodes.map((n: any) => n.detail),
          ...(e.l2?.checks ?? []).map((c: any) => c.detail),
        ];
        for (const reason of reasons) assert.ok(text.includes(reason), `not in the text: ${reason}`);
      }),
    ),
  );
});
