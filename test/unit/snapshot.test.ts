import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync, readFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parse } from 'yaml';
import { loadSnapshot, dumpSnapshot, parseSnapshotText, STDIN_NAME } from '../../src/kube/snapshot.ts';
import { originOf, type ClusterState, type KubeObject } from '../../src/core/kube.ts';
import { InputError, UserError } from '../../src/core/errors.ts';
import { referencePath } from '../helpers/reference.ts';

const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-snapshot-'));
let n = 0;
/** Writes `text` to a fresh file (name ends with `ext`) and returns its path. */
function file(text: string, ext = '.yaml'): string {
  const p = join(dir, `f${n++}${ext}`);
  writeFileSync(p, text);
  return p;
}
const names = (objs: readonly KubeObject[]) => objs.map((o) => `${o.kind}/${o.metadata?.name}`);
const counts = (s: ClusterState) =>
  Object.fromEntries(
    Object.entries(s)
      .filter(([, v]) => (v as unknown[]).length > 0)
      .map(([k, v]) => [k, (v as unknown[]).length]),
  );

async function rejects(p: Promise<unknown>, re: RegExp, cls: abstract new (...args: never[]) => Error = InputError): Promise<void> {
  await assert.rejects(p, (err: Error) => {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err.constructor.name}: ${err.message}`);
    assert.match(err.message, re);
    assert.ok(!err.message.includes('\n'), `message must be one line: ${JSON.stringify(err.message)}`);
    return true;
  });
}

const SERVICE_YAML = `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  type: LoadBalancer
`;

test('byte order mark and CRLF line endings', async () => {
  const s = await loadSnapshot([file('\ufeffkind: Node\r\nmetadata:\r\n  name: a\r\n---\r\nkind: Node\r\nmetadata: {name: b}\r\n')]);
  assert.deepEqual(names(s.nodes), ['Node/a', 'Node/b']);
  assert.equal(originOf(s.nodes[1]!)?.line, 5);
});

test('single YAML object', async () => {
  const p = file(SERVICE_YAML);
  const s = await loadSnapshot([p]);
  assert.deepEqual(counts(s), { services: 1 });
  assert.equal(s.services[0]!.spec?.type, 'LoadBalancer');
  assert.deepEqual(originOf(s.services[0]!), { file: p, line: 1 });
});

test('multi-document YAML keeps document order, skips empty documents, records each line', async () => {
  const p = file(`# leading comment
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
---
# only a comment
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ignored}
...
`);
  const s = await loadSnapshot([p]);
  assert.deepEqual(names(s.nodes), ['Node/n1', 'Node/n2']);
  assert.equal(originOf(s.nodes[0]!)?.line, 3);
  assert.equal(originOf(s.nodes[1]!)?.line, 10);
  assert.deepEqual(counts(s), { nodes: 2 }, 'Deployment is ignored');
});

test('kind: List in YAML, as kubectl get -o yaml prints it, with managedFields noise', async () => {
  const p = file(`apiVersion: v1
items:
- apiVersion: v1
  kind: Service
  metadata:
    creationTimestamp: "2025-05-12T09:14:03Z"
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:annotations:
            .: {}
      manager: kubectl-client-side-apply
      operation: Update
      time: "2025-05-12T09:14:03Z"
    name: web
    namespace: shop
    resourceVersion: "4219"
    uid: e74e7f06-ab98-49d5-a56e-244379ecd5e1
  spec: {type: LoadBalancer}
  status:
    loadBalancer:
      ingress:
      - ip: 192.0.2.10
        ipMode: VIP
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: pool, namespace: metallb-system}
  spec: {addresses: [192.0.2.0/24]}
kind: List
metadata:
  resourceVersion: ""
