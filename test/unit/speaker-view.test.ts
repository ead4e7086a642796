// The speaker view: /debug/members → the election's live speakers, which speaker pod discovery asks
// (and on which port), why it falls back, and how explain/whois say which view they used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  discoverSpeakerView, failureReason, isMembersView, speakerCandidates, speakerMetricsPort, speakersFromView,
  type ApiGet, type MembersView,
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

const pod = (name: string, o: { node?: string; phase?: string; ip?: string; ready?: boolean; deleting?: boolean; labels?: Record<string, string>; containers?: unknown[] } = {}): Pod => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name, namespace: 'metallb-system', labels: o.labels ?? { app: 'metallb', component: 'speaker' }, ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { nodeName: o.node ?? `node-${name}`, containers: o.containers ?? [{ name: 'speaker', ports: [{ name: 'monitoring', containerPort: 7472 }] }] },
  status: { phase: o.phase ?? 'Running', ...(o.ip === '' ? {} : { podIP: o.ip ?? '10.0.0.1' }), conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
});

test('metrics port: the container port named monitoring, else --port, else the implementation default', () => {
  const cases: Array<[string, Pod, number]> = [
    ['MetalLB manifest: monitoring 7472', pod('a'), 7472],
    ['deploy/speaker.yaml: monitoring 9120', pod('a', { containers: [{ args: ['speaker', '--port=9120'], ports: [{ name: 'monitoring', containerPort: 9120 }] }] }), 9120],
    ['monitoring on the second container', pod('a', { containers: [{ name: 'frr' }, { ports: [{ name: 'monitoring', containerPort: 7473 }] }] }), 7473],
    ['a UDP port named monitoring does not count', pod('a', { containers: [{ ports: [{ name: 'monitoring', containerPort: 1, protocol: 'UDP' }] }] }), 7472],
    ['--port=N', pod('a', { containers: [{ args: ['--port=8000'] }] }), 8000],
    ['--port N', pod('a', { containers: [{ args: ['--port', '8001'] }] }), 8001],
    ['our image without --port: 9120', pod('a', { containers: [{ args: ['speaker', '--log-level=info'] }] }), 9120],
    ['app=metallb-ts without ports: 9120', pod('a', { labels: { app: 'metallb-ts', component: 'speaker' }, containers: [{}] }), 9120],
    ['MetalLB without ports: 7472', pod('a', { containers: [{ args: ['--log-level=info'] }] }), 7472],
  ];
  for (const [name, p, want] of cases) assert.equal(speakerMetricsPort(p), want, name);
});

test('discovery asks Running pods with an IP, Ready first, then by node; --node keeps that node only', () => {
  const pods = [
    pod('z', { node: 'n1', ready: false }),
    pod('y', { node: 'n3' }),
    pod('x', { node: 'n2' }),
    pod('pending', { phase: 'Pending' }),
    pod('noip', { ip: '' }),
    pod('gone', { deleting: true }),
  ];
  assert.deepEqual(speakerCandidates(pods).map((p) => p.metadata!.name), ['x', 'y', 'z']);
  assert.deepEqual(speakerCandidates(pods, 'n1').map((p) => p.metadata!.name), ['z']);
  assert.deepEqual(speakerCandidates(pods, 'n9'), []);
});

const VIEW: MembersView = { self: 'node-x', members: [member('node-x', 'alive')] };

