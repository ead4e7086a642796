// memberlist interop: metallb-ts members (src/speaker/membership-memberlist.ts) next to real
// HashiCorp memberlist v0.5.1 members (test/memberlist/peer, configured as MetalLB configures
// it), on 127.0.0.0/8 addresses, with default LAN timing. What a user would observe: every
// member's member list, incarnations, the L2 winner each member would elect.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from './setup/cluster.ts';
import { MemberlistMember } from '../../src/speaker/membership-memberlist.ts';
import { SpeakerListMembership } from '../../src/speaker/membership-speakerlist.ts';
import { metallbSecretKey } from '../../src/core/membership/crypto.ts';
import { METALLB_VSN, encodeCompound, encodeMessage, encodePacket, encodePushPull, encodeStreamMessage } from '../../src/core/membership/messages.ts';
import { lzwEncode } from '../../src/core/membership/lzw.ts';
import { electL2 } from '../../src/core/election/index.ts';
import { parsePool } from '../../src/core/config/pool.ts';
import type { Config, L2Adv, Pool } from '../../src/core/config/types.ts';
import { clusterStateFromObjects, type KubeObject, type Service } from '../../src/core/kube.ts';

const PEER = join(REPO_ROOT, '.cache/memberlist-peer/memberlist-peer');
const PORT = 27946;

interface View {
  name: string;
  addr: string;
  port: number;
  state: string;
  incarnation: number;
}
interface Member {
  name: string;
  kind: 'go' | 'ts';
  view(): Promise<View[]>;
  alive(): Promise<string[]>;
  kill(): Promise<void>;
}

const running: Member[] = [];
after(async () => {
  for (const m of running) await m.kill().catch(() => {});
});

async function startGo(name: string, ip: string, opts: { secret?: string; join?: string } = {}): Promise<Member & { proc: ChildProcess }> {
  const args = ['-name', name, '-bind', ip, '-port', String(PORT), '-http', '127.0.0.1:0'];
  if (opts.secret) args.push('-secret', opts.secret);
  if (opts.join) args.push('-join', `${opts.join}:${PORT}`);
  const proc = spawn(PEER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.unref();
  const stderr: string[] = [];
  proc.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const http = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout! });
    rl.on('line', (l) => {
      const m = /^http (\S+)/.exec(l);
      if (m) resolve(m[1]!);
    });
    proc.once('exit', (c) => reject(new Error(`go peer ${name} exited ${c}: ${stderr.join('')}`)));
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const m = {
    name,
    kind: 'go' as const,
    proc,
    view: async () => (await (await fetch(`http://${http}/all`)).json()) as View[],
    alive: async () => ((await (await fetch(`http://${http}/members`)).json()) as View[]).map((v) => v.name).sort(),
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
  running.push(m);
  return m;
}

async function startTs(name: string, ip: string, opts: { secret?: string; join?: string; incarnation?: number } = {}): Promise<Member & { member: MemberlistMember }> {
  const member = new MemberlistMember({ name, bindAddr: ip, bindPort: PORT, keys: opts.secret ? [metallbSecretKey(Buffer.from(opts.secret))] : null });
  await member.start();
  if (opts.join) await member.join([{ host: opts.join, port: PORT }]);
  const m = {
    name,
    kind: 'ts' as const,
    member,
    view: async () => member.members() as View[],
    alive: async () => member.alive(),
    kill: async () => member.kill(),
  };
  running.push(m);
  return m;
}