`);
  const s = await loadSnapshot([p]);
  assert.deepEqual(counts(s), { services: 1, ipAddressPools: 1 });
  assert.equal(s.services[0]!.status?.loadBalancer?.ingress?.[0]?.ip, '192.0.2.10');
  assert.equal(s.services[0]!.metadata?.creationTimestamp, '2025-05-12T09:14:03Z', 'timestamps stay strings');
  assert.deepEqual(originOf(s.services[0]!), { file: p, line: 3 });
  assert.deepEqual(originOf(s.ipAddressPools[0]!), { file: p, line: 27 });
});

test('kind: List in JSON (kubectl get -o json), tabs and 4-space indent', async () => {
  const p = file(
    JSON.stringify(
      {
        apiVersion: 'v1',
        kind: 'List',
        metadata: { resourceVersion: '' },
        items: [
          { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', managedFields: [{ manager: 'kubelet' }] } },
          { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-abc', namespace: 'shop' }, endpoints: null },
        ],
      },
      null,
      4,
    ),
    '.json',
  );
  const s = await loadSnapshot([p]);
  assert.deepEqual(counts(s), { nodes: 1, endpointSlices: 1 });
  assert.equal(originOf(s.nodes[0]!)?.line, 8);
  const tabs = file('{\n\t"kind": "Namespace",\n\t"apiVersion": "v1",\n\t"metadata": {"name": "shop"}\n}\n', '.json');
  assert.deepEqual(names((await loadSnapshot([tabs])).namespaces), ['Namespace/shop']);
});

test('*List kinds from the raw API: items without kind get it from the list kind', async () => {
  const p = file(
    JSON.stringify({
      kind: 'ServiceList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '77' },
      items: [{ metadata: { name: 'a', namespace: 'x' }, spec: { type: 'LoadBalancer' } }, { metadata: { name: 'b', namespace: 'x' } }],
    }),
    '.json',
  );
  const s = await loadSnapshot([p]);
  assert.deepEqual(names(s.services), ['Service/a', 'Service/b']);
  assert.equal(s.services[0]!.apiVersion, 'v1');
  const crs = file(`apiVersion: metallb.io/v1beta1
kind: IPAddressPoolList
items:
- metadata: {name: p, namespace: metallb-system}
  spec: {addresses: [10.0.0.0/24]}
