import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { checkShape, KIND_SHAPES, type Shape } from '../../src/core/shape.ts';
import { KIND_TO_LIST, type KubeObject } from '../../src/core/kube.ts';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { REFERENCE_DIR } from '../helpers/reference.ts';

const ROOT = join(import.meta.dirname, '../..');
const SHARED = REFERENCE_DIR;

/** `base` (a valid object of `kind`) with `patch` merged in at the top level and one level down. */
function obj(kind: string, patch: Record<string, unknown> = {}, meta: Record<string, unknown> = { name: 'x', namespace: 'ns' }): KubeObject {
  return { apiVersion: 'v1', kind, metadata: meta, ...patch };
}

test('checkShape: each bad shape gives its message', async (t) => {
  const cases: Array<[string, KubeObject, string[]]> = [
    // metadata
    ['no metadata', { kind: 'Service' }, ['metadata.name: expected string, got nothing']],
    ['metadata a string', { kind: 'Node', metadata: 'n1' as never }, ['metadata: expected object, got string']],
    ['metadata null', { kind: 'Node', metadata: null as never }, ['metadata.name: expected string, got nothing']],
    ['no name', obj('Node', {}, { labels: { a: 'b' } }), ['metadata.name: expected string, got nothing']],
    ['empty name', obj('Namespace', {}, { name: '' }), ['metadata.name: expected non-empty string, got empty string']],
    ['name a number', obj('Node', {}, { name: 12345 }), ['metadata.name: expected string, got number']],
    ['labels a list', obj('Service', {}, { name: 'x', labels: ['a', 'b'] }), ['metadata.labels: expected map of strings, got list']],
    ['label value a number', obj('Node', {}, { name: 'x', labels: { 'kubernetes.io/hostname': 7 } }), ['metadata.labels["kubernetes.io/hostname"]: expected string, got number']],
    ['label value null', obj('Node', {}, { name: 'x', labels: { a: null } }), ['metadata.labels.a: expected string, got null']],
    ['annotations a list', obj('Service', {}, { name: 'x', annotations: ['x'] }), ['metadata.annotations: expected map of strings, got list']],
    ['namespace a number', obj('Service', {}, { name: 'x', namespace: 1 }), ['metadata.namespace: expected string, got number']],
    // Service
    ['spec a string', obj('Service', { spec: 'LoadBalancer' }), ['spec: expected object, got string']],
    ['type a number', obj('Service', { spec: { type: 7 } }), ['spec.type: expected string, got number']],
    ['ports a string', obj('Service', { spec: { ports: '80' } }), ['spec.ports: expected list, got string']],
    ['ports [null]', obj('Service', { spec: { ports: [null] } }), ['spec.ports[0]: expected object, got null']],
    ['port a string', obj('Service', { spec: { ports: [{ port: '80' }] } }), ['spec.ports[0].port: expected integer, got string']],
    ['port a fraction', obj('Service', { spec: { ports: [{ port: 1.5 }] } }), ['spec.ports[0].port: expected integer, got number (1.5)']],
    ['protocol a number', obj('Service', { spec: { ports: [{ port: 80, protocol: 6 }] } }), ['spec.ports[0].protocol: expected string, got number']],
    ['clusterIPs a string', obj('Service', { spec: { clusterIPs: 'str' } }), ['spec.clusterIPs: expected list, got string']],
    ['ipFamilies [null]', obj('Service', { spec: { ipFamilies: [null] } }), ['spec.ipFamilies[0]: expected string, got null']],
    ['loadBalancerIP a list', obj('Service', { spec: { loadBalancerIP: ['1.2.3.4'] } }), ['spec.loadBalancerIP: expected string, got list']],
    ['ingress a map', obj('Service', { status: { loadBalancer: { ingress: { ip: '10.0.0.2' } } } }), ['status.loadBalancer.ingress: expected list, got object']],
    [
      'ingress items',
      obj('Service', { status: { loadBalancer: { ingress: ['10.0.0.2', 5, null, { ip: [1] }] } } }),
      [
        'status.loadBalancer.ingress[0]: expected object, got string',
        'status.loadBalancer.ingress[1]: expected object, got number',
        'status.loadBalancer.ingress[2]: expected object, got null',
        'status.loadBalancer.ingress[3].ip: expected string, got list',
      ],
    ],
    ['status a string', obj('Service', { status: 'str' }), ['status: expected object, got string']],
    // EndpointSlice
    ['endpoints a number', obj('EndpointSlice', { endpoints: 7 }), ['endpoints: expected list, got number']],
    ['endpoints [null]', obj('EndpointSlice', { endpoints: [null] }), ['endpoints[0]: expected object, got null']],
    ['addresses a string', obj('EndpointSlice', { endpoints: [{ addresses: '1.1.1.1' }] }), ['endpoints[0].addresses: expected list, got string']],
    ['ready a string', obj('EndpointSlice', { endpoints: [{ conditions: { ready: 'true' } }] }), ['endpoints[0].conditions.ready: expected boolean, got string']],
    ['nodeName a number', obj('EndpointSlice', { endpoints: [{ nodeName: 1 }] }), ['endpoints[0].nodeName: expected string, got number']],
    // Node, Pod
    ['node conditions a number', obj('Node', { status: { conditions: 7 } }), ['status.conditions: expected list, got number']],
    ['node condition status a bool', obj('Node', { status: { conditions: [{ type: 'Ready', status: true }] } }), ['status.conditions[0].status: expected string, got boolean']],
    ['pod conditions a string', obj('Pod', { status: { conditions: 'str' } }), ['status.conditions: expected list, got string']],
    ['pod nodeName a list', obj('Pod', { spec: { nodeName: ['n1'] } }), ['spec.nodeName: expected string, got list']],
    // Secret, ConfigMap
    ['secret data a list', obj('Secret', { data: ['x'] }), ['data: expected map of strings, got list']],
    ['configmap data value a list', obj('ConfigMap', { data: { x: [[1]] } }), ['data.x: expected string, got list']],
    // metallb.io
    ['pool addresses a string', obj('IPAddressPool', { spec: { addresses: '10.0.0.0/24' } }), ['spec.addresses: expected list, got string']],
    ['pool autoAssign a string', obj('IPAddressPool', { spec: { autoAssign: 'yes' } }), ['spec.autoAssign: expected boolean, got string']],
    ['pool priority a string', obj('IPAddressPool', { spec: { serviceAllocation: { priority: 'high' } } }), ['spec.serviceAllocation.priority: expected integer, got string']],
    ['l2 ipAddressPools a number', obj('L2Advertisement', { spec: { ipAddressPools: 7 } }), ['spec.ipAddressPools: expected list, got number']],
    ['l2 ipAddressPoolSelectors a number', obj('L2Advertisement', { spec: { ipAddressPoolSelectors: 7 } }), ['spec.ipAddressPoolSelectors: expected list, got number']],
    ['selector matchLabels a list', obj('L2Advertisement', { spec: { nodeSelectors: [{ matchLabels: ['a'] }] } }), ['spec.nodeSelectors[0].matchLabels: expected map of strings, got list']],
    [
      'selector values a string',
      obj('L2Advertisement', { spec: { nodeSelectors: [{ matchExpressions: [{ key: 'a', operator: 'In', values: 'b' }] }] } }),
      ['spec.nodeSelectors[0].matchExpressions[0].values: expected list, got string'],
    ],
    ['bgpadv aggregationLength a string', obj('BGPAdvertisement', { spec: { aggregationLength: 'str' } }), ['spec.aggregationLength: expected integer, got string']],
    ['bgppeer myASN a string', obj('BGPPeer', { spec: { myASN: '64500' } }), ['spec.myASN: expected integer, got string']],
    ['bgppeer passwordSecret a string', obj('BGPPeer', { spec: { passwordSecret: 's' } }), ['spec.passwordSecret: expected object, got string']],
    ['community communities a number', obj('Community', { spec: { communities: 7 } }), ['spec.communities: expected list, got number']],
    ['community value a number', obj('Community', { spec: { communities: [{ name: 'a', value: 7 }] } }), ['spec.communities[0].value: expected string, got number']],
    ['bfd receiveInterval a string', obj('BFDProfile', { spec: { receiveInterval: '300ms' } }), ['spec.receiveInterval: expected integer, got string']],
    ['l2status interfaces a string', obj('ServiceL2Status', { status: { interfaces: 'str' } }), ['status.interfaces: expected list, got string']],
    ['l2status interfaces [null]', obj('ServiceL2Status', { status: { interfaces: [null] } }), ['status.interfaces[0]: expected object, got null']],
    ['bgpstatus peers a string', obj('ServiceBGPStatus', { status: { peers: 'p' } }), ['status.peers: expected list, got string']],
    ['event involvedObject a string', obj('Event', { involvedObject: 'svc' }), ['involvedObject: expected object, got string']],
  ];
  for (const [name, o, want] of cases) {
    await t.test(name, () => assert.deepEqual(checkShape(o), want));
  }
});

