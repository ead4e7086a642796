import { CLI, ROOT, runCliAsync, type Run } from '../helpers/cli.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { renderTable } from '../../src/render/table.ts';
import { colorEnabled } from '../../src/render/color.ts';
import { explainServiceRef, parseServiceTarget } from '../../src/commands/explain.ts';
import { diagnostics } from '../../src/commands/options.ts';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { readFileSync } from 'node:fs';
import { parseWhoisIP } from '../../src/commands/whois.ts';
import { UserError } from '../../src/core/errors.ts';
import { referencePath } from '../helpers/reference.ts';

const BIN = join(ROOT, 'bin/metallb-ts');
const EXAMPLE = join(ROOT, 'examples/cluster.yaml');
const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-cli-'));

/** Runs the CLI (`node src/cli.ts ...`) as a subprocess, stdout not a TTY. */
function run(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Run {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    input: opts.input ?? '',
    env: { ...process.env, ...opts.env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Like run, without blocking the event loop, so cases can run side by side. */
const runAsync = runCliAsync;

function write(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

/** A user error: exit 2 (unless said otherwise), nothing on stdout, one line on stderr, no stack. */
function assertUserError(r: Run, re: RegExp, status = 2): void {
  assert.equal(r.status, status, `exit status; stderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `one line on stderr, got: ${JSON.stringify(r.stderr)}`);
  assert.ok(!/^\s+at /m.test(r.stderr), 'no stack trace');
  assert.match(lines[0]!, /^metallb-ts: /);
  assert.match(lines[0]!, re);
}

const brokenYaml = write('broken.yaml', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  labels: {x: [}\n');
const emptyYaml = write('empty.yaml', '# nothing\n---\n');
const onlyDocs = join(dir, 'docs');
mkdirSync(onlyDocs);
writeFileSync(join(onlyDocs, 'README.md'), '# hello\n');
writeFileSync(join(onlyDocs, 'notes.txt'), 'kind: Node\n');

test('bad input and usage: exit 2, one line on stderr, no stack', { concurrency: 4 }, async (t) => {
  const cases: Array<{ name: string; args: string[]; re: RegExp; input?: string }> = [
    { name: 'broken YAML names file:line', args: ['snapshot', '-f', brokenYaml], re: new RegExp(`${brokenYaml}:5: invalid YAML`) },
    { name: 'broken YAML on stdin', args: ['validate', '-f', '-'], input: 'kind: Node\n  bad: [\n', re: /<stdin>:\d+: invalid YAML/ },
    { name: 'missing file', args: ['validate', '-f', join(dir, 'missing.yaml')], re: /missing\.yaml: no such file or directory/ },
    { name: 'empty snapshot', args: ['snapshot', '-f', emptyYaml], re: /empty snapshot: no Kubernetes objects found in .*empty\.yaml/ },
    { name: 'directory with only unrelated files', args: ['snapshot', '-f', onlyDocs], re: /docs: directory has no \*\.yaml, \*\.yml or \*\.json file/ },
    { name: 'unknown -o value', args: ['explain', 'svc/x', '-o', 'xml', '-f', EXAMPLE], re: /argument 'xml' is invalid\. Allowed choices are table, wide, json, yaml/ },
    { name: 'unknown -o value for snapshot', args: ['snapshot', '-o', 'table', '-f', EXAMPLE], re: /Allowed choices are yaml, json/ },
    { name: 'unknown command', args: ['explian'], re: /unknown command 'explian' \(Did you mean explain\?\)/ },
    { name: 'unknown option', args: ['validate', '--bogus'], re: /unknown option '--bogus'/ },
    { name: 'missing argument', args: ['whois'], re: /missing required argument 'ip'/ },
    { name: 'bad --speakers', args: ['explain', 'svc/x', '--speakers', 'a,,b', '-f', EXAMPLE], re: /--speakers.*empty node name/ },
    { name: 'no -f, missing --kubeconfig', args: ['validate', '--kubeconfig', join(dir, 'missing-kubeconfig')], re: /kubeconfig .*missing-kubeconfig: no such file/ },
    { name: 'explain: bad target', args: ['explain', 'a/b/c', '-f', EXAMPLE], re: /invalid service "a\/b\/c"/ },
    { name: 'explain: unknown service', args: ['explain', 'svc/nope', '-n', 'shop', '-f', EXAMPLE], re: /service shop\/nope not found/ },
    { name: 'whois: not an IP', args: ['whois', '192.0.2', '-f', EXAMPLE], re: /invalid IP address "192\.0\.2"/ },
    { name: 'allocate without --dry-run', args: ['allocate', '-f', EXAMPLE], re: /--dry-run/ },
    { name: 'completion: unknown shell', args: ['completion', 'tcsh'], re: /value 'tcsh' is invalid for argument 'shell'\. Allowed choices are bash, zsh, fish/ },
  ];
  await Promise.all(cases.map((c) => t.test(c.name, async () => assertUserError(await runAsync(c.args, c.input), c.re))));
});

const REVIEW_BASE = write(
  'review-base.yaml',
  `apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {conditions: [{type: Ready, status: "True"}]}
---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: p1, namespace: metallb-system}
spec: {addresses: [10.0.0.0/30]}
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: l2, namespace: metallb-system}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {type: LoadBalancer, clusterIP: 10.96.0.10, ports: [{port: 80, protocol: TCP}]}
status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}
`,
);

test('malformed snapshot objects (review findings): exit 2, one line naming file:line, no stack', { concurrency: 4 }, async (t) => {
  const bombLines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: bomb, namespace: metallb-system}', 'data:', '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (const c of 'bcdefghi')
    bombLines.push(
      `  ${c}: &${c} [${Array(9)
        .fill(`*${String.fromCharCode(c.charCodeAt(0) - 1)}`)
        .join(',')}]`,
    );
  // [name, command, the extra file's text, expected message after `file:line: `]
  const cases: Array<[string, string[], string, RegExp]> = [
    ['alias bomb', ['explain', 'svc/web'], bombLines.join('\n') + '\n', /1: invalid YAML: too many aliases \(resource exhaustion\)$/],
    ['nested too deeply (YAML)', ['explain', 'svc/web'], `kind: ConfigMap\nmetadata: {name: deep}\ndata:\n  x: ${'['.repeat(20000)}\n`, /4: invalid YAML: document nested too deeply$/],
    [
      'nested too deeply (JSON)',
      ['snapshot'],
      `{"kind": "ConfigMap", "metadata": {"name": "deep"},\n"x": ${'['.repeat(200000)}${']'.repeat(200000)}}`,
      /2: document nested too deeply \(more than 10000 levels\)$/,
    ],
    [
      'ingress a map',
      ['allocate', '--dry-run'],
      'kind: Service\nmetadata: {name: weird, namespace: default}\nspec: {type: LoadBalancer, clusterIP: 10.96.0.5, ports: [{port: 80}]}\nstatus: {loadBalancer: {ingress: {ip: 10.0.0.2}}}\n',
      /1: Service default\/weird: status\.loadBalancer\.ingress: expected list, got object$/,
    ],
    [
      'ingress items',
      ['explain', 'svc/weird'],
      'kind: Service\nmetadata: {name: weird, namespace: default}\nstatus: {loadBalancer: {ingress: ["10.0.0.2", 5, null, {ip: [1]}]}}\n',
      /1: Service default\/weird: status\.loadBalancer\.ingress\[0\]: expected object, got string$/,
    ],
    [
      'ports a string',
      ['explain', 'svc/weird'],
      'kind: Service\nmetadata: {name: weird, namespace: default}\nspec: {clusterIP: 10.96.0.5, ports: "80"}\n',
      /1: Service default\/weird: spec\.ports: expected list, got string$/,
    ],
    ['ports [null]', ['allocate', '--dry-run'], 'kind: Service\nmetadata: {name: weird, namespace: default}\nspec: {ports: [null]}\n', /1: Service default\/weird: spec\.ports\[0\]: expected object, got null$/],
    [
      'clusterIPs a string',
      ['explain', 'svc/weird'],
      'kind: Service\nmetadata: {name: weird, namespace: default}\nspec: {clusterIPs: str}\n',
      /1: Service default\/weird: spec\.clusterIPs: expected list, got string$/,
    ],
    ['Node conditions a number', ['whois', '10.0.0.1'], 'kind: Node\nmetadata: {name: n2}\nstatus: {conditions: 7}\n', /1: Node n2: status\.conditions: expected list, got number$/],
    [
      'speaker Pod conditions a string',
      ['explain', 'svc/web'],
      'kind: Pod\nmetadata: {name: speaker-a, namespace: metallb-system}\nspec: {nodeName: n1}\nstatus: {conditions: str}\n',
      /1: Pod metallb-system\/speaker-a: status\.conditions: expected list, got string$/,
    ],
    [
      'EndpointSlice endpoints a number',
      ['explain', 'svc/web'],
      'kind: EndpointSlice\nmetadata: {name: e, namespace: default}\nendpoints: 7\n',
      /1: EndpointSlice default\/e: endpoints: expected list, got number$/,
    ],
    [
      'EndpointSlice endpoints [null]',
      ['explain', 'svc/web'],
      'kind: EndpointSlice\nmetadata: {name: e, namespace: default}\nendpoints: [null]\n',
      /1: EndpointSlice default\/e: endpoints\[0\]: expected object, got null$/,
    ],
    [
      'Community communities a number',
      ['allocate', '--dry-run'],
      'kind: Community\nmetadata: {name: c, namespace: metallb-system}\nspec: {communities: 7}\n',
      /1: Community metallb-system\/c: spec\.communities: expected list, got number$/,
    ],
    [
      'BGPAdvertisement aggregationLength a string',
      ['explain', 'svc/web'],
      'kind: BGPAdvertisement\nmetadata: {name: b, namespace: metallb-system}\nspec: {aggregationLength: str}\n',
      /1: BGPAdvertisement metallb-system\/b: spec\.aggregationLength: expected integer, got string$/,
    ],
    [
      'L2Advertisement ipAddressPools a number',
      ['validate'],
      'kind: L2Advertisement\nmetadata: {name: l2b, namespace: metallb-system}\nspec: {ipAddressPools: 7}\n',
      /1: L2Advertisement metallb-system\/l2b: spec\.ipAddressPools: expected list, got number$/,
    ],
    [
      'L2Advertisement ipAddressPoolSelectors a number',
      ['validate'],
      'kind: L2Advertisement\nmetadata: {name: l2b, namespace: metallb-system}\nspec: {ipAddressPoolSelectors: 7}\n',
      /1: L2Advertisement metallb-system\/l2b: spec\.ipAddressPoolSelectors: expected list, got number$/,
    ],
    [
      'ServiceL2Status interfaces a string',
      ['whois', '10.0.0.1'],
      'kind: ServiceL2Status\nmetadata: {name: s, namespace: metallb-system}\nstatus: {interfaces: str}\n',
      /1: ServiceL2Status metallb-system\/s: status\.interfaces: expected list, got string$/,
    ],
    ['metadata a string', ['snapshot', '-o', 'json'], 'apiVersion: v1\nkind: Service\nmetadata: web\n', /1: Service <unnamed>: metadata: expected object, got string$/],
    ['Service without metadata', ['allocate', '--dry-run'], 'apiVersion: v1\nkind: Service\nspec:\n  type: LoadBalancer\n', /1: Service <unnamed>: metadata\.name: expected string, got nothing$/],
    ['Node without name', ['explain', 'svc/web'], 'apiVersion: v1\nkind: Node\nmetadata:\n  labels: {a: b}\n', /1: Node <unnamed>: metadata\.name: expected string, got nothing$/],
    ['spec a string', ['explain', 'svc/weird'], 'kind: Service\nmetadata: {name: weird, namespace: default}\nspec: LoadBalancer\n', /1: Service default\/weird: spec: expected object, got string$/],
    [
      'labels a list',
      ['explain', 'svc/weird'],
      'kind: Service\nmetadata: {name: weird, namespace: default, labels: [a, b]}\n',
      /1: Service default\/weird: metadata\.labels: expected map of strings, got list$/,
    ],
  ];
  await Promise.all(
    cases.map(([name, cmd, text, re], i) =>
      t.test(name, async () => {
        const f = write(`review-${i}.${text.startsWith('{') ? 'json' : 'yaml'}`, text);
        assertUserError(await runAsync([...cmd, '-f', REVIEW_BASE, '-f', f]), new RegExp(`^metallb-ts: ${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${re.source}`));
      }),
    ),
  );
});

test('the same object twice: kept once silently when equal; the last one with one warning line when different', async () => {
  const same = await runAsync(['allocate', '--dry-run', '-f', REVIEW_BASE, '-f', REVIEW_BASE]);
  assert.equal(same.status, 0, same.stderr);
  assert.equal(same.stderr, '');
  const changed = write('review-pool.yaml', 'kind: IPAddressPool\nmetadata: {name: p1, namespace: metallb-system}\nspec: {addresses: [10.0.0.0/29]}\n');
  const r = await runAsync(['allocate', '--dry-run', '-o', 'json', '-f', REVIEW_BASE, '-f', changed]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(
    r.stderr.split('\n').filter((l) => l !== ''),
    [`metallb-ts: warning: IPAddressPool metallb-system/p1 is defined twice in the input, with different contents (${REVIEW_BASE}:6, ${changed}:1); using the last one, as kubectl apply would`],
  );
  assert.equal((JSON.parse(r.stdout) as { pools: Array<{ size: number }> }).pools[0]!.size, 8);
});

test('bin/metallb-ts runs the same CLI', () => {
  const r = spawnSync(BIN, ['snapshot', '-f', brokenYaml], { encoding: 'utf8' });
  assertUserError({ status: r.status, stdout: r.stdout, stderr: r.stderr }, /broken\.yaml:5: /);
  const v = spawnSync(BIN, ['--version'], { encoding: 'utf8' });
  assert.equal(v.status, 0);
  assert.match(v.stdout, /MetalLB v0\.16\.1/);
});

test('--help exits 0 on stdout; no command shows help and exits 2', () => {
  const h = run(['explain', '--help']);
  assert.equal(h.status, 0);
  assert.match(h.stdout, /Usage: metallb-ts explain \[options\] <service>/);
  for (const flag of ['--filename', '--namespace', '--output', '--speakers', '--ignore-exclude-lb']) assert.ok(h.stdout.includes(flag), flag);
  const none = run([]);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /Usage: metallb-ts/);
});

test('snapshot re-emits the normalized List (yaml and json), from files and stdin', () => {
  const y = run(['snapshot', '-f', EXAMPLE]);
  assert.equal(y.status, 0, y.stderr);
  const doc = parse(y.stdout) as { kind: string; items: Array<{ kind: string; metadata: Record<string, unknown> }> };
  assert.equal(doc.kind, 'List');
  assert.equal(doc.items.length, 67);
  assert.ok(doc.items.every((i) => i.metadata['managedFields'] === undefined));
  const j = run(['snapshot', '-f', '-', '-o', 'json'], { input: y.stdout });
  assert.equal(j.status, 0, j.stderr);
  assert.deepEqual(JSON.parse(j.stdout), doc, 'dump → load → dump is stable');
});

test('validate: exit 0 on a valid config, 1 on errors, --strict also on warnings; json schema', () => {
  const ok = run(['validate', '-f', EXAMPLE]);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.stdout, 'No errors or warnings.\n');
  assert.deepEqual(JSON.parse(run(['validate', '-f', EXAMPLE, '-o', 'json']).stdout), { errors: [], warnings: [], reported: [] });

  const warnOnly = write(
    'warn.yaml',
    `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: lonely, namespace: metallb-system}
spec: {addresses: [192.0.2.0/28]}
`,
  );
  const w = run(['validate', '-f', warnOnly]);
  assert.equal(w.status, 0, w.stderr);
  assert.match(w.stdout, /^SEVERITY\s+OBJECT\s+MESSAGE\s+REJECTED-BY\nwarning\s+metallb-system\/IPAddressPool\/lonely\s+/);
  assert.equal(run(['validate', '--strict', '-f', warnOnly]).status, 1);

  const bad = write(
    'bad.yaml',
    `${readFileHead(warnOnly)}---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: broken, namespace: metallb-system}
spec: {addresses: [not-an-ip]}
`,
  );
  const e = run(['validate', '-f', bad, '-o', 'json']);
  assert.equal(e.status, 1);
  assert.equal(e.stderr, '');
  const report = JSON.parse(e.stdout) as { errors: Array<Record<string, string>>; warnings: unknown[] };
  assert.equal(report.errors.length, 1);
  assert.equal(report.errors[0]!['object'], 'metallb-system/IPAddressPool/broken');
  assert.equal(report.errors[0]!['source'], `${bad}:6`);
  assert.ok(!report.errors[0]!['message']!.startsWith('metallb-system/'), 'message without the object prefix');
  const wide = run(['validate', '-f', bad, '-o', 'wide']);
  assert.match(wide.stdout.split('\n')[0]!, /^SEVERITY\s+OBJECT\s+MESSAGE\s+REJECTED-BY\s+FIX\s+SOURCE$/);
  assert.deepEqual(report.errors[0]!['rejectedBy'], { controller: true, speakers: null }, 'a broken pool stops the controller (no Node: speakers unknown)');
  assert.match(wide.stdout, /the controller and the speakers \(no Node in the snapshot to tell which\)/);
  const y = parse(run(['validate', '-f', bad, '-o', 'yaml']).stdout) as { errors: unknown[] };
  assert.equal(y.errors.length, 1);
});

test('allocate --dry-run: every example service keeps its IP; pending services exit 1', () => {
  const r = run(['allocate', '--dry-run', '-f', EXAMPLE]);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.match(lines[0]!, /^SERVICE\s+EXTERNAL-IP\s+POOL\s+CHANGE\s+MESSAGE$/);
  assert.match(r.stdout, /^shop\/frontend\s+192\.0\.2\.10\s+lab-pool\s+unchanged\s+<none>$/m);
  assert.match(r.stdout, /^lab-pool\s+51\s+11\s+40\s+0$/m);
  const j = JSON.parse(run(['allocate', '--dry-run', '-n', 'ingest', '-f', EXAMPLE, '-o', 'json']).stdout) as {
    services: Array<{ service: string; ips: string[]; change: string }>;
    pools: Array<{ name: string }>;
  };
  assert.deepEqual(
    j.services.map((s) => [s.service, s.ips.join(), s.change]),
    [
      ['ingest/admin-console', '192.0.2.40', 'unchanged'],
      ['ingest/ingest-tcp', '192.0.2.40', 'unchanged'],
      ['ingest/ingest-udp', '192.0.2.40', 'unchanged'],
      ['ingest/metrics-relay', '192.0.2.40', 'unchanged'],
    ],
  );
  assert.deepEqual(
    j.pools.map((p) => p.name),
    ['lab-pool'],
  );

  const tiny = write(
    'tiny.yaml',
    `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: tiny, namespace: metallb-system}
spec: {addresses: [192.0.2.1/32]}
---
apiVersion: v1
kind: Service
metadata: {name: a, namespace: x, creationTimestamp: "2025-01-01T00:00:00Z"}
spec: {type: LoadBalancer, clusterIPs: [10.96.0.9], ports: [{port: 80, protocol: TCP}]}
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: x, creationTimestamp: "2025-01-02T00:00:00Z"}
spec: {type: LoadBalancer, clusterIPs: [10.96.0.10], ports: [{port: 80, protocol: TCP}]}
`,
  );
  const p = run(['allocate', '--dry-run', '-f', tiny]);
  assert.equal(p.status, 1, 'a service stays pending');
  assert.match(p.stdout, /^x\/a\s+192\.0\.2\.1\s+tiny\s+allocated\s+<none>$/m);
  assert.match(p.stdout, /^x\/b\s+<pending>\s+<none>\s+pending\s+no available IPs$/m);

  const dup = write(
    'dup.yaml',
    `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: p, namespace: metallb-system}
