// `metallb-ts members`: a local HTTP server on 127.0.0.1 plays the speaker's /debug/members.
import { runCliAsync } from '../helpers/cli.ts';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { speakerURL, type MembersView } from '../../src/commands/members.ts';
import { membersTable } from '../../src/render/members.ts';
import { serveEndpoints } from '../../src/speaker/http.ts';

const VIEW: MembersView = {
  self: 'node-a',
  members: [
    { name: 'node-a', address: '10.0.0.1', port: 7946, state: 'alive', incarnation: 1 },
    { name: 'node-b', address: '10.0.0.2', port: 7946, state: 'suspect', incarnation: 3 },
    { name: 'node-c', address: '10.0.0.3', port: 7946, state: 'dead', incarnation: 2 },
  ],
};

const run = (args: string[]) => runCliAsync(args);

let server: Server;
let addr = '';
let body: unknown = VIEW;

before(async () => {
  server = createServer((req, res) => {
    if (req.url === '/debug/members') res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    else res.writeHead(404).end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((r) => server.close(() => r())));

test('table: NAME ADDRESS STATE INCARNATION, one row per member, exit 0', async () => {
  body = VIEW;
  const r = await run(['members', '--speaker', addr]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const lines = r.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.split(/\s+/));
  assert.deepEqual(lines, [
    ['NAME', 'ADDRESS', 'STATE', 'INCARNATION'],
    ['node-a', '10.0.0.1', 'alive', '1'],
    ['node-b', '10.0.0.2', 'suspect', '3'],
    ['node-c', '10.0.0.3', 'dead', '2'],
  ]);
});

test('-o json prints the view as the speaker serves it; -o wide adds PORT', async () => {
  body = VIEW;
  const j = await run(['members', '--speaker', addr, '-o', 'json']);
  assert.equal(j.status, 0, j.stderr);
  assert.deepEqual(JSON.parse(j.stdout), VIEW);
  const w = await run(['members', '--speaker', addr, '-o', 'wide']);
  assert.equal(w.status, 0, w.stderr);
  assert.deepEqual(w.stdout.split('\n')[0]!.split(/\s+/), ['NAME', 'ADDRESS', 'PORT', 'STATE', 'INCARNATION']);
  assert.match(w.stdout, /node-b\s+10\.0\.0\.2\s+7946\s+suspect\s+3/);
});

test('memberlist off: every Node listed as alive, exit 0', async () => {
  body = { memberlist: false, alive: ['n1', 'n2'] };
  const r = await run(['members', '--speaker', addr]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /memberlist is off/);
  assert.match(r.stdout, /^n1\s+-\s+alive\s+-$/m);
  assert.match(r.stdout, /^n2\s+-\s+alive\s+-$/m);
  const y = await run(['members', '--speaker', addr, '-o', 'yaml']);
  assert.equal(y.stdout, 'memberlist: false\nalive:\n- n1\n- n2\n');
});

test('unreachable speaker: one line naming it, exit 3', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const r = await run(['members', '--speaker', `127.0.0.1:${port}`]);
  assert.equal(r.status, 3);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, new RegExp(`^metallb-ts: cannot reach speaker 127\\.0\\.0\\.1:${port}: ECONNREFUSED\\n$`));
});

test('a server that answers no member view: exit 3; bad --speaker: exit 2', async () => {
  body = { hello: 'world' };
  const bad = await run(['members', '--speaker', addr]);
  assert.equal(bad.status, 3);
  assert.match(bad.stderr, /^metallb-ts: speaker 127\.0\.0\.1:\d+: GET \/debug\/members did not answer a member view \(neither members nor memberlist: false\)\n$/);
  // A member row without a string address (or with a number): one line naming the field, not a crash.
  for (const address of [undefined, 167772161]) {
    body = { self: 'node-a', members: [VIEW.members[0], VIEW.members[1], VIEW.members[2], { name: 'node-d', port: 7946, state: 'alive', incarnation: 1, address }] };
    const row = await run(['members', '--speaker', addr]);
    assert.equal(row.status, 3, row.stderr);
    assert.equal(row.stdout, '');
    assert.match(row.stderr, /^metallb-ts: speaker 127\.0\.0\.1:\d+: GET \/debug\/members did not answer a member view \(members\[3\]\.address is not a string\)\n$/);
  }
  for (const arg of ['nohost', '127.0.0.1:0', '127.0.0.1:99999', 'http://x:1', '127.0.0.1#:18011', 'a@host:1', 'host?:1']) {
    const r = await run(['members', '--speaker', arg]);
    assert.equal(r.status, 2, arg);
    assert.match(r.stderr, /^metallb-ts: invalid --speaker/, arg);
  }
  // Without --speaker, members finds a speaker pod through the kubeconfig's API server.
  const noConfig = await run(['members', '--kubeconfig', '/nonexistent/kubeconfig']);
  assert.equal(noConfig.status, 2);
  assert.equal(noConfig.stderr, 'metallb-ts: kubeconfig /nonexistent/kubeconfig: no such file\n');
  const both = await run(['members', '--speaker', addr, '--node', 'n1']);
  assert.equal(both.status, 2);
  assert.match(both.stderr, /^metallb-ts: --node picks a speaker pod .*give one or the other\n$/);
  const selector = await run(['members', '--speaker', addr, '--speaker-selector', 'app=x']);
  assert.equal(selector.status, 2);
  assert.equal(selector.stderr, 'metallb-ts: --speaker-selector picks the speaker pods to ask through the API server, --speaker names one directly: give one or the other\n');
});

test('an API server that cannot be reached: one line, said once, exit 3', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-members-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      '  cluster:',
      `    server: https://127.0.0.1:${port}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: u',
      '  user:',
      '    token: t',
      'contexts:',
      '- name: x',
      '  context:',
      '    cluster: c',
      '    user: u',
      'current-context: x',
      '',
    ].join('\n'),
  );
  const r = await run(['members', '--kubeconfig', kubeconfig]);
  assert.equal(r.status, 3, r.stderr);
  assert.equal(r.stderr, `metallb-ts: cannot list v1 pods at https://127.0.0.1:${port}: connection refused\n`);
});