async function waitFor<T>(what: string, fn: () => Promise<T | false | null | undefined>, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function converged(members: Member[], expect: string[]): Promise<boolean> {
  for (const m of members) if ((await m.alive()).join(',') !== [...expect].sort().join(',')) return false;
  return true;
}

/** Waits until every member's alive list is `expect`; the error shows each member's full view. */
async function waitConverged(members: Member[], expect: string[], timeoutMs: number): Promise<void> {
  try {
    await waitFor(`${expect.join(', ')} to agree`, () => converged(members, expect), timeoutMs);
  } catch (e) {
    const views = await Promise.all(members.map(async (m) => `${m.name}: ${(await m.view().catch(() => [])).map((v) => `${v.name}/${v.state}/${v.incarnation}`).join(' ')}`));
    throw new Error(`${(e as Error).message}\n${views.join('\n')}`);
  }
}

async function stateOf(m: Member, name: string): Promise<View | undefined> {
  return (await m.view()).find((v) => v.name === name);
}

async function stopAll(ms: Member[]): Promise<void> {
  for (const m of ms) await m.kill();
}

test('metallb-ts joins a Go cluster, a Go member joins a metallb-ts cluster; views converge', async () => {
  const a = await startGo('go-a', '127.0.1.1');
  const b = await startGo('go-b', '127.0.1.2', { join: '127.0.1.1' });
  const c = await startTs('ts-c', '127.0.1.3', { join: '127.0.1.1' });
  await waitConverged([a, b, c], ['go-a', 'go-b', 'ts-c'], 10_000);
  const d = await startTs('ts-d', '127.0.1.4');
  const e = await startTs('ts-e', '127.0.1.5', { join: '127.0.1.4' });
  const f = await startGo('go-f', '127.0.1.6', { join: '127.0.1.5' });
  await waitConverged([d, e, f], ['go-f', 'ts-d', 'ts-e'], 10_000);
  // address and port as each side sees the other
  assert.deepEqual(await stateOf(a, 'ts-c'), { name: 'ts-c', addr: '127.0.1.3', port: PORT, state: 'alive', incarnation: 1 });
  assert.deepEqual(await stateOf(c, 'go-b'), { name: 'go-b', addr: '127.0.1.2', port: PORT, state: 'alive', incarnation: 1 });
  // graceful leave of the metallb-ts member: the Go members see it left, not dead
  await c.member.stop();
  await waitFor('ts-c left on go-a and go-b', async () => (await stateOf(a, 'ts-c'))?.state === 'left' && (await stateOf(b, 'ts-c'))?.state === 'left', 5_000);
  await stopAll([a, b, d, e, f]);
});

test('encrypted: the same secret forms a cluster (MetalLB key derivation), another secret is kept out', async () => {
  const secret = 'Zm9vYmFyYmF6cXV4cXV1eA';
  const a = await startGo('go-a', '127.0.2.1', { secret });
  const b = await startTs('ts-b', '127.0.2.2', { secret, join: '127.0.2.1' });
  const c = await startGo('go-c', '127.0.2.3', { secret, join: '127.0.2.2' });
  await waitConverged([a, b, c], ['go-a', 'go-c', 'ts-b'], 10_000);
  const intruder = new MemberlistMember({ name: 'ts-x', bindAddr: '127.0.2.4', bindPort: PORT, keys: [metallbSecretKey(Buffer.from('another-secret'))] });
  await intruder.start();
  await assert.rejects(intruder.join([{ host: '127.0.2.1', port: PORT }]), /join failed/);
  await assert.rejects(intruder.join([{ host: '127.0.2.2', port: PORT }]), /join failed/);
  const plain = new MemberlistMember({ name: 'ts-y', bindAddr: '127.0.2.5', bindPort: PORT });
  await plain.start();
  await assert.rejects(plain.join([{ host: '127.0.2.2', port: PORT }]), /join failed/);
  const goIntruder = await startGo('go-z', '127.0.2.6', { secret: 'yet-another', join: '127.0.2.2' });
  await new Promise((r) => setTimeout(r, 2000));
  assert.ok(await converged([a, b, c], ['go-a', 'go-c', 'ts-b']), 'nobody with another key or no key got in');
  assert.deepEqual(intruder.alive(), ['ts-x']);
  assert.ok((b.member.stats().dropped.decrypt ?? 0) > 0, `ts-b counted the undecryptable traffic: ${JSON.stringify(b.member.stats().dropped)}`);
  intruder.kill();
  plain.kill();
  await stopAll([a, b, c, goIntruder]);
});

/** Kills `victim` and waits until every other member holds it dead, having seen it suspect first. Returns ms. */
async function killAndWaitDead(victim: Member, others: Member[]): Promise<number> {
  const killedAt = Date.now();
  await victim.kill();
  const sawSuspect = new Set<string>();
  await waitFor(
    `${victim.name} dead on every member`,
    async () => {
      let all = true;
      for (const o of others) {
        const st = (await stateOf(o, victim.name))?.state;
        if (st === 'suspect') sawSuspect.add(o.name);
        if (st !== 'dead') all = false;
      }
      return all;
    },
    40_000,
  );
  assert.ok(sawSuspect.size > 0, `${victim.name} went through suspect`);
  return Date.now() - killedAt;
}

async function rejoinedWithHigherIncarnation(name: string, members: Member[]): Promise<void> {
  await waitFor(
    `${name} alive again with a higher incarnation on every member`,
    async () => {
      for (const o of members) {
        const v = await stateOf(o, name);
        if (v?.state !== 'alive' || v.incarnation < 2) return false;
      }
      return true;
    },
    15_000,
  );
}

test('a killed member (Go, then metallb-ts) is suspect then dead everywhere; restarted, it rejoins with a higher incarnation', async () => {
  const g1 = await startGo('go-1', '127.0.3.1');
  const g2 = await startGo('go-2', '127.0.3.2', { join: '127.0.3.1' });
  const t1 = await startTs('ts-1', '127.0.3.3', { join: '127.0.3.1' });
  const t2 = await startTs('ts-2', '127.0.3.4', { join: '127.0.3.2' });
  await waitConverged([g1, g2, t1, t2], ['go-1', 'go-2', 'ts-1', 'ts-2'], 10_000);

  const goTook = await killAndWaitDead(g2, [g1, t1, t2]);
  const g2b = await startGo('go-2', '127.0.3.2', { join: '127.0.3.1' });
  await rejoinedWithHigherIncarnation('go-2', [g1, g2b, t1, t2]);

  const tsTook = await killAndWaitDead(t2, [g1, g2b, t1]);
  const t2b = await startTs('ts-2', '127.0.3.4', { join: '127.0.3.1' });
  await rejoinedWithHigherIncarnation('ts-2', [g1, g2b, t1, t2b]);
  console.log(`kill→dead on all members: go-2 ${goTook} ms, ts-2 ${tsTook} ms`);
  await stopAll([g1, g2b, t1, t2b]);
});

function l2(name: string, nodes: string[]): L2Adv {
  return { name, nodes: new Set(nodes), interfaces: [], allInterfaces: true, serviceSelectors: [], source: { kind: 'L2Advertisement', metadata: { name } } } as L2Adv;
}

test('3 Go + 2 metallb-ts members elect the same L2 winner for 100 IPs on every member', async () => {
  const names = ['go-1', 'go-2', 'go-3', 'ts-1', 'ts-2'];
  const ms: Member[] = [
    await startGo('go-1', '127.0.4.1'),
    await startGo('go-2', '127.0.4.2', { join: '127.0.4.1' }),
    await startTs('ts-1', '127.0.4.4', { join: '127.0.4.2' }),
    await startGo('go-3', '127.0.4.3', { join: '127.0.4.4' }),
    await startTs('ts-2', '127.0.4.5', { join: '127.0.4.3' }),
  ];
  await waitConverged(ms, names, 20_000);
  const nodes: KubeObject[] = names.map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: n, labels: { 'kubernetes.io/hostname': n } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } }));
  const services: Service[] = Array.from({ length: 100 }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `svc-${i}`, namespace: 'default' },
    spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Cluster' },
    status: { loadBalancer: { ingress: [{ ip: `10.20.${Math.floor(i / 50)}.${(i % 50) + 1}` }] } },
  }));
  const pool: Pool = {
    ...parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'p', namespace: 'metallb-system' }, spec: { addresses: ['10.20.0.0/16'] } }, []),
    l2Advertisements: [l2('ad', names)],
  };
  const config: Config = { pools: new Map([['p', pool]]), peers: new Map(), bfdProfiles: new Map(), poolsByNamespace: new Map(), poolsByServiceSelector: [] } as unknown as Config;
  const slices: KubeObject[] = services.map((svc) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc.metadata!.name}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc.metadata!.name! } },
    endpoints: [{ addresses: ['10.1.0.1'], nodeName: 'go-1', conditions: { ready: true } }],
  }));
  const state = clusterStateFromObjects([...nodes, ...services, ...slices]);
  const winners = async (m: Member): Promise<string[]> => {
    const speakers = await m.alive();
    return services.map((svc) => electL2({ config, state, service: svc, speakers, ignoreExcludeLB: false }).winner ?? '<none>');
  };
  const reference = await winners(ms[0]!);
  assert.equal(new Set(reference).size, 5, `the 100 IPs spread over all five members: ${[...new Set(reference)]}`);
  assert.ok(!reference.includes('<none>'));
  for (const m of ms) assert.deepEqual(await winners(m), reference, `${m.name} elects the same winners`);
  // go-3 crashes: once every member holds it dead, they agree again, without go-3
  const rest = ms.filter((m) => m.name !== 'go-3');
  await killAndWaitDead(ms.find((m) => m.name === 'go-3')!, rest);
  const after = await winners(rest[0]!);
  assert.ok(!after.includes('go-3'));
  assert.deepEqual(
    after.map((w, i) => (reference[i] === 'go-3' ? 'moved' : w)),
    reference.map((w) => (w === 'go-3' ? 'moved' : w)),
    "only go-3's IPs move",
  );
  for (const m of rest) assert.deepEqual(await winners(m), after, `${m.name} elects the same winners after the crash`);
  await stopAll(rest);
});

