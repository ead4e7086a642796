/**
 * Shape checks of loaded Kubernetes objects: the types of the fields metallb-ts reads, per kind,
 * so a hand-trimmed or hand-written snapshot with `ports: "80"` or `ingress: {ip: …}` is reported
 * as bad input (one line, naming the field) instead of crashing deep inside the core.
 *
 * A tiny declarative DSL (`str`, `int`, `bool`, `strMap`, `list(x)`, `obj({...})`), not a JSON
 * schema engine. Rules, as the API server would have them:
 * - a field that is missing or `null` is fine (Kubernetes decodes `null` as "unset"; CRD pruning
 *   drops it), except the required `metadata.name`: the API server cannot hold an object without one;
 * - list items and string-map values must have their type (no `null`: a dump never shows one);
 * - fields not described are not looked at (they pass through untouched).
 *
 * The metallb.io descriptions follow the CRDs' OpenAPI schemas (MetalLB v0.16.1); a unit test checks
 * they agree. Pure: no I/O.
 */
import type { KubeObject } from './kube.ts';

/** One node of a shape description. */
export type Shape =
  | { readonly t: 'str' }
  | { readonly t: 'int' }
  | { readonly t: 'bool' }
  | { readonly t: 'strMap' }
  | { readonly t: 'list'; readonly of: Shape }
  | {
      readonly t: 'obj';
      readonly fields: Readonly<Record<string, Shape>>;
      /** `fields` as entries, in order (checkShape walks them for every object loaded). */
      readonly entries: ReadonlyArray<readonly [string, Shape]>;
      readonly required?: readonly string[];
    };

/** A string. */
export const str: Shape = { t: 'str' };
/** An integer (a JSON number without fraction). */
export const int: Shape = { t: 'int' };
/** `true` or `false`. */
export const bool: Shape = { t: 'bool' };
/** An object whose values are strings (labels, annotations, Secret data). */
export const strMap: Shape = { t: 'strMap' };
/** A list whose items have shape `of`. */
export function list(of: Shape): Shape {
  return { t: 'list', of };
}
/** An object with the described `fields` (others are not checked); `required` must be present, non-null, non-empty. */
export function obj(fields: Record<string, Shape>, required: readonly string[] = []): Shape {
  const entries = Object.entries(fields);
  return required.length > 0 ? { t: 'obj', fields, entries, required } : { t: 'obj', fields, entries };
}

const metadata = obj(
  {
    name: str,
    namespace: str,
    labels: strMap,
    annotations: strMap,
    uid: str,
    creationTimestamp: str,
  },
  ['name'],
);
const conditions = list(obj({ type: str, status: str }));
const selector = obj({ matchLabels: strMap, matchExpressions: list(obj({ key: str, operator: str, values: list(str) })) });
const selectors = list(selector);

/** The shape of each kind the loader keeps, with the fields metallb-ts reads. */
export const KIND_SHAPES: Readonly<Record<string, Shape>> = {
  Service: obj({
    metadata,
    spec: obj({
      type: str,
      loadBalancerIP: str,
      loadBalancerClass: str,
      externalTrafficPolicy: str,
      ipFamilyPolicy: str,
      ports: list(obj({ name: str, port: int, protocol: str, nodePort: int })),
      selector: strMap,
      clusterIP: str,
      clusterIPs: list(str),
      ipFamilies: list(str),
    }),
    status: obj({ loadBalancer: obj({ ingress: list(obj({ ip: str, hostname: str })) }) }),
  }),
  EndpointSlice: obj({
    metadata,
    addressType: str,
    endpoints: list(
      obj({
        addresses: list(str),
        nodeName: str,
        conditions: obj({ ready: bool, serving: bool, terminating: bool }),
      }),
    ),
  }),
  Node: obj({ metadata, status: obj({ conditions }) }),
  Namespace: obj({ metadata }),
  Pod: obj({ metadata, spec: obj({ nodeName: str }), status: obj({ phase: str, conditions }) }),
  Secret: obj({ metadata, type: str, data: strMap, stringData: strMap }),
  ConfigMap: obj({ metadata, data: strMap }),
  Event: obj({
    metadata,
    involvedObject: obj({ kind: str, namespace: str, name: str, uid: str }),
    reason: str,
    message: str,
    type: str,
    lastTimestamp: str,
    eventTime: str,
  }),
  IPAddressPool: obj({
    metadata,
    spec: obj({
      addresses: list(str),
      autoAssign: bool,
      avoidBuggyIPs: bool,
      serviceAllocation: obj({ priority: int, namespaces: list(str), namespaceSelectors: selectors, serviceSelectors: selectors }),
    }),
    status: obj({ assignedIPv4: int, assignedIPv6: int, availableIPv4: int, availableIPv6: int }),
  }),
  L2Advertisement: obj({
    metadata,
    spec: obj({
      ipAddressPools: list(str),
      ipAddressPoolSelectors: selectors,
      nodeSelectors: selectors,
      serviceSelectors: selectors,
      interfaces: list(str),
    }),
  }),
  BGPAdvertisement: obj({
    metadata,
    spec: obj({
      aggregationLength: int,
      aggregationLengthV6: int,
      localPref: int,
      communities: list(str),
      ipAddressPools: list(str),
      ipAddressPoolSelectors: selectors,
      nodeSelectors: selectors,
      peers: list(str),
      serviceSelectors: selectors,
    }),
  }),
  BGPPeer: obj({
    metadata,
    spec: obj({
      myASN: int,
      peerASN: int,
      localASN: int,
      dynamicASN: str,
      peerAddress: str,
      peerPort: int,
      interface: str,
      sourceAddress: str,
      routerID: str,
      holdTime: str,
      keepaliveTime: str,
      connectTime: str,
      nodeSelectors: selectors,
      password: str,
      passwordSecret: obj({ name: str, namespace: str }),
      bfdProfile: str,
      ebgpMultiHop: bool,
      enableGracefulRestart: bool,
      vrf: str,
      disableMP: bool,
      dualStackAddressFamily: bool,
    }),
  }),
  Community: obj({ metadata, spec: obj({ communities: list(obj({ name: str, value: str })) }) }),
  BFDProfile: obj({
    metadata,
    spec: obj({
      receiveInterval: int,
      transmitInterval: int,
      detectMultiplier: int,
      echoInterval: int,
      echoMode: bool,
      passiveMode: bool,
      minimumTtl: int,
    }),
  }),
  ServiceL2Status: obj({
    metadata,
    status: obj({ node: str, serviceName: str, serviceNamespace: str, interfaces: list(obj({ name: str })) }),
  }),
  ServiceBGPStatus: obj({
    metadata,
    status: obj({ node: str, serviceName: str, serviceNamespace: str, peers: list(str) }),
  }),
};

