// The speaker view: /debug/members → the election's live speakers, which speaker pod discovery asks
// (and on which port), why it falls back, and how explain/whois say which view they used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  discoverSpeakerView,
  failureReason,
  fetchMembers,
  isMembersView,
  isMetalLBSpeaker,
  membersViewProblem,
  parseSpeakerAddress,
  speakerCandidates,
  speakerMetricsPort,
  speakersFromView,
  type ApiGet,
  type MembersView,
} from '../../src/kube/speaker-view.ts';
import type { Pod } from '../../src/core/kube.ts';
import { diagnosticContext, explainService } from '../../src/core/explain/index.ts';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { speakersText } from '../../src/render/explain.ts';
import { runCliAsync, ROOT } from '../helpers/cli.ts';
import { join } from 'node:path';
import { UserError } from '../../src/core/errors.ts';

const EXAMPLE = join(ROOT, 'examples/cluster.yaml');

const member = (name: string, state: 'alive' | 'suspect' | 'dead' | 'left') => ({ name, address: `10.0.0.${name.length}`, port: 7946, state, incarnation: 1 });

test('view → speakers: alive and suspect members (memberlist Members()), sorted; memberlist off → every Node (null)', () => {
  const cases: Array<[string, MembersView, string[] | null]> = [
    ['alive and suspect count, dead and left do not', { self: 'b', members: [member('c', 'dead'), member('b', 'alive'), member('a', 'suspect'), member('d', 'left')] }, ['a', 'b']],
    ['no members (not started yet)', { self: 'a', members: [] }, []],
    ['a name twice counts once', { self: 'a', members: [member('a', 'alive'), member('a', 'suspect')] }, ['a']],
    ['memberlist off: every Node, not the list printed', { memberlist: false, alive: ['x', 'y'] }, null],
  ];
  for (const [name, view, want] of cases) assert.deepEqual(speakersFromView(view), want, name);
});

test('isMembersView accepts the two bodies the speaker serves, nothing else', () => {
  const cases: Array<[unknown, boolean]> = [
    [{ self: 'a', members: [member('a', 'alive')] }, true],
    [{ memberlist: false, alive: ['a'] }, true],
    [{ members: [] }, false],
    [{ self: 'a', members: [{ name: 1 }] }, false],
    [{ memberlist: true, alive: [] }, false],
    [{ memberlist: false, alive: [1] }, false],
    ['not found', false],
    [null, false],
  ];
  for (const [v, want] of cases) assert.equal(isMembersView(v), want, JSON.stringify(v));
});

test('membersViewProblem checks every field of every member and names the first one wrong', () => {
  const ok = member('a', 'alive');
  const cases: Array<[unknown, string | null]> = [
    [{ self: 'a', members: [ok, ok] }, null],
    [{ memberlist: false, alive: [] }, null],
    [{ self: 'a', members: [ok, { ...ok, address: undefined }] }, 'members[1].address is not a string'],
    [{ self: 'a', members: [ok, ok, ok, { ...ok, address: 167772161 }] }, 'members[3].address is not a string'],
    [{ self: 'a', members: [{ ...ok, name: null }] }, 'members[0].name is not a string'],
    [{ self: 'a', members: [{ ...ok, port: '7946' }] }, 'members[0].port is not a port number'],
    [{ self: 'a', members: [{ ...ok, port: 7946.5 }] }, 'members[0].port is not a port number'],
    [{ self: 'a', members: [{ ...ok, port: 70000 }] }, 'members[0].port is not a port number'],
    [{ self: 'a', members: [{ ...ok, state: 'zombie' }] }, 'members[0].state is not alive, suspect, dead or left'],
    [{ self: 'a', members: [{ ...ok, incarnation: -1 }] }, 'members[0].incarnation is not a non-negative integer'],
    [{ self: 'a', members: [{ ...ok, incarnation: '1' }] }, 'members[0].incarnation is not a non-negative integer'],
    [{ self: 'a', members: [null] }, 'members[0] is not an object'],
    [{ self: 1, members: [] }, 'self is not a string'],
    [{ self: 'a', members: {} }, 'members is not a list'],
    [{ memberlist: false, alive: ['a', 2] }, 'alive[1] is not a string'],
    [{ memberlist: false }, 'alive is not a list'],
    [{ hello: 'world' }, 'neither members nor memberlist: false'],
    [[1], 'not a JSON object'],
  ];
  for (const [v, want] of cases) assert.equal(membersViewProblem(v), want, JSON.stringify(v));
});