test('checkShape: missing and null optional fields are fine; unknown kinds and fields are not looked at', () => {
  assert.deepEqual(checkShape(obj('Service')), []);
  assert.deepEqual(checkShape(obj('Service', { spec: null, status: { loadBalancer: null } })), []);
  assert.deepEqual(checkShape(obj('Service', { spec: { ports: null, clusterIPs: null, type: null } })), []);
  assert.deepEqual(checkShape(obj('Service', { spec: { ports: [{ port: 80, targetPort: 'http' }], whatever: [1, { x: null }] } })), []);
  assert.deepEqual(checkShape(obj('EndpointSlice', { endpoints: [{ addresses: ['1.1.1.1'], conditions: { ready: null } }] })), []);
  assert.deepEqual(checkShape({ kind: 'Deployment', spec: 'anything' }), []);
  assert.deepEqual(checkShape({ kind: 'toString' }), []);
});

test('checkShape: no false positives on real data (examples, conformance fixtures)', async (t) => {
  await t.test('examples/*.yaml load (the loader runs checkShape on every kept object)', async () => {
    for (const f of readdirSync(join(ROOT, 'examples')).filter((n) => n.endsWith('.yaml'))) {
      const state = await loadSnapshot([join(ROOT, 'examples', f)]);
      for (const list of Object.values(state) as KubeObject[][]) for (const o of list) assert.deepEqual(checkShape(o), [], `${f}: ${o.kind} ${o.metadata?.name}`);
    }
  });
  await t.test('every manifest in test/reference/conformance/**/*.yaml', () => {
    const files: string[] = [];
    const walkDir = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walkDir(join(d, e.name));
        else if (/\.ya?ml$/.test(e.name)) files.push(join(d, e.name));
      }
    };
    walkDir(join(SHARED, 'conformance'));
    assert.ok(files.length >= 30, `conformance fixtures found: ${files.length}`);
    let checked = 0;
    const problems: string[] = [];
    for (const f of files) {
      // A manifest is an object with apiVersion and a kept kind; its own sub-objects are not manifests.
      const walk = (v: unknown, where: string): void => {
        if (Array.isArray(v)) {
          for (const [i, x] of v.entries()) walk(x, `${where}[${i}]`);
          return;
        }
        if (v === null || typeof v !== 'object') return;
        const o = v as KubeObject;
        if (typeof o.apiVersion === 'string' && typeof o.kind === 'string' && Object.hasOwn(KIND_TO_LIST, o.kind)) {
          checked++;
          for (const p of checkShape(o)) problems.push(`${f.slice(SHARED.length + 1)} ${where}: ${o.kind}: ${p}`);
          return;
        }
        for (const [k, x] of Object.entries(o)) walk(x, `${where}.${k}`);
      };
      for (const doc of parseAllDocuments(readFileSync(f, 'utf8'))) walk(doc.toJS(), '');
    }
    assert.ok(checked > 1000, `manifests checked: ${checked}`);
    // The only objects an API server could not hold: MetalLB's own "missing pool name" parse cases.
    assert.deepEqual(problems, [
      'conformance/config/parse.yaml .cases[21].manifests[0]: IPAddressPool: metadata.name: expected string, got nothing',
      'conformance/config/parse.yaml .cases[22].manifests[0]: IPAddressPool: metadata.name: expected string, got nothing',
    ]);
    const cases = parse(readFileSync(join(SHARED, 'conformance/config/parse.yaml'), 'utf8')).cases;
    assert.match(cases[21].name, /^no pool name/);
    assert.match(cases[22].name, /^no pool name/);
  });
});