spec: {addresses: [192.0.2.0/30]}
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: {name: l2, namespace: metallb-system}
spec: {ipAddressPools: [p, p]}
`,
  );
  // The controller reads pools and communities only: an L2Advertisement it would never parse cannot stop allocation.
  const d = run(['allocate', '--dry-run', '-f', dup, '-o', 'json']);
  assert.equal(d.status, 0, d.stderr);
  assert.equal(d.stderr, '');
  assert.equal('configRejected' in JSON.parse(d.stdout), false);

  const invalid = write('invalid-pool.yaml', 'apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata: {name: p, namespace: metallb-system}\nspec: {addresses: [nope]}\n');
  assertUserError(
    run(['allocate', '--dry-run', '-f', invalid]),
    /MetalLB's controller rejects this configuration: metallb-system\/IPAddressPool\/p: .*keep running the configuration they accepted last, which a snapshot cannot show \(see metallb-ts validate\)$/,
  );
});

test('explain: exit 0 when announced, 1 when nobody announces; json is the core Explanation', () => {
  const ok = run(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE]);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /^Verdict: +announced by lab-worker-b over layer2: 192\.0\.2\.10$/m);
  assert.match(ok.stdout, /^lab-worker-a\s+notOwner\s+not first in the hash order/m);
  assert.match(ok.stdout, /^  excludeLB\s+5\s+lab-cp-1, lab-cp-2, lab-cp-3: labelled node\.kubernetes\.io\/exclude-from-external-load-balancers$/m);
  const no = run(['explain', 'ingest/ingest-udp', '-f', EXAMPLE, '-o', 'json']);
  assert.equal(no.status, 1, no.stderr);
  const e = JSON.parse(no.stdout) as { service: string; announcer: string | null; findings: Array<{ id: string }> };
  assert.equal(e.service, 'ingest/ingest-udp');
  assert.equal(e.announcer, null);
  assert.ok(e.findings.some((f) => f.id === 'no-ready-endpoints'));
  const flag = JSON.parse(run(['explain', 'svc/frontend', '-n', 'shop', '--speakers', 'lab-worker-a', '-o', 'json', '-f', EXAMPLE]).stdout) as { announcer: string; speakers: { source: string } };
  assert.deepEqual([flag.announcer, flag.speakers.source], ['lab-worker-a', 'flag']);
});

test('whois: holders of a shared IP; exit 1 when nobody announces it', () => {
  const shared = run(['whois', '192.0.2.40', '-f', EXAMPLE]);
  assert.equal(shared.status, 1, shared.stderr);
  assert.deepEqual(
    shared.stdout
      .split('\n')
      .filter((l) => l.startsWith('ingest/'))
      .map((l) => l.split(/\s+/)[0]),
    ['ingest/admin-console', 'ingest/ingest-tcp', 'ingest/ingest-udp', 'ingest/metrics-relay'],
  );
  const one = JSON.parse(run(['whois', '192.0.2.10', '-f', EXAMPLE, '-o', 'json']).stdout) as { ip: string; pool: string; holders: Array<{ service: string; announcer: string }> };
  assert.deepEqual([one.ip, one.pool, one.holders.map((h) => `${h.service}@${h.announcer}`)], ['192.0.2.10', 'lab-pool', ['shop/frontend@lab-worker-b']]);
  assert.equal(run(['whois', '192.0.2.10', '-f', EXAMPLE]).status, 0);
});

const SEED = referencePath('conformance', 'election', 'seed-small-cluster.yaml');
type SeedCase = { name: string; ignoreExcludeLB: boolean; expected: Array<{ service: string; winner: string | null; nodes: Record<string, string> }> };
const seedCases = (): SeedCase[] => (parse(readFileSync(SEED, 'utf8')) as { cases: SeedCase[] }).cases;

test('explain on examples/cluster.yaml gives the seed base case verdicts on every node', async () => {
  const seedCase = seedCases()[0]!;
  const ctx = diagnostics(await loadSnapshot([EXAMPLE]));
  for (const want of seedCase.expected) {
    const [namespace, name] = want.service.split('/') as [string, string];
    const e = explainServiceRef(ctx, { namespace, name });
    assert.equal(e.announcer, want.winner, `${want.service} winner`);
    assert.deepEqual(Object.fromEntries(e.nodes.map((n) => [n.node, n.decision])), want.nodes, `${want.service} decisions`);
  }
});

test('explain on examples/cluster-cp-only.yaml gives the seed trap cases verdicts and names the trap', async () => {
  const state = await loadSnapshot([join(ROOT, 'examples/cluster-cp-only.yaml')]);
  for (const seedCase of seedCases().slice(1)) {
    const ctx = diagnostics(state, { ignoreExcludeLb: seedCase.ignoreExcludeLB });
    for (const want of seedCase.expected) {
      const [namespace, name] = want.service.split('/') as [string, string];
      const e = explainServiceRef(ctx, { namespace, name });
      assert.equal(e.announcer, want.winner, `${seedCase.name} ${want.service} winner`);
      assert.deepEqual(Object.fromEntries(e.nodes.map((n) => [n.node, n.decision])), want.nodes, `${seedCase.name} ${want.service}`);
      const trap = e.findings.some((f) => f.id === 'nodeselector-only-excluded');
      const healthy = !e.findings.some((f) => f.id === 'no-ready-endpoints');
      assert.equal(trap, healthy && !seedCase.ignoreExcludeLB, `${seedCase.name} ${want.service} trap finding`);
    }
  }
  const r = run(['explain', 'svc/frontend', '-n', 'shop', '-f', join(ROOT, 'examples/cluster-cp-only.yaml')]);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /nodeselector-only-excluded/);
  assert.match(r.stdout, /exclude-from-external-load-balancers/);
});

function readFileHead(p: string): string {
  return spawnSync('cat', [p], { encoding: 'utf8' }).stdout;
}

test('no colour when stdout is not a TTY, or NO_COLOR is set', () => {
  const bad = write('c.yaml', 'kind: IPAddressPool\napiVersion: metallb.io/v1beta1\nmetadata: {name: x, namespace: m}\nspec: {addresses: [nope]}\n');
  assert.ok(!run(['validate', '-f', bad]).stdout.includes('\u001b['));
  assert.equal(colorEnabled({ isTTY: true }, {}), true);
  assert.equal(colorEnabled({ isTTY: true }, { NO_COLOR: '1' }), false);
  assert.equal(colorEnabled({ isTTY: true }, { NO_COLOR: '' }), true);
  assert.equal(colorEnabled({ isTTY: false }, {}), false);
});

test('renderTable: kubectl style, placeholders, no trailing blanks', () => {
  const out = renderTable(
    ['name', 'ip', { header: 'external-ip', placeholder: '<pending>' }],
    [
      ['frontend', '192.0.2.10', '192.0.2.10'],
      ['git', undefined, null],
    ],
  );
  assert.equal(out, ['NAME       IP           EXTERNAL-IP', 'frontend   192.0.2.10   192.0.2.10', 'git        <none>       <pending>', ''].join('\n'));
});

test('parseServiceTarget and parseWhoisIP', async (t) => {
  const ok: Array<[string, string | undefined, string]> = [
    ['svc/web', 'shop', 'shop/web'],
    ['service/web', undefined, 'default/web'],
    ['shop/web', undefined, 'shop/web'],
    ['web', undefined, 'default/web'],
    ['shop/web', 'shop', 'shop/web'],
    ['svc/shop/web', undefined, 'shop/web'],
  ];
  for (const [target, ns, want] of ok) {
    await t.test(`${target} -n ${ns}`, () => {
      const r = parseServiceTarget(target, ns);
      assert.equal(`${r.namespace}/${r.name}`, want);
    });
  }
  for (const [target, ns] of [
    ['a/b/c', undefined],
    ['svc/', undefined],
    ['shop/web', 'other'],
    ['', undefined],
  ] as const) {
    assert.throws(() => parseServiceTarget(target, ns), UserError, `${target} -n ${ns}`);
  }
  assert.equal(parseWhoisIP('192.0.2.40'), '192.0.2.40');
  assert.equal(parseWhoisIP('2001:DB8:0::1'), '2001:db8::1');
  assert.throws(() => parseWhoisIP('300.1.1.1'), UserError);
});