test('fuzz: random and mutated packets and streams against live members crash nothing', async () => {
  const g = await startGo('go-f', '127.0.5.1');
  const t = await startTs('ts-f', '127.0.5.2', { join: '127.0.5.1' });
  await waitConverged([g, t], ['go-f', 'ts-f'], 10_000);
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.5.9', () => r()));
  let seed = 7;
  const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const wire = { keyring: null, label: '', enableCompression: true, gossipVerifyIncoming: true, gossipVerifyOutgoing: true };
  const vsn = Uint8Array.from(METALLB_VSN);
  const seeds = [
    encodeMessage({ type: 'ping', seqNo: 1, node: 'ts-f' }),
    encodeMessage({ type: 'alive', incarnation: 1, node: 'fuzz', addr: Uint8Array.from([127, 0, 5, 9]), port: 1, meta: null, vsn }),
    encodeMessage({ type: 'suspect', incarnation: 1, node: 'go-f', from: 'fuzz' }),
    encodeMessage({ type: 'indirectPing', seqNo: 3, target: Uint8Array.from([127, 0, 5, 1]), port: PORT, node: 'go-f', nack: true }),
    encodePacket(encodeCompound(Array(6).fill(encodeMessage({ type: 'nack', seqNo: 5 }))), wire, true),
    Uint8Array.from([9, ...encodeMessage({ type: 'nack', seqNo: 1 }).subarray(1)]),
    Uint8Array.from([9, 0x82, 0xa4, ...Buffer.from('Algo'), 0, 0xa3, ...Buffer.from('Buf'), 0xda, 0x10, 0x00, ...lzwEncode(new Uint8Array(4096))]),
  ];
  const targets = [
    { host: '127.0.5.2', port: PORT },
    { host: '127.0.5.1', port: PORT },
  ];
  for (let i = 0; i < 3000; i++) {
    const base = seeds[rnd(seeds.length)]!;
    const b = i % 5 === 0 ? Uint8Array.from({ length: rnd(300) }, () => rnd(256)) : base.slice(0, Math.max(1, rnd(base.length + 1)));
    for (let k = rnd(4); k > 0; k--) b[rnd(b.length)] = rnd(256);
    for (const to of targets) udp.send(b, to.port, to.host);
    if (i % 100 === 0) await new Promise((r) => setTimeout(r, 5));
  }
  // streams: random bytes, truncated push/pull, a huge announced length
  const streams = [
    Buffer.from(encodeStreamMessage(encodePushPull({ join: true, nodes: [], userState: new Uint8Array(0) }), wire)).subarray(0, 10),
    Buffer.from([6, 0x83, 0xa4, ...Buffer.from('Join'), 0xc3, 0xa5, ...Buffer.from('Nodes'), 0xd2, 0x7f, 0xff, 0xff, 0xff]),
    Buffer.from([10, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]),
    Buffer.from(Array.from({ length: 500 }, () => rnd(256))),
  ];
  for (const s of streams) {
    for (const to of targets) {
      await new Promise<void>((resolve) => {
        const c = net.connect(to.port, to.host, () => {
          c.end(s);
        });
        c.on('error', () => resolve());
        c.on('close', () => resolve());
        c.resume();
        setTimeout(() => {
          c.destroy();
          resolve();
        }, 2000).unref();
      });
    }
  }
  udp.close();
  await new Promise((r) => setTimeout(r, 1500));
  // both still members of a healthy two-member cluster
  await waitConverged([g, t], ['go-f', 'ts-f'], 10_000);
  assert.equal(g.proc.exitCode, null, 'the Go member is still running');
  const dropped = t.member.stats().dropped;
  const total = Object.values(dropped).reduce((x, y) => x + y, 0);
  assert.ok(total > 100, `ts-f counted the dropped packets: ${JSON.stringify(dropped)}`);
  await stopAll([g, t]);
});