`);
  const s2 = await loadSnapshot([crs]);
  assert.equal(s2.ipAddressPools[0]!.apiVersion, 'metallb.io/v1beta1');
  assert.equal(originOf(s2.ipAddressPools[0]!)?.line, 4);
});

test('every kept kind goes to its list, other kinds are ignored', async () => {
  const kinds = [
    'Service',
    'EndpointSlice',
    'Node',
    'Namespace',
    'Pod',
    'Secret',
    'ConfigMap',
    'Event',
    'IPAddressPool',
    'L2Advertisement',
    'BGPAdvertisement',
    'BGPPeer',
    'Community',
    'BFDProfile',
    'ServiceL2Status',
    'ServiceBGPStatus',
    'FRRConfiguration',
    'ConfigurationState',
  ];
  const docs = [...kinds, 'Deployment', 'DaemonSet', 'CustomResourceDefinition', 'FRRNodeState'].map((k, i) => `kind: ${k}\nmetadata: {name: o${i}}\n`).join('---\n');
  const peers = `apiVersion: metallb.io/v1beta1\nkind: BGPPeer\nmetadata: {name: old}\n---\napiVersion: metallb.io/v1beta2\nkind: BGPPeer\nmetadata: {name: new}\n`;
  const s = await loadSnapshot([file(docs), file(peers)]);
  const c = counts(s);
  assert.equal(Object.keys(c).length, kinds.length);
  assert.ok(Object.values(c).every((v) => v >= 1));
  assert.equal(s.bgpPeers.length, 3, 'BGPPeer v1beta1 and v1beta2 are both kept');
});

test('stdin: -f - reads the given text or stream, once', async () => {
  const s = await loadSnapshot(['-'], { stdin: SERVICE_YAML });
  assert.deepEqual(names(s.services), ['Service/web']);
  assert.deepEqual(originOf(s.services[0]!), { file: STDIN_NAME, line: 1 });
  const fromStream = await loadSnapshot(['-'], { stdin: Readable.from([Buffer.from('kind: Node\n'), Buffer.from('metadata: {name: n}\n')]) });
  assert.deepEqual(names(fromStream.nodes), ['Node/n']);
  await rejects(loadSnapshot(['-'], { stdin: '' }), /empty snapshot.*<stdin>/, UserError);
  await rejects(loadSnapshot(['-', '-'], { stdin: SERVICE_YAML }), /given more than once/, UserError);
});

test('-f repeatable: files and stdin in the order given', async () => {
  const a = file('kind: Node\nmetadata: {name: a}\n');
  const s = await loadSnapshot([a, '-'], { stdin: 'kind: Node\nmetadata: {name: b}\n' });
  assert.deepEqual(names(s.nodes), ['Node/a', 'Node/b']);
});

test('directory: *.yaml, *.yml, *.json sorted, non-recursive, other files ignored', async () => {
  const d = join(dir, 'dump');
  mkdirSync(join(d, 'sub'), { recursive: true });
  writeFileSync(join(d, 'b.yml'), 'kind: Node\nmetadata: {name: b}\n');
  writeFileSync(join(d, 'a.yaml'), 'kind: Node\nmetadata: {name: a}\n');
  writeFileSync(join(d, 'c.json'), '{"kind": "Node", "metadata": {"name": "c"}}');
  writeFileSync(join(d, 'README.md'), '# not: yaml: [\n');
  writeFileSync(join(d, 'notes.txt'), '{{{{');
  writeFileSync(join(d, 'sub', 'd.yaml'), 'kind: Node\nmetadata: {name: d}\n');
  const s = await loadSnapshot([d]);
  assert.deepEqual(names(s.nodes), ['Node/a', 'Node/b', 'Node/c']);
  assert.deepEqual(originOf(s.nodes[1]!), { file: join(d, 'b.yml'), line: 1 });
});

test('directory without usable files is an error', async () => {
  const d = join(dir, 'docs');
  mkdirSync(d);
  writeFileSync(join(d, 'README.md'), 'hello');
  writeFileSync(join(d, 'x.txt'), 'kind: Node');
  await rejects(loadSnapshot([d]), /docs: directory has no \*\.yaml, \*\.yml or \*\.json file/);
});

test('errors name the file and line', async (t) => {
  const cases: Array<{ name: string; text: string; ext?: string; re: RegExp }> = [
    { name: 'broken YAML (the parser line)', text: 'kind: Node\nmetadata:\n  name: a\n  labels: {x: [}\n', re: /:4: invalid YAML\/JSON: / },
    { name: 'bad indentation', text: 'kind: Node\nmetadata:\n  name: a\n   bad: 1\n', re: /:\d+: invalid YAML\/JSON: / },
    { name: 'broken JSON', text: '{"kind": "Node",\n "metadata": {"name": "a"}\n', ext: '.json', re: /:\d+: invalid YAML\/JSON: / },
    { name: 'duplicate key', text: 'kind: Node\nkind: Pod\n', re: /:2: invalid YAML\/JSON: / },
    { name: 'scalar document', text: 'kind: Node\nmetadata: {name: a}\n---\njust a string\n', re: /:4: document is a string, not a Kubernetes object/ },
    { name: 'list document', text: '- kind: Node\n', re: /:1: document is a list, not a Kubernetes object/ },
    { name: 'no kind', text: 'apiVersion: v1\nmetadata: {name: a}\n', re: /:1: document has no "kind"/ },
    { name: 'List item without kind', text: 'kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n- metadata: {name: x}\n', re: /:5: List item 1 has no "kind"/ },
    { name: 'List item not an object', text: 'kind: List\nitems:\n- 42\n', re: /:3: List item 0 is a number/ },
    { name: 'List items not a list', text: 'kind: List\nitems: {a: 1}\n', re: /:1: List: "items" is not a list/ },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const p = file(c.text, c.ext);
      await rejects(loadSnapshot([p]), new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${c.re.source}`));
      await assert.rejects(loadSnapshot([p]), (e: InputError) => e.file === p && typeof e.line === 'number');
    });
  }
});

test('missing and unreadable files', async () => {
  await rejects(loadSnapshot([join(dir, 'nope.yaml')]), /nope\.yaml: no such file or directory$/);
  const p = file(SERVICE_YAML);
  chmodSync(p, 0o000);
  // root reads a mode-000 file anyway; then an unreadable path is one below a regular file.
  if (process.getuid?.() === 0) await rejects(loadSnapshot([join(p, 'x.yaml')]), /x\.yaml: cannot read: ENOTDIR/);
  else await rejects(loadSnapshot([p]), /permission denied$/);
  chmodSync(p, 0o644);
});

test('empty snapshot: no object at all across all inputs', async () => {
  const empty = file('');
  const comments = file('# nothing here\n---\n');
  const emptyList = file('{"kind": "List", "apiVersion": "v1", "items": []}', '.json');
  await rejects(loadSnapshot([empty, comments, emptyList]), /^empty snapshot: no Kubernetes objects found in /, UserError);
  await rejects(loadSnapshot([]), /no snapshot file given/, UserError);
  // Objects of ignored kinds only: not empty, just nothing metallb-ts looks at.
  const s = await loadSnapshot([file('kind: Deployment\nmetadata: {name: d}\n')]);
  assert.deepEqual(counts(s), {});
});