const EXPECTED: Record<Shape['t'], string> = {
  str: 'string',
  int: 'integer',
  bool: 'boolean',
  strMap: 'map of strings',
  list: 'list',
  obj: 'object',
};

/** What a value is, in words: `null`, `string`, `number`, `boolean`, `list` or `object`. */
function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  return typeof v;
}

/** `a.b`, `a[0]`, `a["x.y/z"]`: a JSON path step. */
function step(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (/^[A-Za-z_$][\w$]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

/** The JSON path of the keys on `stack` (built only when a problem is reported). */
function pathOf(stack: readonly (string | number)[], key?: string | number): string {
  let path = '';
  for (const k of stack) path = step(path, k);
  return key === undefined ? path : step(path, key);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A check of one value against one shape node: appends its problems to `out`; `stack` holds the
 * keys leading to the value (pushed and popped in place; a path is built only for a problem).
 */
type Checker = (v: unknown, stack: (string | number)[], out: string[]) => void;

/** Each shape node's checker, built once (checkShape runs for every object loaded: 10,000 in a large dump). */
const checkers = new WeakMap<Shape, Checker>();

function mismatch(shape: Shape, v: unknown, stack: readonly (string | number)[], out: string[]): void {
  out.push(`${pathOf(stack)}: expected ${EXPECTED[shape.t]}, got ${typeOf(v)}`);
}

/** The checker of `shape` (see Checker): the rules of the module's description, one closure per node. */
function checkerOf(shape: Shape): Checker {
  let c = checkers.get(shape);
  if (c) return c;
  switch (shape.t) {
    case 'str':
      c = (v, stack, out) => {
        if (typeof v !== 'string') mismatch(shape, v, stack, out);
      };
      break;
    case 'bool':
      c = (v, stack, out) => {
        if (typeof v !== 'boolean') mismatch(shape, v, stack, out);
      };
      break;
    case 'int':
      c = (v, stack, out) => {
        if (typeof v !== 'number') mismatch(shape, v, stack, out);
        else if (!Number.isInteger(v)) out.push(`${pathOf(stack)}: expected integer, got number (${v})`);
      };
      break;
    case 'strMap':
      c = (v, stack, out) => {
        if (!isPlainObject(v)) {
          mismatch(shape, v, stack, out);
          return;
        }
        for (const k in v) {
          if (typeof v[k] !== 'string') out.push(`${pathOf(stack, k)}: expected string, got ${typeOf(v[k])}`);
        }
      };
      break;
    case 'list': {
      const item = checkerOf(shape.of);
      c = (v, stack, out) => {
        if (!Array.isArray(v)) {
          mismatch(shape, v, stack, out);
          return;
        }
        for (let i = 0; i < v.length; i++) {
          stack.push(i);
          item(v[i], stack, out);
          stack.pop();
        }
      };
      break;
    }
    case 'obj': {
      const keys = shape.entries.map(([k]) => k);
      const fields = shape.entries.map(([, f]) => checkerOf(f));
      const required = shape.required;
      c = (v, stack, out) => {
        if (!isPlainObject(v)) {
          mismatch(shape, v, stack, out);
          return;
        }
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i]!;
          const x = v[k];
          if (x === undefined || x === null) continue;
          stack.push(k);
          fields[i]!(x, stack, out);
          stack.pop();
        }
        if (required)
          for (const k of required) {
            const x = v[k];
            if (x === undefined || x === null || x === '') {
              const want = shape.fields[k] ? EXPECTED[shape.fields[k].t] : 'a value';
              out.push(`${pathOf(stack, k)}: expected ${x === '' ? 'non-empty ' : ''}${want}, got ${x === '' ? 'empty string' : x === null ? 'null' : 'nothing'}`);
            }
          }
      };
      break;
    }
  }
  checkers.set(shape, c);
  return c;
}

/**
 * The shape problems of `o` (a loaded object of a kept kind), each as
 * `<json path>: expected <type>, got <type>` (e.g. `spec.ports[0].port: expected integer, got string`),
 * in document order of the description; empty when the object is fine or its kind is not described.
 * A missing `metadata` counts as a missing `metadata.name`.
 */
export function checkShape(o: KubeObject): string[] {
  if (typeof o.kind !== 'string' || !Object.hasOwn(KIND_SHAPES, o.kind)) return [];
  const shape = KIND_SHAPES[o.kind]!;
  const out: string[] = [];
  if (o.metadata === undefined || o.metadata === null) out.push('metadata.name: expected string, got nothing');
  checkerOf(shape)(o, [], out);
  return out;
}