/** One schema node of a CRD's openAPIV3Schema. */
interface CrdSchema {
  type?: string;
  properties?: Record<string, CrdSchema>;
  items?: CrdSchema;
  additionalProperties?: CrdSchema | boolean;
}

const CRD_TYPE: Record<Shape['t'], string> = { str: 'string', int: 'integer', bool: 'boolean', strMap: 'object', list: 'array', obj: 'object' };

test('the metallb.io descriptions agree with the CRD schemas (test/reference/crds), field by field', () => {
  const crds = new Map<string, CrdSchema[]>();
  for (const f of readdirSync(join(SHARED, 'crds')).filter((n) => n.endsWith('.yaml'))) {
    const crd = parse(readFileSync(join(SHARED, 'crds', f), 'utf8'));
    crds.set(
      crd.spec.names.kind,
      crd.spec.versions.map((v: { schema: { openAPIV3Schema: CrdSchema } }) => v.schema.openAPIV3Schema),
    );
  }
  const metallbKinds = Object.keys(KIND_SHAPES).filter((k) => crds.has(k));
  assert.deepEqual(metallbKinds.sort(), ['BFDProfile', 'BGPAdvertisement', 'BGPPeer', 'Community', 'IPAddressPool', 'L2Advertisement', 'ServiceBGPStatus', 'ServiceL2Status']);
  let compared = 0;
  for (const kind of metallbKinds) {
    const versions = crds.get(kind)!;
    // Every described field: present in some served version's schema, with the same type.
    const agree = (shape: Shape, path: string, schemas: CrdSchema[]): void => {
      assert.ok(schemas.length > 0, `${kind} ${path}: not in the CRD`);
      for (const s of schemas) assert.equal(s.type, CRD_TYPE[shape.t], `${kind} ${path}: CRD type ${s.type}, described ${shape.t}`);
      compared++;
      if (shape.t === 'strMap') {
        for (const s of schemas) assert.equal((s.additionalProperties as CrdSchema | undefined)?.type, 'string', `${kind} ${path}: not a string map`);
      } else if (shape.t === 'list') {
        agree(
          shape.of,
          `${path}[]`,
          schemas.map((s) => s.items!),
        );
      } else if (shape.t === 'obj') {
        for (const [k, sub] of Object.entries(shape.fields)) {
          agree(
            sub,
            `${path}.${k}`,
            schemas.flatMap((s) => (s.properties?.[k] ? [s.properties[k]] : [])),
          );
        }
      }
    };
    const { metadata: _metadata, ...fields } = (KIND_SHAPES[kind] as Extract<Shape, { t: 'obj' }>).fields;
    for (const [k, sub] of Object.entries(fields))
      agree(
        sub,
        k,
        versions.flatMap((v) => (v.properties?.[k] ? [v.properties[k]] : [])),
      );
    // And every CRD field below spec/status is described (label selectors as a whole).
    const covered = (s: CrdSchema, shape: Shape | undefined, path: string): void => {
      if (s.type === 'object' && !s.properties && !s.additionalProperties) return; // a free-form object (an empty status)
      assert.ok(shape, `${kind} ${path}: in the CRD but not described`);
      if (shape.t === 'obj') for (const [k, sub] of Object.entries(s.properties ?? {})) covered(sub, shape.fields[k], `${path}.${k}`);
      if (shape.t === 'list' && s.items) covered(s.items, shape.of, `${path}[]`);
    };
    for (const v of versions) for (const k of ['spec', 'status']) if (v.properties?.[k]) covered(v.properties[k], fields[k], k);
  }
  assert.ok(compared > 100, `fields compared: ${compared}`);
});