test('codecs equal the Go libraries memberlist v0.5.1 uses, byte for byte, on random inputs', async () => {
  let seed = 99;
  const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const inputs: Uint8Array[] = [new Uint8Array(0)];
  for (const size of [1, 2, 3, 20, 300, 1400, 5000, 9000, 30000, 70000]) {
    inputs.push(Uint8Array.from({ length: size }, () => rnd(size > 5000 ? 256 : 1 + rnd(8))));
  }
  const names = ['a', 'node-b', 'x'.repeat(31), 'y'.repeat(32), 'z'.repeat(300)];
  const msgs: { req: string; ours: Uint8Array }[] = [];
  for (let i = 0; i < 40; i++) {
    const node = names[rnd(names.length)]!;
    const addr = rnd(2) ? Uint8Array.from([10, 0, rnd(256), 200]) : Uint8Array.from({ length: 16 }, () => rnd(256));
    const inc = [0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1][rnd(9)]!;
    const port = [0, 1, 7946, 65535][rnd(4)]!;
    const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');
    const vsn = Uint8Array.from(METALLB_VSN);
    switch (i % 6) {
      case 0:
        msgs.push({
          req: `msg alive ${JSON.stringify({ Incarnation: inc, Node: node, Addr: b64(addr), Port: port, Vsn: b64(vsn) })}`,
          ours: encodeMessage({ type: 'alive', incarnation: inc, node, addr, port, meta: null, vsn }),
        });
        break;
      case 1:
        msgs.push({ req: `msg suspect ${JSON.stringify({ Incarnation: inc, Node: node, From: 'me' })}`, ours: encodeMessage({ type: 'suspect', incarnation: inc, node, from: 'me' }) });
        break;
      case 2:
        msgs.push({
          req: `msg ping ${JSON.stringify({ SeqNo: inc, Node: node, SourceAddr: b64(addr), SourcePort: port, SourceNode: 'me' })}`,
          ours: encodeMessage({ type: 'ping', seqNo: inc, node, sourceAddr: addr, sourcePort: port, sourceNode: 'me' }),
        });
        break;
      case 3:
        msgs.push({ req: `msg indirect ${JSON.stringify({ SeqNo: inc, Target: b64(addr), Port: port, Node: node, Nack: rnd(2) === 1 })}`, ours: new Uint8Array(0) });
        break;
      case 4:
        msgs.push({ req: `msg pushpull ${JSON.stringify({ Nodes: [0, 5, 127, 128, 200, 40000][rnd(6)], UserStateLen: 0, Join: rnd(2) === 1 })}`, ours: new Uint8Array(0) });
        break;
      case 5:
        msgs.push({ req: `msg nodestate ${JSON.stringify({ Name: node, Addr: b64(addr), Port: port, Incarnation: inc, State: rnd(4), Vsn: b64(vsn) })}`, ours: new Uint8Array(0) });
        break;
    }
  }
  const requests = [
    ...inputs.map((b) => `lzw ${Buffer.from(b).toString('hex')}`),
    ...msgs.map((m) => m.req),
    `key ${Buffer.from('short-secret').toString('hex')}`,
    `key ${Buffer.from('q'.repeat(40)).toString('hex')}`,
  ];
  const proc = spawn(PEER, ['-vectors'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stdin!.end(requests.join('\n') + '\n');
  await new Promise((r) => proc.once('exit', r));
  const lines = out.trim().split('\n');
  assert.equal(lines.length, requests.length);
  inputs.forEach((b, i) => {
    assert.equal(Buffer.from(lzwEncode(b)).toString('hex'), lines[i], `LZW of ${b.length} bytes`);
  });
  msgs.forEach((m, i) => {
    const go = lines[inputs.length + i]!;
    const req = JSON.parse(m.req.split(' ').slice(2).join(' '));
    const kind = m.req.split(' ')[1];
    const b = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'base64'));
    let ours = m.ours;
    if (kind === 'indirect') ours = encodeMessage({ type: 'indirectPing', seqNo: req.SeqNo, target: b(req.Target), port: req.Port, node: req.Node, nack: req.Nack });
    if (kind === 'pushpull')
      ours = encodePushPull({
        join: req.Join,
        nodes: Array(req.Nodes).fill({ name: '', addr: new Uint8Array(0), port: 0, meta: null, incarnation: 0, state: 0, vsn: null }),
        userState: new Uint8Array(0),
      }).subarray(0, go.length / 2);
    if (kind === 'nodestate')
      ours = encodePushPull({
        join: false,
        nodes: [{ name: req.Name, addr: b(req.Addr), port: req.Port, meta: null, incarnation: req.Incarnation, state: req.State, vsn: b(req.Vsn) }],
        userState: new Uint8Array(0),
      }).subarray(-go.length / 2);
    assert.equal(Buffer.from(ours).toString('hex'), go, m.req.slice(0, 120));
  });
  assert.equal(Buffer.from(metallbSecretKey(Buffer.from('short-secret'))).toString('hex'), lines[lines.length - 2]);
  assert.equal(Buffer.from(metallbSecretKey(Buffer.from('q'.repeat(40)))).toString('hex'), lines[lines.length - 1]);
});

test('speakerlist: joins the speaker IPs the API lists, reports changes, a restarted member is back in every view', async () => {
  let g = await startGo('node-g', '127.0.6.1');
  const ips = ['127.0.6.1', '127.0.6.2', '127.0.6.3'];
  const changes: string[][] = [];
  const s2 = new SpeakerListMembership({ member: new MemberlistMember({ name: 'node-2', bindAddr: '127.0.6.2', bindPort: PORT }), speakerIPs: async () => ips, joinIntervalMs: 500 });
  const s3 = new SpeakerListMembership({ member: new MemberlistMember({ name: 'node-3', bindAddr: '127.0.6.3', bindPort: PORT }), speakerIPs: async () => ips, joinIntervalMs: 500 });
  // Stopped also when an assertion fails: a member or Go peer left running keeps the test process alive.
  try {
    s2.onChange((c) => changes.push([...(c.alive ?? [])]));
    await s2.start();
    await s3.start();
    await waitFor(
      'all three see each other',
      async () => (await g.alive()).join() === 'node-2,node-3,node-g' && s2.alive().join() === 'node-2,node-3,node-g' && s3.alive().join() === 'node-2,node-3,node-g',
      10_000,
    );
    assert.deepEqual(changes[changes.length - 1], ['node-2', 'node-3', 'node-g'], 'the speaker is told about membership changes');
    // the Go member restarts without a join list: the periodic rejoin brings it back
    await g.kill();
    g = await startGo('node-g', '127.0.6.1');
    const g2 = g;
    await waitFor("node-g back in everyone's view", async () => (await g2.alive()).join() === 'node-2,node-3,node-g' && s2.alive().includes('node-g') && s3.alive().includes('node-g'), 15_000);
  } finally {
    await s2.stop();
    await s3.stop();
    await g.kill();
  }
});

// --- load limits (memberlist net.go): handoff queues, push/pull cap, inbound stream bound ----------

const plainWire = { keyring: null, label: '', enableCompression: false, gossipVerifyIncoming: true, gossipVerifyOutgoing: true };