test('parseSnapshotText returns objects of every kind, in order', () => {
  const objs = parseSnapshotText('kind: Deployment\n---\nkind: Node\nmetadata: {name: n}\n', 'x.yaml');
  assert.deepEqual(
    objs.map((o) => o.kind),
    ['Deployment', 'Node'],
  );
});

test('dumpSnapshot: a kind: List that loads back to the same state, without managedFields', async () => {
  const p = file(`kind: List
apiVersion: v1
items:
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: shop, managedFields: [{manager: kubectl}], resourceVersion: "12"}
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d}
`);
  const s = await loadSnapshot([p]);
  for (const format of ['yaml', 'json'] as const) {
    const text = dumpSnapshot(s, format);
    const doc = format === 'json' ? JSON.parse(text) : parse(text);
    assert.equal(doc.kind, 'List');
    assert.deepEqual(
      doc.items.map((i: KubeObject) => i.kind),
      ['Service', 'Node'],
      'kept kinds only, grouped by kind',
    );
    assert.equal(doc.items[0].metadata.managedFields, undefined);
    assert.equal(doc.items[0].metadata.resourceVersion, '12');
    const again = await loadSnapshot([file(text, `.${format}`)]);
    assert.deepEqual(counts(again), counts(s));
  }
  assert.ok(s.services[0]!.metadata?.managedFields, 'the loaded object itself is not modified');
});

// The example cluster mirrors case "workers-advertise" of the election seed (see examples/README.md).
const EXAMPLE = new URL('../../examples/cluster.yaml', import.meta.url).pathname;
const SEED = referencePath('conformance', 'election', 'seed-small-cluster.yaml');

test('examples/cluster.yaml: object counts per kind', async () => {
  const s = await loadSnapshot([EXAMPLE]);
  assert.deepEqual(counts(s), {
    // the seed's base case
    nodes: 8,
    ipAddressPools: 1,
    l2Advertisements: 1,
    services: 14,
    endpointSlices: 13,
    // what a dump of that cluster adds: namespaces, metallb-system pods and config, speaker statuses
    namespaces: 10,
    pods: 9,
    configMaps: 1,
    serviceL2Statuses: 10,
  });
  const speakers = s.pods.filter((p) => p.metadata?.labels?.['component'] === 'speaker');
  assert.deepEqual(speakers.map((p) => p.spec?.nodeName).sort(), s.nodes.map((n) => n.metadata?.name).sort(), 'one speaker per node');
  for (const p of speakers) {
    assert.equal(p.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', `${p.metadata?.name} Ready`);
  }
  assert.ok(s.configMaps.some((c) => c.metadata?.name === 'metallb-excludel2' && c.metadata.namespace === 'metallb-system'));
});

test('examples/cluster.yaml matches the seed base case object for object', async () => {
  const seedCase = (parse(readFileSync(SEED, 'utf8')) as { cases: Array<{ name: string; resources: KubeObject[] }> }).cases[0]!;
  assert.equal(seedCase.name, 'workers-advertise');
  const s = await loadSnapshot([EXAMPLE]);
  const all: KubeObject[] = Object.values(s).flat();
  const seedCounts: Record<string, number> = {};
  for (const r of seedCase.resources) seedCounts[r.kind!] = (seedCounts[r.kind!] ?? 0) + 1;
  for (const [kind, count] of Object.entries(seedCounts)) {
    assert.equal(all.filter((o) => o.kind === kind).length, count, `${kind} count`);
  }
  for (const r of seedCase.resources) {
    const ref = `${r.kind} ${r.metadata?.namespace ?? ''}/${r.metadata?.name}`;
    const got = all.find((o) => o.kind === r.kind && o.metadata?.name === r.metadata?.name && o.metadata?.namespace === r.metadata?.namespace);
    assert.ok(got, `${ref} missing`);
    assert.deepEqual(got.metadata?.labels ?? {}, r.metadata?.labels ?? {}, `${ref} labels`);
    assertSubset(r, got, ref);
  }
});

/** Every field of `want` is in `got` with the same value; conditions are matched by type. */
function assertSubset(want: unknown, got: unknown, path: string): void {
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got), `${path}: not a list`);
    if (path.endsWith('.conditions')) {
      for (const c of want as Array<{ type: string }>)
        assertSubset(
          c,
          (got as Array<{ type: string }>).find((g) => g.type === c.type),
          `${path}[${c.type}]`,
        );
      return;
    }
    assert.equal(got.length, want.length, `${path}: length`);
    want.forEach((w, i) => {
      assertSubset(w, (got as unknown[])[i], `${path}[${i}]`);
    });
  } else if (want !== null && typeof want === 'object') {
    assert.ok(got !== null && typeof got === 'object', `${path}: not an object`);
    for (const [k, v] of Object.entries(want)) assertSubset(v, (got as Record<string, unknown>)[k], `${path}.${k}`);
  } else {
    assert.equal(got, want, path);
  }
}