/** A fake API server: the pod list, then one answer (or error) per proxied pod. */
function fakeGet(pods: Pod[] | Error, answers: Record<string, unknown>): { get: ApiGet; calls: string[] } {
  const calls: string[] = [];
  const get: ApiGet = async (path, opts) => {
    calls.push(path + (opts.query ? `?${new URLSearchParams(opts.query)}` : ''));
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
  return { get, calls };
}

const httpError = (statusCode: number, message: string) => Object.assign(new Error(message), { statusCode });

test('discovery: the first pod that answers, through the pod proxy on its metrics port', async () => {
  const { get, calls } = fakeGet([pod('y', { node: 'n3', ip: '10.0.0.3' }), pod('x', { node: 'n2', ip: '10.0.0.2' })], { x: VIEW, y: VIEW });
  const r = await discoverSpeakerView(get, { namespace: 'metallb-system' });
  assert.deepEqual(r, { ok: true, view: VIEW, from: { via: 'pod-proxy', address: '10.0.0.2:7472', pod: 'metallb-system/x', node: 'n2' } });
  assert.deepEqual(calls, [
    '/api/v1/namespaces/metallb-system/pods?labelSelector=component%3Dspeaker',
    '/api/v1/namespaces/metallb-system/pods/x:7472/proxy/debug/members',
  ]);
});

test('discovery falls back with the reason: no pod, or each pod tried and its error', async () => {
  const cases: Array<[string, Pod[] | Error, Record<string, unknown>, { node?: string; selector?: string; maxPods?: number }, RegExp]> = [
    ['no speaker pods', [], {}, {}, /^no speaker reachable: no Running speaker pod matches component=speaker in metallb-system$/],
    ['none on the node', [pod('x')], {}, { node: 'n9' }, /^no speaker reachable: no Running speaker pod matches component=speaker in metallb-system on node n9$/],
    ['a MetalLB speaker: 404', [pod('x', { node: 'n2' })], { x: httpError(404, 'not found') }, {},
      /^no speaker reachable: pod metallb-system\/x \(node n2\) port 7472: HTTP 404: not found$/],
    ['connection refused then not a view', [pod('x', { node: 'n1' }), pod('y', { node: 'n2' })],
      { x: httpError(503, 'error trying to reach service: dial tcp 10.0.0.1:7472: connect: connection refused'), y: { hello: 1 } }, {},
      /^no speaker reachable: pod metallb-system\/x \(node n1\) port 7472: HTTP 503: error trying to reach service: dial tcp 10\.0\.0\.1:7472: connect: connection refused; pod metallb-system\/y \(node n2\) port 7472: \/debug\/members did not answer a member view$/],
    ['no pods/proxy right', [pod('x', { node: 'n1' })], { x: httpError(403, 'pods "x" is forbidden') }, {}, /HTTP 403: pods "x" is forbidden \(reading a speaker through the API server needs get on pods\/proxy\)$/],
    ['only maxPods are tried', [pod('a'), pod('b'), pod('c')], { a: httpError(503, 'x'), b: httpError(503, 'x'), c: VIEW }, { maxPods: 2 }, /; pod metallb-system\/b \(node node-b\) port 7472: HTTP 503: x \(1 more not tried\)$/],
    ['the pod list fails', httpError(403, 'pods is forbidden'), {}, {}, /^no speaker reachable: cannot list the speaker pods \(component=speaker in metallb-system\): HTTP 403: pods is forbidden/],
  ];
  for (const [name, pods, answers, o, want] of cases) {
    const { get } = fakeGet(pods, answers);
    const r = await discoverSpeakerView(get, { namespace: 'metallb-system', ...o });
    assert.equal(r.ok, false, name);
    assert.match((r as { reason: string }).reason, want, name);
  }
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
});

test('a selector the API server rejects is bad input (exit 2), not a fallback', async () => {
  const { get } = fakeGet(httpError(400, 'unable to parse requirement: found \'=\', expected: identifier'), {});
  await assert.rejects(discoverSpeakerView(get, { namespace: 'metallb-system', selector: '==' }), (err: unknown) => {
    assert.ok(err instanceof UserError && err.exitCode === 2);
    assert.match(err.message, /^invalid --speaker-selector "==": HTTP 400: unable to parse requirement/);
    return true;
  });
});

test('failureReason: HTTP status and message, socket code, timeout', () => {
  assert.equal(failureReason(httpError(503, 'a\n b')), 'HTTP 503: a b');
  assert.equal(failureReason(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })), 'ECONNREFUSED');
  assert.equal(failureReason(Object.assign(new Error('x'), { code: 'ETIMEDOUT' }), 2000), 'no answer within 2000 ms');
  assert.equal(failureReason(Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNRESET' } })), 'ECONNRESET');
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
    [{ source: 'memberlist', nodes: ['a', 'b'], from: { via: 'pod-proxy', address: '10.0.0.1:7472', pod: 'metallb-system/speaker-x', node: 'a' } },
      '2 alive (memberlist of the speaker on node a (pod metallb-system/speaker-x, through the API server)): a, b'],
    [{ source: 'memberlist', nodes: ['a'], from: { via: 'address', address: '127.0.0.1:9120', pod: null, node: 'a' } },
      '1 alive (memberlist of speaker 127.0.0.1:9120 (node a)): a'],
    [{ source: 'memberlist-disabled', nodes: null, from: { via: 'address', address: '127.0.0.1:9120', pod: null, node: null } },
      'every node (memberlist off on speaker 127.0.0.1:9120)'],
    [{ source: 'speaker-pods', nodes: ['a'], fallback: 'no speaker reachable: no Running speaker pod matches component=speaker in metallb-system' },
      '1 alive (speaker-pods; no speaker reachable: no Running speaker pod matches component=speaker in metallb-system): a'],
    [{ source: 'all-nodes', nodes: null }, 'every node (all-nodes)'],
  ];
  for (const [sp, want] of cases) assert.equal(speakersText(sp), want);
});

test('explain and whois -f --speaker HOST:PORT use that speaker\'s view and say so; unreachable: exit 3; bad value: exit 2', async () => {
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