/** Sends a UDP ping to `to` from `sock` and resolves true when the ack arrives within `timeoutMs`. */
async function pingOverUdp(sock: dgram.Socket, to: { host: string; port: number }, node: string, seqNo: number, timeoutMs = 1000): Promise<boolean> {
  const { decodePacket } = await import('../../src/core/membership/messages.ts');
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      sock.off('message', on);
      resolve(false);
    }, timeoutMs);
    const on = (buf: Buffer): void => {
      const acked = decodePacket(new Uint8Array(buf), plainWire).messages.some((m) => m.type === 'ack' && m.seqNo === seqNo);
      if (!acked) return;
      clearTimeout(t);
      sock.off('message', on);
      resolve(true);
    };
    sock.on('message', on);
    sock.send(encodePacket(encodeMessage({ type: 'ping', seqNo, node }), plainWire, false), to.port, to.host);
  });
}

/** A TCP connection to `to` that writes `first` and then never reads; resolves once connected. */
function connectNoRead(to: { host: string; port: number }, first: Uint8Array): Promise<{ sock: net.Socket; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: to.host, port: to.port, localAddress: '127.0.8.9' });
    sock.on('error', () => {});
    const closed = new Promise<number>((r) => sock.once('close', () => r(Date.now())));
    sock.once('connect', () => {
      sock.write(first);
      resolve({ sock, closed });
    });
    sock.once('error', reject);
  });
}

test('handoff: 1,100 suspects in three datagrams within one turn fill the low-priority queue, 76 dropped; one datagram of 1,100 is cut at 512 messages (amplification); pings and the Go peer unaffected', async () => {
  const g = await startGo('go-h', '127.0.8.1');
  const t = await startTs('ts-h', '127.0.8.2', { join: '127.0.8.1' });
  await waitConverged([g, t], ['go-h', 'ts-h'], 10_000);
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.8.9', () => r()));
  try {
    const suspects = Array.from({ length: 1100 }, (_, i) => encodeMessage({ type: 'suspect', incarnation: 1, node: `ghost-${i}`, from: 'flood' }));
    const nested = (list: Uint8Array[]): Uint8Array => {
      const inner: Uint8Array[] = [];
      for (let i = 0; i < list.length; i += 250) inner.push(encodeCompound(list.slice(i, i + 250)));
      return encodePacket(encodeCompound(inner), plainWire, false);
    };
    // one real datagram of 1,100: more messages than MAX_PACKET_MESSAGES (512), the rest dropped
    const datagram = nested(suspects);
    assert.ok(datagram.length < 65_000, `one datagram (${datagram.length} bytes)`);
    const before = t.member.stats().dropped.handoffQueueFull ?? 0;
    const ampBefore = t.member.stats().dropped.amplification ?? 0;
    udp.send(datagram, PORT, '127.0.8.2');
    assert.ok(await pingOverUdp(udp, { host: '127.0.8.2', port: PORT }, 'ts-h', 4242), 'a ping right behind the flood is acked');
    await waitFor('the datagram to be counted', async () => (t.member.stats().dropped.amplification ?? 0) - ampBefore === 1, 5000);
    assert.equal((t.member.stats().dropped.handoffQueueFull ?? 0) - before, 0, 'at most 512 messages queued');
    await new Promise((r) => setTimeout(r, 500)); // the ≤ 512 queued suspects drain (64 per turn)
    // three datagrams of ≤ 367 delivered within one event-loop turn: 1,100 queued, 76 over HandoffQueueDepth
    const from = { host: '127.0.8.9', port: udp.address().port };
    for (let i = 0; i < 1100; i += 367) t.member.receivePacket(nested(suspects.slice(i, i + 367)), from);
    assert.equal((t.member.stats().dropped.handoffQueueFull ?? 0) - before, 1100 - 1024, 'exactly the excess over HandoffQueueDepth');
    assert.ok(await pingOverUdp(udp, { host: '127.0.8.2', port: PORT }, 'ts-h', 4243), 'a ping right behind the flood is acked');
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((t.member.stats().dropped.handoffQueueFull ?? 0) - before, 76, 'nothing more dropped while draining');
    await waitConverged([g, t], ['go-h', 'ts-h'], 5000);
  } finally {
    udp.close();
    await stopAll([g, t]);
  }
});

test('push/pull cap: 127 push/pulls that never read hold their slots, the 128th is refused; pings answered; slots free at TCPTimeout', async () => {
  const { LAN_CONFIG } = await import('../../src/core/membership/config.ts');
  const { MAX_PUSH_PULL_REQUESTS } = await import('../../src/speaker/membership-memberlist.ts');
  const tcpTimeoutMs = 4000;
  const member = new MemberlistMember({ name: 'ts-cap', bindAddr: '127.0.8.3', bindPort: PORT, config: { ...LAN_CONFIG, tcpTimeoutMs } });
  await member.start();
  running.push({ name: 'ts-cap', kind: 'ts', view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() });
  const to = { host: '127.0.8.3', port: PORT };
  const vsn = Uint8Array.from(METALLB_VSN);
  const pushPull = (i: number) =>
    encodeStreamMessage(
      encodePushPull({
        join: false,
        nodes: [{ name: `peer-${i}`, addr: Uint8Array.from([127, 0, 8, 9]), port: 40000 + i, meta: null, incarnation: 1, state: 0, vsn }],
        userState: new Uint8Array(0),
      }),
      plainWire,
    );
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.8.9', () => r()));
  const conns: { sock: net.Socket; closed: Promise<number> }[] = [];
  try {
    const opened = Date.now();
    for (let i = 0; i < MAX_PUSH_PULL_REQUESTS - 1; i++) conns.push(await connectNoRead(to, pushPull(i)));
    await waitFor('127 push/pulls in flight', async () => member.stats().pushPullsInFlight === MAX_PUSH_PULL_REQUESTS - 1, 3000);
    // the 128th: closed by the member without a reply
    const extra = await connectNoRead(to, pushPull(999));
    const replyBytes: number[] = [];
    extra.sock.on('data', (d: Buffer) => replyBytes.push(d.length));
    await extra.closed;
    assert.equal(replyBytes.length, 0, 'no reply to the refused push/pull');
    assert.equal(member.stats().dropped.pushPullLimit, 1);
    assert.equal(member.stats().pushPullsInFlight, MAX_PUSH_PULL_REQUESTS - 1);
    assert.ok(await pingOverUdp(udp, to, 'ts-cap', 1), 'UDP pings are answered while every slot is held');
    assert.ok(member.alive().includes('peer-5'), 'the accepted push/pulls were merged');
    // held until the absolute deadline (the peers never read nor close), then released
    await new Promise((r) => setTimeout(r, Math.max(0, opened + tcpTimeoutMs - 700 - Date.now())));
    assert.equal(member.stats().pushPullsInFlight, MAX_PUSH_PULL_REQUESTS - 1, 'still held shortly before the TCP timeout');
    const releasedAt = await waitFor('slots released', async () => member.stats().pushPullsInFlight === 0 && Date.now(), 4000);
    assert.ok(releasedAt - opened < tcpTimeoutMs + 2000, `released at the TCP timeout (${releasedAt - opened} ms after the first connection)`);
    for (const c of conns) c.sock.resume(); // reading now, each sees our reply and the close
    await Promise.all(conns.map((c) => c.closed));
    // a real push/pull goes through again
    const other = new MemberlistMember({ name: 'ts-cap-2', bindAddr: '127.0.8.4', bindPort: PORT });
    await other.start();
    running.push({ name: 'ts-cap-2', kind: 'ts', view: async () => other.members() as View[], alive: async () => other.alive(), kill: async () => other.kill() });
    assert.equal(await other.join([to]), 1);
    assert.ok(other.alive().includes('ts-cap'));
    other.kill();
  } finally {
    for (const c of conns) c.sock.destroy();
    udp.close();
    member.kill();
  }
});