const bomb = (levels: number): string => {
  const lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: bomb, namespace: metallb-system}', 'data:', '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < levels; i++) {
    const [prev, cur] = [String.fromCharCode(96 + i), String.fromCharCode(97 + i)];
    lines.push(`  ${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(',')}]`);
  }
  return lines.join('\n') + '\n';
};

test('malformed input the YAML library throws on: alias bomb, nesting too deep (YAML and JSON)', async () => {
  await rejects(loadSnapshot([file(bomb(9))]), /:1: invalid YAML: too many aliases \(resource exhaustion\)$/);
  await rejects(loadSnapshot([file(`kind: ConfigMap\nmetadata: {name: deep}\ndata:\n  x: ${'['.repeat(20000)}${']'.repeat(20000)}\n`)]), /:4: invalid YAML: document nested too deeply$/);
  await rejects(
    loadSnapshot([file(`{"kind": "ConfigMap",\n"metadata": {"name": "deep"},\n"x": ${'['.repeat(200000)}${']'.repeat(200000)}}`, '.json')]),
    /:3: document nested too deeply \(more than 10000 levels\)$/,
  );
  // Deep but within the API server's limit, in a field metallb-ts does not read: fine.
  const s = await loadSnapshot([file(`{"kind": "ConfigMap", "metadata": {"name": "deep"}, "x": ${'['.repeat(5000)}${']'.repeat(5000)}}`, '.json')]);
  assert.equal(s.configMaps.length, 1);
});