test('--speaker: HOST:PORT with an IPv4 literal, a bracketed IPv6 literal or a DNS name, port 1..65535', () => {
  const good: Array<[string, string, number]> = [
    ['127.0.0.1:9120', '127.0.0.1', 9120],
    [' 10.0.0.5:1 ', '10.0.0.5', 1],
    ['[::1]:65535', '::1', 65535],
    ['[fd00::1:2]:9120', 'fd00::1:2', 9120],
    ['speaker.local:9120', 'speaker.local', 9120],
    ['localhost:80', 'localhost', 80],
    ['a-b.c0.example.:9120', 'a-b.c0.example.', 9120],
    ['speaker-0.metallb-system.svc:9120', 'speaker-0.metallb-system.svc', 9120],
  ];
  for (const [arg, host, port] of good) assert.deepEqual(parseSpeakerAddress(arg), { host, port }, arg);
  const bad = [
    '127.0.0.1#:18011',
    'a@host:1',
    'host?:1',
    'host/x:1',
    'host:0',
    'host:65536',
    'host:123456',
    'host:',
    ':1',
    'host',
    'nohost',
    'http://x:1',
    '[::1]',
    '::1:9120',
    '[fe80::1%eth0]:1',
    '[zz::1]:1',
    '999.1.1.1:1',
    '1.2.3:1',
    '0x7f.1:1',
    '-a.b:1',
    'a-.b:1',
    'a..b:1',
    'a_b:1',
    'host:+1',
    'host:1 2',
    'ho st:1',
    `${'a'.repeat(64)}.b:1`,
  ];
  for (const arg of bad) {
    assert.throws(
      () => parseSpeakerAddress(arg),
      (err: unknown) => {
        assert.ok(err instanceof UserError && err.exitCode === 2, arg);
        assert.match(err.message, /^invalid --speaker ".*": expected HOST:PORT/, arg);
        return true;
      },
      arg,
    );
  }
});

const pod = (name: string, o: { node?: string; phase?: string; ip?: string; ready?: boolean; deleting?: boolean; labels?: Record<string, string>; containers?: unknown[] } = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'metallb-system', labels: o.labels ?? { app: 'metallb', component: 'speaker' }, ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { nodeName: o.node ?? `node-${name}`, containers: o.containers ?? [{ name: 'speaker', ports: [{ name: 'monitoring', containerPort: 7472 }] }] },
  status: { phase: o.phase ?? 'Running', ...(o.ip === '' ? {} : { podIP: o.ip ?? '10.0.0.1' }), conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
});

test("metrics port: the container port named monitoring, else --port, else 9120 (MetalLB's and metallb-ts's --port default)", () => {
  const metallb = {
    name: 'speaker',
    image: 'quay.io/metallb/speaker:v0.16.1',
    args: ['--port=9120', '--log-level=info'],
    ports: [
      { name: 'metricshttps', containerPort: 9120 },
      { name: 'memberlist-tcp', containerPort: 7946 },
    ],
  };
  const cases: Array<[string, Pod, number]> = [
    ['a container port named monitoring', pod('a'), 7472],
    ['deploy/speaker.yaml: monitoring 9120', pod('a', { containers: [{ args: ['speaker', '--port=9120'], ports: [{ name: 'monitoring', containerPort: 9120 }] }] }), 9120],
    ['monitoring on the second container', pod('a', { containers: [{ name: 'frr' }, { ports: [{ name: 'monitoring', containerPort: 7473 }] }] }), 7473],
    ['a UDP port named monitoring does not count', pod('a', { containers: [{ ports: [{ name: 'monitoring', containerPort: 1, protocol: 'UDP' }] }] }), 9120],
    ['--port=N', pod('a', { containers: [{ args: ['--port=8000'] }] }), 8000],
    ['--port N', pod('a', { containers: [{ args: ['--port', '8001'] }] }), 8001],
    ['MetalLB v0.16.1 manifest: metricshttps, --port=9120', pod('a', { containers: [metallb] }), 9120],
    ['our image without --port: 9120', pod('a', { containers: [{ args: ['speaker', '--log-level=info'] }] }), 9120],
    ['nothing to go by: 9120', pod('a', { containers: [{}] }), 9120],
  ];
  for (const [name, p, want] of cases) assert.equal(speakerMetricsPort(p), want, name);
  const which: Array<[string, Pod, boolean]> = [
    ['MetalLB v0.16.1 manifest', pod('a', { containers: [metallb] }), true],
    ['a port named metricshttps', pod('a', { containers: [{ ports: [{ name: 'metricshttps', containerPort: 9120 }] }] }), true],
    ['image metallb/speaker', pod('a', { containers: [{ image: 'metallb/speaker:main' }] }), true],
    ['image by digest', pod('a', { containers: [{ image: 'quay.io/metallb/speaker@sha256:00' }] }), true],
    ['metallb-ts', pod('a', { containers: [{ image: 'metallb-ts:0.1.0', ports: [{ name: 'monitoring', containerPort: 9120 }] }] }), false],
    ['another image named speaker', pod('a', { containers: [{ image: 'example.com/notmetallb/speaker:1' }] }), false],
  ];
  for (const [name, p, want] of which) assert.equal(isMetalLBSpeaker(p), want, name);
});