test('members table: control characters from the speaker are escaped; -o json keeps them', async () => {
  body = { self: 'a', members: [{ name: 'evil\u001b[31m\u009b', address: '10.0.0.9\r', port: 7946, state: 'alive', incarnation: 1 }] };
  const r = await run(['members', '--speaker', addr]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split('\n')[1], 'evil\\x1b[31m\\x9b   10.0.0.9\\x0d   alive   1');
  assert.deepEqual(JSON.parse((await run(['members', '--speaker', addr, '-o', 'json'])).stdout), body);
  assert.equal(
    membersTable({ memberlist: false, alive: ['n\u0007'] }, false)
      .split('\n')
      .at(-2),
    'n\\x07   -         alive   -',
  );
});

test('speakerURL and membersTable', () => {
  assert.equal(speakerURL('[::1]:7472'), 'http://[::1]:7472');
  assert.equal(speakerURL('speaker.local:9120'), 'http://speaker.local:9120');
  assert.equal(speakerURL(' 10.0.0.5:9120 '), 'http://10.0.0.5:9120');
  assert.equal(membersTable({ self: 'a', members: [] }, false), 'NAME   ADDRESS   STATE   INCARNATION\n');
  assert.equal(
    membersTable({ self: 'a', members: [] }, false, { via: 'pod-proxy', address: '10.0.0.1:7472', pod: 'metallb-system/speaker-x', node: 'a' }),
    'speaker pod metallb-system/speaker-x on node a (10.0.0.1:7472, through the API server)\nNAME   ADDRESS   STATE   INCARNATION\n',
  );
});

test('the speaker endpoint serves /debug/members as JSON only when given a view', async () => {
  const s = await serveEndpoints('127.0.0.1', 0, { members: () => VIEW });
  const plain = await serveEndpoints('127.0.0.1', 0, {});
  try {
    const res = await fetch(`http://${s.address}/debug/members`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), VIEW);
    assert.equal((await fetch(`http://${plain.address}/debug/members`)).status, 404);
  } finally {
    await s.close();
    await plain.close();
  }
});