test('slow-loris: 600 trickling connections; 512 held, the rest closed at accept; all closed at TCPTimeout although bytes keep coming; pings answered', async () => {
  const { LAN_CONFIG } = await import('../../src/core/membership/config.ts');
  const { MAX_INBOUND_STREAMS } = await import('../../src/speaker/membership-memberlist.ts');
  const tcpTimeoutMs = 4000;
  const member = new MemberlistMember({ name: 'ts-loris', bindAddr: '127.0.8.5', bindPort: PORT, config: { ...LAN_CONFIG, tcpTimeoutMs } });
  await member.start();
  running.push({ name: 'ts-loris', kind: 'ts', view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() });
  const to = { host: '127.0.8.5', port: PORT };
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.8.9', () => r()));
  const conns: { sock: net.Socket; closed: Promise<number> }[] = [];
  // a label header announcing a 200-byte label, then one byte every 250 ms: never a whole message
  const trickle = setInterval(() => {
    for (const c of conns) if (!c.sock.destroyed) c.sock.write(Uint8Array.of(0x61));
  }, 250);
  try {
    const opened = Date.now();
    for (let i = 0; i < 600; i++) conns.push(await connectNoRead(to, Uint8Array.of(244, 200)));
    await waitFor('the excess refused', async () => (member.stats().dropped.streamLimit ?? 0) === 600 - MAX_INBOUND_STREAMS, 3000);
    assert.equal(member.stats().inboundStreams, MAX_INBOUND_STREAMS);
    assert.ok(await pingOverUdp(udp, to, 'ts-loris', 7), 'UDP pings are answered meanwhile');
    const closedAt = await Promise.all(conns.map((c) => c.closed));
    const lastMs = Math.max(...closedAt) - opened;
    assert.ok(lastMs < tcpTimeoutMs + 2000, `every trickling connection closed by the absolute deadline (${lastMs} ms)`);
    await waitFor('the member to count them closed', async () => member.stats().inboundStreams === 0, 1000);
    const other = new MemberlistMember({ name: 'ts-loris-2', bindAddr: '127.0.8.6', bindPort: PORT });
    await other.start();
    running.push({ name: 'ts-loris-2', kind: 'ts', view: async () => other.members() as View[], alive: async () => other.alive(), kill: async () => other.kill() });
    assert.equal(await other.join([to]), 1, 'a real push/pull goes through afterwards');
    other.kill();
  } finally {
    clearInterval(trickle);
    for (const c of conns) c.sock.destroy();
    udp.close();
    member.kill();
  }
});

test('a member configured from a MetalLB memberlist config file (fast timings) interoperates with Go and sees a kill sooner', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { readMemberlistConfigFile } = await import('../../src/speaker/membership-memberlist.ts');
  const file = join(mkdtempSync(join(tmpdir(), 'ml-file-')), 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      TCPTimeout: '2s',
      IndirectChecks: 3,
      RetransmitMult: 4,
      SuspicionMult: 2,
      SuspicionMaxTimeoutMult: 2,
      PushPullInterval: '10s',
      ProbeTimeout: '100ms',
      ProbeInterval: '200ms',
      DisableTcpPings: false,
      AwarenessMaxMultiplier: 8,
      GossipNodes: 3,
      GossipInterval: '100ms',
      GossipToTheDeadTime: '30s',
      GossipVerifyIncoming: true,
      GossipVerifyOutgoing: true,
      EnableCompression: true,
      HandoffQueueDepth: 1024,
      UDPBufferSize: 1400,
      QueueCheckInterval: '30s',
    }),
  );
  const { config, warnings } = readMemberlistConfigFile(file)!;
  assert.deepEqual(warnings, []);
  assert.equal(config.probeIntervalMs, 200);
  const g1 = await startGo('go-cf1', '127.0.8.21');
  const g2 = await startGo('go-cf2', '127.0.8.22', { join: '127.0.8.21' });
  const member = new MemberlistMember({ name: 'ts-cf', bindAddr: '127.0.8.23', bindPort: PORT, config });
  await member.start();
  const t = { name: 'ts-cf', kind: 'ts' as const, view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() };
  running.push(t);
  await member.join([{ host: '127.0.8.21', port: PORT }]);
  await waitConverged([g1, g2, t], ['go-cf1', 'go-cf2', 'ts-cf'], 10_000);
  const killedAt = Date.now();
  await g2.kill();
  await waitFor('ts-cf to see go-cf2 dead', async () => (await stateOf(t, 'go-cf2'))?.state === 'dead', 10_000);
  const detectMs = Date.now() - killedAt;
  // default LAN timing takes 5–7 s here (README); 200 ms probes and SuspicionMult 2 take about 1 s
  assert.ok(detectMs < 3000, `dead after ${detectMs} ms`);
  await waitConverged([g1, t], ['go-cf1', 'ts-cf'], 10_000);
  await stopAll([g1, t]);
});