test('discovery asks Running pods with an IP, Ready first, then by node; --node keeps that node only', () => {
  const pods = [pod('z', { node: 'n1', ready: false }), pod('y', { node: 'n3' }), pod('x', { node: 'n2' }), pod('pending', { phase: 'Pending' }), pod('noip', { ip: '' }), pod('gone', { deleting: true })];
  assert.deepEqual(
    speakerCandidates(pods).map((p) => p.metadata!.name),
    ['x', 'y', 'z'],
  );
  assert.deepEqual(
    speakerCandidates(pods, 'n1').map((p) => p.metadata!.name),
    ['z'],
  );
  assert.deepEqual(speakerCandidates(pods, 'n9'), []);
});

const VIEW: MembersView = { self: 'node-x', members: [member('node-x', 'alive')] };

/** A fake API server: the pod list, then one answer (or error) per proxied pod. */
function fakeGet(pods: Pod[] | Error, answers: Record<string, unknown>): { get: ApiGet; calls: string[]; opts: Array<Parameters<ApiGet>[1]> } {
  const calls: string[] = [];
  const seen: Array<Parameters<ApiGet>[1]> = [];
  const get: ApiGet = async (path, opts) => {
    calls.push(path + (opts.query ? `?${new URLSearchParams(opts.query)}` : ''));
    seen.push(opts);
    if (!path.includes('/proxy/')) {
      if (pods instanceof Error) throw pods;
      return { items: pods };
    }
    const name = /pods\/([^/:]+):/.exec(path)![1]!;
    const a = answers[name];
    if (a instanceof Error || (a && typeof a === 'object' && 'statusCode' in a)) throw a;
    if (a === 'hang') return new Promise((_, reject) => setTimeout(() => reject(Object.assign(new Error('no answer'), { code: 'ETIMEDOUT' })), opts.timeoutMs));
    return a;
  };
  return { get, calls, opts: seen };
}

const httpError = (statusCode: number, message: string) => Object.assign(new Error(message), { statusCode });

test('discovery: the first pod that answers, through the pod proxy on its metrics port', async () => {
  const { get, calls, opts } = fakeGet([pod('y', { node: 'n3', ip: '10.0.0.3' }), pod('x', { node: 'n2', ip: '10.0.0.2' })], { x: VIEW, y: VIEW });
  const r = await discoverSpeakerView(get, { namespace: 'metallb-system' });
  assert.deepEqual(r, { ok: true, view: VIEW, from: { via: 'pod-proxy', address: '10.0.0.2:7472', pod: 'metallb-system/x', node: 'n2' } });
  assert.deepEqual(calls, ['/api/v1/namespaces/metallb-system/pods?labelSelector=component%3Dspeaker', '/api/v1/namespaces/metallb-system/pods/x:7472/proxy/debug/members']);
  // The speaker's answer: 2 s for the whole of it (not only between bytes), at most 1 MiB.
  assert.deepEqual(opts[1], { timeoutMs: 2000, deadlineMs: 2000, maxBytes: 1024 * 1024 });
  assert.equal(opts[0]!.deadlineMs, 30_000);
});