test('every kept object is shape-checked: file:line, Kind ns/name, the field', async (t) => {
  const cases: Array<{ name: string; text: string; ext?: string; re: RegExp }> = [
    {
      name: 'ingress a map',
      text: 'kind: Service\nmetadata: {name: weird, namespace: default}\nstatus: {loadBalancer: {ingress: {ip: 10.0.0.2}}}\n',
      re: /:1: Service default\/weird: status\.loadBalancer\.ingress: expected list, got object$/,
    },
    {
      name: 'ingress items',
      text: 'kind: Node\nmetadata: {name: n}\n---\nkind: Service\nmetadata: {name: w, namespace: d}\nstatus: {loadBalancer: {ingress: ["10.0.0.2", 5, null]}}\n',
      re: /:4: Service d\/w: status\.loadBalancer\.ingress\[0\]: expected object, got string$/,
    },
    { name: 'Service without metadata', text: 'apiVersion: v1\nkind: Service\nspec:\n  type: LoadBalancer\n', re: /:1: Service <unnamed>: metadata\.name: expected string, got nothing$/ },
    { name: 'Node without name', text: 'kind: Node\nmetadata:\n  labels: {a: b}\n', re: /:1: Node <unnamed>: metadata\.name: expected string, got nothing$/ },
    { name: 'metadata a string', text: 'kind: Service\nmetadata: web\n', re: /:1: Service <unnamed>: metadata: expected object, got string$/ },
    { name: 'spec a string', text: 'kind: Service\nmetadata: {name: w, namespace: d}\nspec: LoadBalancer\n', re: /:1: Service d\/w: spec: expected object, got string$/ },
    { name: 'labels a list', text: 'kind: Service\nmetadata: {name: w, labels: [a, b]}\n', re: /:1: Service w: metadata\.labels: expected map of strings, got list$/ },
    { name: 'ports a string', text: 'kind: Service\nmetadata: {name: w, namespace: d}\nspec: {ports: "80"}\n', re: /:1: Service d\/w: spec\.ports: expected list, got string$/ },
    {
      name: 'Node conditions (cluster-scoped: no namespace shown)',
      text: 'kind: Node\nmetadata: {name: n1, namespace: x}\nstatus: {conditions: 7}\n',
      re: /:1: Node n1: status\.conditions: expected list, got number$/,
    },
    {
      name: 'List item (its own line)',
      text: 'kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n- kind: EndpointSlice\n  metadata: {name: e, namespace: d}\n  endpoints: [null]\n',
      re: /:5: EndpointSlice d\/e: endpoints\[0\]: expected object, got null$/,
    },
    {
      name: 'JSON List item',
      ext: '.json',
      text: '{"kind": "List", "items": [\n{"kind": "Node", "metadata": {"name": "a"}},\n{"kind": "Community", "metadata": {"name": "c", "namespace": "m"}, "spec": {"communities": 7}}\n]}',
      re: /:3: Community m\/c: spec\.communities: expected list, got number$/,
    },
    {
      name: 'CR field type',
      text: 'apiVersion: metallb.io/v1beta1\nkind: BGPAdvertisement\nmetadata: {name: b, namespace: metallb-system}\nspec: {aggregationLength: "32"}\n',
      re: /:1: BGPAdvertisement metallb-system\/b: spec\.aggregationLength: expected integer, got string$/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const p = file(c.text, c.ext);
      await rejects(loadSnapshot([p]), new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${c.re.source}`));
    });
  }
  // Ignored kinds are not checked.
  assert.deepEqual(counts(await loadSnapshot([file('kind: Deployment\nmetadata: 7\n---\nkind: Node\nmetadata: {name: n}\n')])), { nodes: 1 });
});

test('duplicates (same kind, namespace, name): the last one is kept; a warning names every place when they differ', async () => {
  const base = file('kind: Node\nmetadata: {name: n1}\n---\nkind: IPAddressPool\nmetadata: {name: p1, namespace: metallb-system}\nspec: {addresses: [10.0.0.0/30]}\n');
  const warnings: string[] = [];
  const onWarning = (m: string): void => {
    warnings.push(m);
  };
  // The same file twice: identical copies, kept once, silently.
  const twice = await loadSnapshot([base, base], { onWarning });
  assert.deepEqual(counts(twice), { nodes: 1, ipAddressPools: 1 });
  assert.deepEqual(warnings, []);
  // A different copy in another file: the last one wins, in its place, with one warning line.
  const other = file('kind: Namespace\nmetadata: {name: x}\n---\nkind: IPAddressPool\nmetadata: {name: p1, namespace: metallb-system}\nspec: {addresses: [10.0.9.0/30]}\n');
  const s = await loadSnapshot([base, other], { onWarning });
  assert.deepEqual(
    s.ipAddressPools.map((p) => p.spec?.addresses),
    [['10.0.9.0/30']],
  );
  assert.deepEqual(originOf(s.ipAddressPools[0]!), { file: other, line: 4 });
  assert.deepEqual(warnings, [`IPAddressPool metallb-system/p1 is defined twice in the input, with different contents (${base}:4, ${other}:4); using the last one, as kubectl apply would`]);
  // Same name in another namespace or of another kind: not a duplicate.
  warnings.length = 0;
  const distinct = await loadSnapshot([base, file('kind: IPAddressPool\nmetadata: {name: p1, namespace: elsewhere}\n---\nkind: Namespace\nmetadata: {name: n1}\n')], { onWarning });
  assert.deepEqual(counts(distinct), { nodes: 1, namespaces: 1, ipAddressPools: 2 });
  assert.deepEqual(warnings, []);
  // A Service without namespace and one in `default` are the same object; three copies are counted.
  const svc = (port: number) => `kind: Service\nmetadata: {name: w${port === 81 ? ', namespace: default' : ''}}\nspec: {ports: [{port: ${port}}]}\n`;
  const three = file(`${svc(80)}---\n${svc(81)}---\n${svc(82)}`);
  assert.deepEqual(
    (await loadSnapshot([three], { onWarning })).services.map((x) => x.spec?.ports?.[0]?.port),
    [82],
  );
  assert.deepEqual(warnings, [`Service w is defined 3 times in the input, with different contents (${three}:1, ${three}:5, ${three}:9); using the last one, as kubectl apply would`]);
});