test('TCPTimeout "720h" (Go accepts it; beyond Node\'s 2^31-1 ms timer limit): the member joins and is joined, push/pulls both ways, no TimeoutOverflowWarning', async () => {
  const { parseMemberlistConfigFile } = await import('../../src/core/membership/config.ts');
  const { MAX_TIMER_DELAY_MS } = await import('../../src/speaker/membership-memberlist.ts');
  const { config, warnings } = parseMemberlistConfigFile(
    JSON.stringify({
      TCPTimeout: '720h',
      IndirectChecks: 3,
      RetransmitMult: 4,
      SuspicionMult: 4,
      SuspicionMaxTimeoutMult: 6,
      PushPullInterval: '1s',
      ProbeTimeout: '500ms',
      ProbeInterval: '1s',
      DisableTcpPings: false,
      AwarenessMaxMultiplier: 8,
      GossipNodes: 3,
      GossipInterval: '200ms',
      GossipToTheDeadTime: '720h',
      GossipVerifyIncoming: true,
      GossipVerifyOutgoing: true,
      EnableCompression: true,
      HandoffQueueDepth: 1024,
      UDPBufferSize: 1400,
      QueueCheckInterval: '720h',
    }),
    'config.json',
  );
  assert.deepEqual(warnings, []);
  assert.ok(config.tcpTimeoutMs > MAX_TIMER_DELAY_MS);
  const overflow: string[] = [];
  const onWarning = (w: Error) => {
    if (w.name === 'TimeoutOverflowWarning' || w.name === 'TimeoutNegativeWarning' || w.name === 'TimeoutNaNWarning') overflow.push(w.message);
  };
  process.on('warning', onWarning);
  try {
    const g1 = await startGo('go-long1', '127.0.8.31');
    const member = new MemberlistMember({ name: 'ts-long', bindAddr: '127.0.8.32', bindPort: PORT, config });
    await member.start();
    const t = { name: 'ts-long', kind: 'ts' as const, view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() };
    running.push(t);
    // outbound: dial, write, read the reply (each timer from TCPTimeout)
    assert.equal(await member.join([{ host: '127.0.8.31', port: PORT }]), 1);
    // inbound: a Go member and a metallb-ts member join through it (the stream deadline, the read timer)
    const g2 = await startGo('go-long2', '127.0.8.33', { join: '127.0.8.32' });
    const other = await startTs('ts-long2', '127.0.8.34', { join: '127.0.8.32' });
    const all = ['go-long1', 'go-long2', 'ts-long', 'ts-long2'];
    await waitConverged([g1, g2, t, other], all, 10_000);
    // periodic push/pulls (PushPullInterval 1s) keep going both ways; streams are not cut by a 1 ms deadline
    const before = member.stats();
    await other.member.pushPull({ host: '127.0.8.32', port: PORT }, false);
    await waitFor(
      'more push/pulls in and out',
      async () => {
        const s = member.stats();
        return s.streamsOut >= before.streamsOut + 2 && s.streamsIn >= before.streamsIn + 1;
      },
      10_000,
    );
    const s = member.stats();
    assert.equal(s.dropped.timeout ?? 0, 0, `no stream timed out: ${JSON.stringify(s.dropped)}`);
    assert.equal(s.dropped.truncated ?? 0, 0, `no stream cut short: ${JSON.stringify(s.dropped)}`);
    await waitConverged([g1, g2, t, other], all, 5_000);
    assert.deepEqual(overflow, [], 'no timer overflowed');
    await stopAll([g1, g2, t, other]);
  } finally {
    process.off('warning', onWarning);
  }
});

// --- inbound stream memory and CPU (issue #5): global buffer budget, decode attempts bounded ------

test('stream budget: 100 streams each buffering 1 MiB of an unfinished push/pull hold at most 64 MiB together; the excess closed and counted; pings and a Go join go through meanwhile; all released', async () => {
  const { INBOUND_STREAM_BUDGET_BYTES } = await import('../../src/speaker/membership-memberlist.ts');
  const { LAN_CONFIG } = await import('../../src/core/membership/config.ts');
  // a TCPTimeout longer than the test: every close here is the budget's (or ours)
  const member = new MemberlistMember({ name: 'ts-budget', bindAddr: '127.0.8.31', bindPort: PORT, config: { ...LAN_CONFIG, tcpTimeoutMs: 120_000 } });
  await member.start();
  const t = { name: 'ts-budget', kind: 'ts' as const, view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() };
  running.push(t);
  const to = { host: '127.0.8.31', port: PORT };
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.8.9', () => r()));
  const MiB = 1 << 20;
  // a push/pull announcing 8 MiB of user state, of which 1 MiB is sent: valid so far, never whole
  const partial = encodeStreamMessage(encodePushPull({ join: false, nodes: [], userState: new Uint8Array(8 * MiB) }), plainWire).subarray(0, MiB);
  let highest = 0;
  const sample = setInterval(() => (highest = Math.max(highest, member.stats().inboundBufferedBytes)), 1);
  const conns: { sock: net.Socket; closed: Promise<number> }[] = [];
  let closedByMember = 0;
  try {
    for (let i = 0; i < 100; i++) {
      const c = await connectNoRead(to, new Uint8Array(0));
      void c.closed.then(() => closedByMember++);
      conns.push(c);
    }
    for (const c of conns) c.sock.write(partial);
    const settled = (): boolean => {
      const s = member.stats();
      return closedByMember === (s.dropped.streamBudget ?? 0) && s.inboundReceivedBytes === (100 - closedByMember) * MiB;
    };
    await waitFor('every stream either wholly buffered or closed', async () => settled(), 30_000);
    const s = member.stats();
    assert.ok(s.inboundBufferedBytes <= INBOUND_STREAM_BUDGET_BYTES, `buffered ${s.inboundBufferedBytes}`);
    assert.ok(closedByMember >= 100 - INBOUND_STREAM_BUDGET_BYTES / MiB, `${closedByMember} streams closed (dropped ${JSON.stringify(s.dropped)})`);
    assert.ok(await pingOverUdp(udp, to, 'ts-budget', 11), 'UDP pings are answered with the budget full');
    // a Go member joins through the full budget: its few-KB push/pull evicts the largest flooding stream
    const g = await startGo('go-budget', '127.0.8.32', { join: '127.0.8.31' });
    await waitConverged([g, t], ['go-budget', 'ts-budget'], 10_000);
    assert.ok(member.stats().inboundBufferedBytes <= INBOUND_STREAM_BUDGET_BYTES);
    for (const c of conns) c.sock.destroy();
    await waitFor('every buffered byte released', async () => member.stats().inboundBufferedBytes === 0 && member.stats().inboundReceivedBytes === 0 && member.stats().inboundStreams === 0, 5000);
    assert.ok(highest <= INBOUND_STREAM_BUDGET_BYTES, `never more than the budget buffered (highest sample ${highest})`);
    assert.ok(highest > INBOUND_STREAM_BUDGET_BYTES / 2, `the flood did fill the budget (highest sample ${highest})`);
    await g.kill();
  } finally {
    clearInterval(sample);
    for (const c of conns) c.sock.destroy();
    udp.close();
    member.kill();
  }
});