test('discovery falls back with the reason: no pod, or each pod tried and its error', async () => {
  const cases: Array<[string, Pod[] | Error, Record<string, unknown>, { node?: string; selector?: string; maxPods?: number }, RegExp]> = [
    ['no speaker pods', [], {}, {}, /^no speaker reachable: no Running speaker pod matches component=speaker in metallb-system$/],
    ['none on the node', [pod('x')], {}, { node: 'n9' }, /^no speaker reachable: no Running speaker pod matches component=speaker in metallb-system on node n9$/],
    ['a MetalLB speaker: 404', [pod('x', { node: 'n2' })], { x: httpError(404, 'not found') }, {}, /^no speaker reachable: pod metallb-system\/x \(node n2\) port 7472: HTTP 404: not found$/],
    [
      'connection refused then not a view',
      [pod('x', { node: 'n1' }), pod('y', { node: 'n2' })],
      { x: httpError(503, 'error trying to reach service: dial tcp 10.0.0.1:7472: connect: connection refused'), y: { hello: 1 } },
      {},
      /^no speaker reachable: pod metallb-system\/x \(node n1\) port 7472: HTTP 503: error trying to reach service: dial tcp 10\.0\.0\.1:7472: connect: connection refused; pod metallb-system\/y \(node n2\) port 7472: \/debug\/members did not answer a member view \(neither members nor memberlist: false\)$/,
    ],
    [
      'a member row without an address',
      [pod('x', { node: 'n1' })],
      { x: { self: 'x', members: [member('x', 'alive'), { name: 'y', state: 'alive', port: 1, incarnation: 1 }] } },
      {},
      /^no speaker reachable: pod metallb-system\/x \(node n1\) port 7472: \/debug\/members did not answer a member view \(members\[1\]\.address is not a string\)$/,
    ],
    [
      'the same error on every pod: said once, the pods together',
      [pod('a', { node: 'n1' }), pod('b', { node: 'n2' }), pod('c', { node: 'n3' })],
      { a: httpError(404, 'not found'), b: httpError(404, 'not found'), c: httpError(404, 'not found') },
      {},
      /^no speaker reachable: pods metallb-system\/a \(node n1\), metallb-system\/b \(node n2\), metallb-system\/c \(node n3\) port 7472: HTTP 404: not found$/,
    ],
    [
      'grouped by error, in the order seen; ports differ: each its own',
      [pod('a', { node: 'n1' }), pod('b', { node: 'n2', containers: [{ args: ['--port=9000'] }] }), pod('c', { node: 'n3' })],
      { a: httpError(404, 'not found'), b: httpError(404, 'not found'), c: httpError(503, 'x') },
      {},
      /^no speaker reachable: pods metallb-system\/a \(node n1\) port 7472, metallb-system\/b \(node n2\) port 9000: HTTP 404: not found; pod metallb-system\/c \(node n3\) port 7472: HTTP 503: x$/,
    ],
    [
      'MetalLB v0.16.1 speakers are not asked: they serve no memberlist view',
      [
        pod('a', { node: 'n1', containers: [{ image: 'quay.io/metallb/speaker:v0.16.1', args: ['--port=9120'], ports: [{ name: 'metricshttps', containerPort: 9120 }] }] }),
        pod('b', { node: 'n2', containers: [{ image: 'quay.io/metallb/speaker:v0.16.1', ports: [{ name: 'metricshttps', containerPort: 9120 }] }] }),
      ],
      {},
      {},
      /^no speaker reachable: pods metallb-system\/a \(node n1\), metallb-system\/b \(node n2\): a MetalLB speaker serves no memberlist view$/,
    ],
    [
      'an unrecognised speaker answering HTTPS only (the pod proxy speaks HTTP)',
      [pod('x', { node: 'n1', containers: [{ args: ['--port=9120'] }] })],
      { x: httpError(400, 'Client sent an HTTP request to an HTTPS server.') },
      {},
      /^no speaker reachable: pod metallb-system\/x \(node n1\) port 9120: it serves HTTPS only: a MetalLB speaker serves no memberlist view$/,
    ],
    ['control characters in an error are escaped', [pod('x', { node: 'n1' })], { x: httpError(502, 'bad \u001b[31mred\u0007') }, {}, /port 7472: HTTP 502: bad \\x1b\[31mred\\x07$/],
    [
      'no pods/proxy right',
      [pod('x', { node: 'n1' })],
      { x: httpError(403, 'pods "x" is forbidden') },
      {},
      /HTTP 403: pods "x" is forbidden \(reading a speaker through the API server needs get on pods\/proxy\)$/,
    ],
    [
      'only maxPods are tried',
      [pod('a'), pod('b'), pod('c')],
      { a: httpError(503, 'x'), b: httpError(503, 'x'), c: VIEW },
      { maxPods: 2 },
      /^no speaker reachable: pods metallb-system\/a \(node node-a\), metallb-system\/b \(node node-b\) port 7472: HTTP 503: x \(1 more not tried\)$/,
    ],
    ['the pod list fails', httpError(403, 'pods is forbidden'), {}, {}, /^no speaker reachable: cannot list the speaker pods \(component=speaker in metallb-system\): HTTP 403: pods is forbidden/],
  ];
  for (const [name, pods, answers, o, want] of cases) {
    const { get, calls } = fakeGet(pods, answers);
    const r = await discoverSpeakerView(get, { namespace: 'metallb-system', ...o });
    assert.equal(r.ok, false, name);
    assert.match((r as { reason: string }).reason, want, name);
    if (name.startsWith('MetalLB')) assert.equal(calls.length, 1, 'only the pod list');
  }
  // The caller's own one-line error for the pod list (members: `cannot list v1 pods at …`) passes as is.
  const own = new UserError('cannot list v1 pods at https://127.0.0.1:1: connection refused', 3);
  await assert.rejects(discoverSpeakerView(fakeGet(own, {}).get, { namespace: 'metallb-system' }), (err) => err === own);
});

test('discovery: a silent pod costs its timeout, progress goes to onSlow, the next pod answers', async () => {
  const { get } = fakeGet([pod('a', { node: 'n1' }), pod('b', { node: 'n2' })], { a: 'hang', b: VIEW });
  const slow: string[] = [];
  const t0 = Date.now();
  const r = await discoverSpeakerView(get, { namespace: 'metallb-system', timeoutMs: 300, slowMs: 100, onSlow: (m) => slow.push(m) });
  assert.ok(Date.now() - t0 >= 290);
  assert.equal(r.ok && r.from.pod, 'metallb-system/b');
  assert.deepEqual(slow, ['asking speaker pod metallb-system/a (node n1) port 7472 for its memberlist view through the API server...']);
  const { get: hang } = fakeGet([pod('a', { node: 'n1' })], { a: 'hang' });
  const none = await discoverSpeakerView(hang, { namespace: 'metallb-system', timeoutMs: 50 });
  assert.deepEqual(none, { ok: false, reason: 'no speaker reachable: pod metallb-system/a (node n1) port 7472: no answer within 50 ms' });
  const { get: hang3 } = fakeGet([pod('a', { node: 'n1' }), pod('b', { node: 'n2' }), pod('c', { node: 'n3' })], { a: 'hang', b: 'hang', c: 'hang' });
  const all = await discoverSpeakerView(hang3, { namespace: 'metallb-system', timeoutMs: 30 });
  assert.deepEqual(all, { ok: false, reason: 'no speaker reachable: pods metallb-system/a (node n1), metallb-system/b (node n2), metallb-system/c (node n3) port 7472: no answer within 30 ms' });
});

test('a selector the API server rejects is bad input (exit 2), not a fallback', async () => {
  const { get } = fakeGet(httpError(400, "unable to parse requirement: found '=', expected: identifier"), {});
  await assert.rejects(discoverSpeakerView(get, { namespace: 'metallb-system', selector: '==' }), (err: unknown) => {
    assert.ok(err instanceof UserError && err.exitCode === 2);
    assert.match(err.message, /^invalid --speaker-selector "==": HTTP 400: unable to parse requirement/);
    return true;
  });
  // No --speaker-selector given: the default is to blame, not the user.
  await assert.rejects(discoverSpeakerView(get, { namespace: 'metallb-system' }), (err: unknown) => {
    assert.ok(err instanceof UserError && err.exitCode === 2);
    assert.match(err.message, /^the API server rejected the default speaker selector "component=speaker": HTTP 400: unable to parse requirement/);
    return true;
  });
});

test('failureReason: HTTP status and message, socket code, timeout', () => {
  assert.equal(failureReason(httpError(503, 'a\n b')), 'HTTP 503: a b');
  assert.equal(failureReason(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })), 'ECONNREFUSED');
  assert.equal(failureReason(Object.assign(new Error('x'), { code: 'ETIMEDOUT' }), 2000), 'no answer within 2000 ms');
  assert.equal(failureReason(Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNRESET' } })), 'ECONNRESET');
  assert.equal(failureReason(Object.assign(new Error('no answer within 300 ms'), { code: 'ETIMEDOUT' })), 'no answer within 300 ms');
  assert.equal(failureReason(Object.assign(new Error('answer larger than 1048576 bytes'), { code: 'ERESPONSETOOLARGE' }), 2000), 'answer larger than 1048576 bytes');
  assert.equal(failureReason(new Error('weird \u009b2J\u007f')), 'weird \\x9b2J\\x7f');
});

test('the context takes the speaker view after --speakers and before the derivation; explain reports its source', async () => {
  const state = await loadSnapshot([EXAMPLE]);
  const svc = state.services.find((s) => s.metadata?.name === 'frontend' && s.metadata.namespace === 'shop')!;
  const cases: Array<[string, Parameters<typeof diagnosticContext>[1], string, string[] | null]> = [
    ['memberlist view', { memberlist: { speakers: ['lab-worker-a'] } }, 'memberlist', ['lab-worker-a']],
    ['memberlist off', { memberlist: { speakers: null } }, 'memberlist-disabled', null],
    ['--speakers wins', { speakers: ['lab-worker-b'], memberlist: { speakers: ['lab-worker-a'] } }, 'flag', ['lab-worker-b']],
    ['nothing: speaker pods', {}, 'speaker-pods', null],
  ];
  for (const [name, opts, source, nodes] of cases) {
    const ctx = diagnosticContext(state, opts);
    assert.equal(ctx.speakersSource, source, name);
    if (nodes !== null || source !== 'speaker-pods') assert.deepEqual(ctx.speakers, nodes, name);
    const e = explainService({ ...ctx, service: svc });
    assert.equal(e.speakers.source, source, name);
  }
  // The winner of the example is lab-worker-b; with only lab-worker-a alive in memberlist it is lab-worker-a.
  const e = explainService({ ...diagnosticContext(state, { memberlist: { speakers: ['lab-worker-a'] } }), service: svc });
  assert.equal(e.announcer, 'lab-worker-a');
  const none = explainService({ ...diagnosticContext(state, { memberlist: { speakers: ['ghost'] } }), service: svc });
  assert.equal(none.announcer, null);
  const ids = none.findings.map((f) => f.id);
  assert.ok(ids.includes('no-live-speakers') && ids.includes('unknown-speaker-nodes'), ids.join());
  assert.match(none.findings.find((f) => f.id === 'no-live-speakers')!.message, /memberlist/);
  assert.match(none.findings.find((f) => f.id === 'unknown-speaker-nodes')!.message, /^the speaker's memberlist has members ghost/);
});

test('the Speakers line names the view: memberlist of which speaker, or the fallback reason', () => {
  const cases: Array<[Parameters<typeof speakersText>[0], string]> = [
    [
      { source: 'memberlist', nodes: ['a', 'b'], from: { via: 'pod-proxy', address: '10.0.0.1:7472', pod: 'metallb-system/speaker-x', node: 'a' } },
      '2 alive (memberlist of the speaker on node a (pod metallb-system/speaker-x, through the API server)): a, b',
    ],
    [{ source: 'memberlist', nodes: ['a'], from: { via: 'address', address: '127.0.0.1:9120', pod: null, node: 'a' } }, '1 alive (memberlist of speaker 127.0.0.1:9120 (node a)): a'],
    [{ source: 'memberlist-disabled', nodes: null, from: { via: 'address', address: '127.0.0.1:9120', pod: null, node: null } }, 'every node (memberlist off on speaker 127.0.0.1:9120)'],
    [
      { source: 'speaker-pods', nodes: ['a'], fallback: 'no speaker reachable: no Running speaker pod matches component=speaker in metallb-system' },
      '1 alive (speaker-pods; no speaker reachable: no Running speaker pod matches component=speaker in metallb-system): a',
    ],
    [{ source: 'all-nodes', nodes: null }, 'every node (all-nodes)'],
  ];
  for (const [sp, want] of cases) assert.equal(speakersText(sp), want);
});

test("explain and whois -f --speaker HOST:PORT use that speaker's view and say so; unreachable: exit 3; bad value: exit 2", async () => {
  let body: unknown = { self: 'lab-worker-a', members: [member('lab-worker-a', 'alive'), member('lab-worker-b', 'dead')] };
  const server = createServer((req, res) => {
    if (req.url === '/debug/members') res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const j = await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', addr, '-o', 'json']);
    assert.equal(j.status, 0, j.stderr);
    const out = JSON.parse(j.stdout);
    assert.deepEqual(out.speakers, { source: 'memberlist', nodes: ['lab-worker-a'], from: { via: 'address', address: addr, pod: null, node: 'lab-worker-a' } });
    assert.equal(out.announcer, 'lab-worker-a');
    const t = await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', addr]);
    assert.match(t.stdout, new RegExp(`^Speakers: +1 alive \\(memberlist of speaker ${addr} \\(node lab-worker-a\\)\\): lab-worker-a$`, 'm'));
    const w = await runCliAsync(['whois', '192.0.2.10', '-f', EXAMPLE, '--speaker', addr, '-o', 'json']);
    assert.equal(w.status, 0, w.stderr);
    const wj = JSON.parse(w.stdout);
    assert.equal(wj.holders[0].announcer, 'lab-worker-a');
    assert.equal(wj.speakers.source, 'memberlist');
    body = { memberlist: false, alive: ['x'] };
    const off = JSON.parse((await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', addr, '-o', 'json'])).stdout);
    assert.deepEqual(off.speakers, { source: 'memberlist-disabled', nodes: null, from: { via: 'address', address: addr, pod: null, node: null } });
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
  const gone = await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', addr]);
  assert.equal(gone.status, 3);
  assert.equal(gone.stdout, '');
  assert.equal(gone.stderr, `metallb-ts: cannot reach speaker ${addr}: ECONNREFUSED\n`);
  for (const [args, re] of [
    [['--speaker', 'nohost'], /^metallb-ts: invalid --speaker "nohost": expected HOST:PORT/],
    [['--speaker', addr, '--speakers', 'a'], /^metallb-ts: --speakers lists the live speakers, --speaker asks a speaker for them: give one or the other$/],
  ] as Array<[string[], RegExp]>) {
    const r = await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, ...args]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr.trimEnd(), re);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1);
  }
});

/** A local speaker stand-in on 127.0.0.1 (port 0: any), answering with `handler`. */
async function standIn(handler: RequestListener, port = 0): Promise<{ addr: string; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    addr: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const exit3 = (re: RegExp) => (err: unknown) => {
  assert.ok(err instanceof UserError && err.exitCode === 3, String(err));
  assert.match(err.message, re);
  assert.ok(!err.message.includes('\n'));
  return true;
};

test('--speaker read: an absolute deadline however the bytes trickle, a size cap, no redirects', async () => {
  const big = JSON.stringify({ self: 'a', members: Array.from({ length: 20000 }, (_, i) => member(`node-${i}`, 'alive')) });
  assert.ok(big.length > 1024 * 1024);
  const s = await standIn((req, res) => {
    if (req.url !== '/debug/members') return void res.writeHead(404).end();
    switch (current) {
      case 'trickle': {
        // One byte every 100 ms, forever: never idle, never done.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const t = setInterval(() => res.write(' '), 100);
        res.on('close', () => clearInterval(t));
        return;
      }
      case 'big-declared':
        return void res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(big.length) }).end(big);
      case 'big-chunked': {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        for (let i = 0; i < big.length; i += 65536) res.write(big.slice(i, i + 65536));
        return void res.end();
      }
      case 'redirect':
        return void res.writeHead(302, { Location: 'http://127.0.0.1:1/debug/members' }).end();
      case 'bad-row':
        return void res.writeHead(200).end(JSON.stringify({ self: 'a', members: [member('a', 'alive'), { name: 'b', address: 7, port: 1, state: 'alive', incarnation: 1 }] }));
      case 'not-json':
        return void res.writeHead(200).end('<html>');
      default:
        return void res.writeHead(200).end(JSON.stringify(VIEW));
    }
  });
  let current = '';
  try {
    current = 'trickle';
    const t0 = Date.now();
    await assert.rejects(fetchMembers(s.addr, { timeoutMs: 600 }), exit3(new RegExp(`^cannot reach speaker ${s.addr}: no answer within 600 ms$`)));
    assert.ok(Date.now() - t0 < 1500, `the deadline holds: ${Date.now() - t0} ms`);
    for (const mode of ['big-declared', 'big-chunked']) {
      current = mode;
      await assert.rejects(fetchMembers(s.addr), exit3(new RegExp(`^speaker ${s.addr}: GET /debug/members: answer larger than 1048576 bytes$`)), mode);
    }
    current = 'redirect';
    await assert.rejects(fetchMembers(s.addr), exit3(/GET \/debug\/members answered 302 \(a redirect: not followed\)$/));
    current = 'bad-row';
    await assert.rejects(fetchMembers(s.addr), exit3(/GET \/debug\/members did not answer a member view \(members\[1\]\.address is not a string\)$/));
    current = 'not-json';
    await assert.rejects(fetchMembers(s.addr), exit3(/did not answer a member view \(not JSON\)$/));
    current = 'ok';
    assert.deepEqual(await fetchMembers(s.addr), VIEW);
    const abort = new AbortController();
    current = 'trickle';
    const asked = fetchMembers(s.addr, { signal: abort.signal });
    setTimeout(() => abort.abort(new Error('stop')), 50);
    await assert.rejects(asked, /^Error: stop$/);
  } finally {
    await s.close();
  }
});

test('--speaker read: ports fetch refuses (6000, 6665, 10080, ...) are asked like any other', async (t) => {
  let s: Awaited<ReturnType<typeof standIn>> | undefined;
  for (const port of [10080, 6000, 6665, 5060]) {
    try {
      s = await standIn((_req, res) => res.writeHead(200).end(JSON.stringify(VIEW)), port);
      break;
    } catch {
      // in use here: try the next one
    }
  }
  if (!s) return t.skip('no fetch-blocked port free on 127.0.0.1');
  try {
    assert.deepEqual(await fetchMembers(s.addr), VIEW);
  } finally {
    await s.close();
  }
});

test('explain/whois --speaker: the Service first, usage conflicts are exit 2, a silent speaker is "no answer within 5000 ms", control characters escaped', async () => {
  let mode = 'ok';
  const s = await standIn((_req, res) => {
    if (mode === 'silent') return; // accepts, never answers
    res.writeHead(200).end(JSON.stringify({ self: 'lab-worker-a\u001b[2J', members: [member('lab-worker-a', 'alive'), member('evil\u001b]0;pwned\u0007\r', 'alive')] }));
  });
  try {
    // The unknown Service is bad input (exit 2), whatever the speaker does; it is looked up first.
    const tBase = Date.now();
    const unknown = await runCliAsync(['explain', 'svc/nonexistent', '-f', EXAMPLE, '--speaker', '127.0.0.1:1']);
    const base = Date.now() - tBase; // the same run against a port that refuses at once
    assert.equal(unknown.status, 2, unknown.stderr);
    assert.equal(unknown.stderr, 'metallb-ts: service default/nonexistent not found in the cluster state\n');
    mode = 'silent';
    const t0 = Date.now();
    const unknownSilent = await runCliAsync(['explain', 'svc/nonexistent', '-f', EXAMPLE, '--speaker', s.addr]);
    assert.equal(unknownSilent.status, 2);
    // not waited for: no slower than the refused run by anything near the 5 s speaker timeout (load-proof)
    const took = Date.now() - t0;
    assert.ok(took < base + 3000, `the speaker request is dropped, not waited for (${took} ms; ${base} ms against a refusing port)`);
    const silent = await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', s.addr]);
    assert.equal(silent.status, 3);
    assert.equal(silent.stderr, `metallb-ts: cannot reach speaker ${s.addr}: no answer within 5000 ms\n`);
    mode = 'ok';
    const text = await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', s.addr]);
    assert.equal(text.status, 0, text.stderr);
    assert.doesNotMatch(text.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, 'no control characters but newlines');
    assert.match(text.stdout, /^Speakers: +2 alive \(memberlist of speaker 127\.0\.0\.1:\d+ \(node lab-worker-a\\x1b\[2J\)\): evil\\x1b\]0;pwned\\x07\\x0d, lab-worker-a$/m);
    assert.match(text.stdout, /the speaker's memberlist has members evil\\x1b\]0;pwned\\x07\\x0d, which is not a Node/);
    const w = await runCliAsync(['whois', '192.0.2.10', '-f', EXAMPLE, '--speaker', s.addr]);
    assert.doesNotMatch(w.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    // JSON keeps the speaker's strings as they are.
    const j = JSON.parse((await runCliAsync(['explain', 'svc/frontend', '-n', 'shop', '-f', EXAMPLE, '--speaker', s.addr, '-o', 'json'])).stdout);
    assert.deepEqual(j.speakers.nodes, ['evil\u001b]0;pwned\u0007\r', 'lab-worker-a']);
  } finally {
    await s.close();
  }
  for (const [args, re] of [
    [['-f', EXAMPLE, '--speaker-selector', 'app=x'], /^metallb-ts: --speaker-selector picks the speaker pods of the live cluster to ask, -f reads a snapshot and asks none: give one or the other$/],
    [['--speaker', '127.0.0.1:1', '--speaker-selector', 'app=x'], /^metallb-ts: --speaker-selector picks the speaker pods to ask through the API server, --speaker names one directly: give one or the other$/],
    [['--speaker', '127.0.0.1:1', '--no-speaker-discovery'], /^metallb-ts: --no-speaker-discovery asks no speaker, --speaker asks one: give one or the other$/],
    [['--speaker-selector', 'app=x', '--no-speaker-discovery'], /^metallb-ts: --speaker-selector picks the speaker pods to ask, --no-speaker-discovery asks none: give one or the other$/],
    [['--speaker-selector', 'app=x', '--speakers', 'a'], /^metallb-ts: --speakers lists the live speakers, --speaker-selector picks the speaker pods to ask for them: give one or the other$/],
    [['-f', EXAMPLE, '--speaker', '127.0.0.1#:18011'], /^metallb-ts: invalid --speaker "127\.0\.0\.1#:18011": expected HOST:PORT/],
    [['-f', EXAMPLE, '--speaker', 'a@host:1'], /^metallb-ts: invalid --speaker "a@host:1": expected HOST:PORT/],
  ] as Array<[string[], RegExp]>) {
    // No kubeconfig anywhere: a usage error comes before any attempt to read the cluster.
    const runs = await Promise.all(
      [
        ['explain', 'svc/frontend', '-n', 'shop'],
        ['whois', '192.0.2.10'],
      ].map((cmd) => runCliAsync([...cmd, '--kubeconfig', '/nonexistent', ...args])),
    );
    for (const r of runs) {
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr.trimEnd(), re, args.join(' '));
      assert.equal(r.stderr.trimEnd().split('\n').length, 1);
    }
  }
});