/** Connects from 127.0.8.9, writes `msg` in `chunk`-byte pieces (one per event-loop turn), and resolves with every byte the member replies before closing. */
async function trickleAndRead(to: { host: string; port: number }, msg: Uint8Array, chunk: number): Promise<{ reply: Uint8Array; writes: number }> {
  const sock = net.connect({ host: to.host, port: to.port, localAddress: '127.0.8.9' });
  sock.setNoDelay(true);
  const parts: Buffer[] = [];
  sock.on('data', (d: Buffer) => parts.push(d));
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  let writes = 0;
  // one write per event-loop turn: the member (same process) reads each piece on its own, about
  // one `data` event per write, rather than the kernel's coalesced 64 KB
  for (let off = 0; off < msg.length; off += chunk, writes++) {
    sock.write(msg.subarray(off, off + chunk));
    await new Promise((r) => setImmediate(r));
  }
  await closed;
  return { reply: new Uint8Array(Buffer.concat(parts)), writes };
}

test('a 5 MB push/pull trickled in 1 KB writes is decoded in a few dozen attempts (not one per chunk), plain or encrypted (length up front: one attempt); a message finished by a small last piece is decoded after the idle pause', async () => {
  const { decodeStreamMessage } = await import('../../src/core/membership/messages.ts');
  const { Keyring } = await import('../../src/core/membership/crypto.ts');
  const key = metallbSecretKey(Buffer.from('trickle-secret'));
  const encWire = { ...plainWire, keyring: new Keyring([key]) };
  const vsn = Uint8Array.from(METALLB_VSN);
  const pushPull = encodePushPull({
    join: false,
    nodes: [{ name: 'trickler', addr: Uint8Array.from([127, 0, 8, 9]), port: 40999, meta: null, incarnation: 1, state: 0, vsn }],
    userState: new Uint8Array(5_000_000).fill(7),
  });
  for (const [name, ip, wire, maxAttempts] of [
    ['ts-trickle', '127.0.8.33', plainWire, 40],
    ['ts-trickle-enc', '127.0.8.34', encWire, 1],
  ] as const) {
    const member = new MemberlistMember({ name, bindAddr: ip, bindPort: PORT, keys: wire.keyring ? [key] : null });
    await member.start();
    running.push({ name, kind: 'ts', view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() });
    try {
      const before = member.stats().streamDecodeAttempts;
      const { reply, writes } = await trickleAndRead({ host: ip, port: PORT }, encodeStreamMessage(pushPull, wire), 1024);
      const attempts = member.stats().streamDecodeAttempts - before;
      assert.ok(writes > 4800, `${writes} writes`);
      const { msg } = decodeStreamMessage(reply, wire);
      assert.equal(msg.type, 'pushPull', `${name} answered the push/pull`);
      assert.ok(msg.type === 'pushPull' && msg.nodes.some((n) => n.name === name));
      assert.ok(member.alive().includes('trickler'), 'and merged it');
      assert.ok(attempts >= 1 && attempts <= maxAttempts, `${name}: ${attempts} decode attempts for ${writes} writes`);
      console.log(`${name}: ${attempts} decode attempts for a ${pushPull.length}-byte push/pull in ${writes} writes`);
      assert.equal(member.stats().inboundBufferedBytes, 0);
    } finally {
      member.kill();
    }
  }
  // a fallback ping sent as 16 bytes, then (once those were tried) its last few: below the 1.5×
  // growth that triggers a decode, so the idle pause decodes it; the ack comes back
  const member = new MemberlistMember({ name: 'ts-idle', bindAddr: '127.0.8.35', bindPort: PORT });
  await member.start();
  running.push({ name: 'ts-idle', kind: 'ts', view: async () => member.members() as View[], alive: async () => member.alive(), kill: async () => member.kill() });
  try {
    const ping = encodeStreamMessage(encodeMessage({ type: 'ping', seqNo: 77, node: 'ts-idle' }), plainWire);
    assert.ok(ping.length > 16 && ping.length < 24, `${ping.length} bytes`);
    const before = member.stats().streamDecodeAttempts;
    const sock = net.connect({ host: '127.0.8.35', port: PORT, localAddress: '127.0.8.9' });
    const parts: Buffer[] = [];
    sock.on('data', (d: Buffer) => parts.push(d));
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(ping.subarray(0, 16));
    await waitFor('the first piece tried', async () => member.stats().streamDecodeAttempts === before + 1, 2000);
    sock.write(ping.subarray(16));
    await closed;
    const { msg } = decodeStreamMessage(new Uint8Array(Buffer.concat(parts)), plainWire);
    assert.deepEqual(msg, { type: 'ack', seqNo: 77, payload: null });
    assert.equal(member.stats().streamDecodeAttempts - before, 2, 'the first piece, then once after the pause');
  } finally {
    member.kill();
  }
});
