// The L2 data plane on real sockets: network namespaces made by this test (a switch namespace
// holding a bridge, a client and three speakers, veth pairs created directly inside them), the
// RawL2Announcer (native addon + src/core/arp) running in each speaker namespace as a harness
// process (this file with argv `harness`), and Debian's arping / tcpdump / ip in the client.
// Addresses: 192.0.2.0/24 and 2001:db8::/64 inside these namespaces only. Every namespace is
// deleted afterwards, also when a test fails.
//
// Also used by bench/l2.bench.ts: exports the testbed (`L2Testbed`) and the harness.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { L2Event } from '../../src/speaker/l2.ts';
import type { InterfaceChoice } from '../../src/core/arp/index.ts';
import { L2Testbed, CLIENT_MAC, arping, arpingReplies, inNs, sh, speakerMac } from './setup/l2-testbed.ts';

// The testbed moved to setup/l2-testbed.ts (shared with test/e2e); re-exported for bench/l2.bench.ts.
export { L2Testbed, CLIENT_MAC, arping, arpingReplies, inNs, sh, speakerMac };

const SELF = fileURLToPath(import.meta.url);

/** One line of harness output. */
export type HarnessLine =
  | { kind: 'ready'; interfaces: InterfaceChoice[] }
  | { kind: 'stats'; replies: number; gratuitous: number; drops: Record<string, number>; interfaces: InterfaceChoice[] }
  | ({ t: number } & L2Event);

/** Runs in a speaker namespace: RawL2Announcer driven by JSON lines on stdin, events as JSON lines on stdout. */
async function harness(): Promise<void> {
  const { rawSocketProblem } = await import('../../src/speaker/l2-native.ts');
  const { RawL2Announcer } = await import('../../src/speaker/l2.ts');
  const opts = JSON.parse(process.argv[3] ?? '{}') as { exclude?: string[]; scanIntervalMs?: number };
  const problem = rawSocketProblem();
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(2);
  }
  const out = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
  const quiet = {
    with: () => quiet,
    debug() {},
    info() {},
    warn() {},
    error(f: object) {
      process.stderr.write(`${JSON.stringify(f)}\n`);
    },
  };
  const l2 = new RawL2Announcer({ log: quiet, exclude: opts.exclude ?? [], scanIntervalMs: opts.scanIntervalMs ?? 500, onEvent: (e) => out({ t: Date.now(), ...e }) }).start();
  const stats = () => ({ kind: 'stats', replies: l2.sent.replies, gratuitous: l2.sent.gratuitous, drops: l2.drops, interfaces: l2.interfaces() });
  out({ kind: 'ready', interfaces: l2.interfaces() });
  const rl = createInterface({ input: process.stdin });
  const keepAlive = setInterval(() => {}, 1 << 30);
  rl.on('line', (line) => {
    const c = JSON.parse(line) as { op: string; service: string; ips: string[]; interfaces: 'all' | string[] };
    if (c.op === 'announce') l2.announce(c.service, c.ips, c.interfaces);
    else if (c.op === 'withdraw') l2.withdraw(c.service);
    else if (c.op === 'stats') out(stats());
  });
  rl.on('close', () => {
    l2.close();
    clearInterval(keepAlive);
  });
}

/**
 * A client that sends ARP requests from a namespace one at a time (argv: `arp-client IFNAME MAC
 * SENDER_IP TARGET_IP COUNT`), each after the previous reply or 200 ms, and prints the round trips
 * in ms as one JSON array. iputils arping cannot go below a 1 s interval; the bench needs 1,000.
 */
async function arpClient(): Promise<void> {
  const { loadL2Native } = await import('../../src/speaker/l2-native.ts');
  const { arp } = await import('../../src/core/arp/index.ts');
  const [ifname, mac, senderIP, targetIP, countStr] = process.argv.slice(3) as [string, string, string, string, string];
  const n = loadL2Native();
  const { readFileSync } = await import('node:fs');
  const ifindex = Number(readFileSync(`/sys/class/net/${ifname}/ifindex`, 'utf8'));
  const fd = n.openArp(ifindex);
  const request = arp.encode({
    ethernetDestination: 'ff:ff:ff:ff:ff:ff',
    ethernetSource: mac,
    operation: 'request',
    senderHardwareAddress: mac,
    senderProtocolAddress: senderIP,
    targetHardwareAddress: '00:00:00:00:00:00',
    targetProtocolAddress: targetIP,
  });
  let pending: ((ok: boolean) => void) | null = null;
  const handle = n.watch(fd, 0, (frame) => {
    const d = arp.decode(frame);
    if (d.ok && d.value.operation === 'reply' && d.value.senderProtocolAddress === targetIP && d.value.targetHardwareAddress === mac) pending?.(true);
  });
  const rtts: number[] = [];
  for (let i = 0; i < Number(countStr); i++) {
    const t0 = process.hrtime.bigint();
    const got = await new Promise<boolean>((res) => {
      const t = setTimeout(() => res(false), 200);
      pending = (ok) => {
        clearTimeout(t);
        res(ok);
      };
      n.sendArp(fd, ifindex, request);
    });
    pending = null;
    if (got) rtts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  n.stop(handle);
  process.stdout.write(`${JSON.stringify(rtts)}\n`);
}

/** A harness process in one speaker namespace. */
export class Harness {
  readonly lines: HarnessLine[] = [];
  private readonly proc: ChildProcess;
  private waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;
  stderr = '';
  readonly ns: string;

  /** `scanIntervalMs`: the harness's periodic rescan (default 500 ms). */
  constructor(ns: string, exclude: string[] = [], scanIntervalMs?: number) {
    this.ns = ns;
    this.proc = spawn('ip', ['netns', 'exec', ns, process.execPath, SELF, 'harness', JSON.stringify({ exclude, scanIntervalMs })], { stdio: ['pipe', 'pipe', 'pipe'] });
    createInterface({ input: this.proc.stdout! }).on('line', (l) => {
      try {
        this.lines.push(JSON.parse(l) as HarnessLine);
      } catch {
        this.stderr += `${l}\n`;
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.proc.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((res) =>
      this.proc.on('exit', (code) => {
        res(code);
        for (const w of this.waiters.splice(0)) w();
      }),
    );
  }

  /** Waits until a line satisfies `pred` (searching from index `from`), or fails after `timeoutMs`. */
  async waitFor<T extends HarnessLine>(pred: (l: HarnessLine) => l is T, timeoutMs = 10_000, from = 0): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.lines.slice(from).find(pred);
      if (hit) return hit;
      if (this.proc.exitCode !== null) throw new Error(`harness in ${this.ns} exited ${this.proc.exitCode}: ${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`harness in ${this.ns}: timed out; stderr: ${this.stderr}`);
      await new Promise<void>((res) => {
        const t = setTimeout(res, left);
        this.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }

  ready() {
    return this.waitFor((l): l is Extract<HarnessLine, { kind: 'ready' }> => 'kind' in l && l.kind === 'ready');
  }

  send(cmd: object): void {
    this.proc.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }
  announce(service: string, ips: string[], interfaces: 'all' | string[] = 'all') {
    this.send({ op: 'announce', service, ips, interfaces });
  }
  withdraw(service: string) {
    this.send({ op: 'withdraw', service });
  }

  async stats() {
    const from = this.lines.length;
    this.send({ op: 'stats' });
    return this.waitFor((l): l is Extract<HarnessLine, { kind: 'stats' }> => 'kind' in l && l.kind === 'stats', 5000, from);
  }

  async stop(): Promise<void> {
    this.proc.stdin!.end();
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 3000);
    await this.exited;
    clearTimeout(t);
  }
}

/** Round trips (ms) of `count` ARP requests for `ip` from the client namespace (see arpClient). */
export function arpRoundTrips(bed: L2Testbed, ip: string, count: number): number[] {
  return JSON.parse(inNs(bed.client, process.execPath, SELF, 'arp-client', 'eth0', CLIENT_MAC, '192.0.2.1', ip, String(count))) as number[];
}

if (process.argv[2] === 'harness') {
  await harness();
} else if (process.argv[2] === 'arp-client') {
  await arpClient();
} else if (process.argv[1] === SELF || process.env.NODE_TEST_CONTEXT) {
  await runTests();
}

async function runTests(): Promise<void> {
  const { describe, test, before, after } = await import('node:test');
  const assert: typeof import('node:assert/strict') = (await import('node:assert/strict')).default;

  describe('L2 data plane in network namespaces', () => {
    const bed = new L2Testbed();
    const h: Harness[] = [];
    const onExit = () => bed.destroy();

    before(async () => {
      process.once('exit', onExit);
      bed.destroy();
      bed.create();
      bed.speakers.forEach((ns, i) => {
        h.push(new Harness(ns, i === bed.speakers.length - 1 ? ['^ex.*'] : []));
      });
      await Promise.all(h.map((x) => x.ready()));
    });

    after(async () => {
      await Promise.all(h.map((x) => x.stop()));
      bed.destroy();
      process.removeListener('exit', onExit);
      assert.equal(
        sh('ip', 'netns', 'list')
          .split('\n')
          .filter((l) => l.startsWith(`mlts${process.pid}-`)).length,
        0,
        'namespaces cleaned up',
      );
    });

    test('interface selection: ex0 excluded by the regexp, dn0 down, eth0 answers ARP and NDP', async () => {
      const s = await h[2]!.stats();
      const by = Object.fromEntries(s.interfaces.map((c) => [c.name, c]));
      assert.deepEqual({ arp: by.eth0!.arp, ndp: by.eth0!.ndp, skipped: by.eth0!.skipped }, { arp: true, ndp: true, skipped: null });
      assert.equal(by.ex0!.skipped, 'excluded');
      assert.equal(by.dn0!.skipped, 'down');
      assert.equal(by.lo!.arp, false);
    });

    test('IPv4: the announcing speaker replies with its MAC, the others stay silent, an unowned IP gets nothing', async () => {
      h[0]!.announce('shop/frontend', ['192.0.2.10']);
      h[1]!.announce('shop/other', ['192.0.2.20']);
      await h[0]!.waitFor((l): l is HarnessLine => 'kind' in l && l.kind === 'gratuitous' && l.ip === '192.0.2.10');
      const before = await Promise.all(h.map((x) => x.stats()));
      const out = arping(bed, '192.0.2.10', '-c', '3', '-w', '3');
      const replies = arpingReplies(out);
      assert.equal(replies.length, 3, out);
      assert.deepEqual([...new Set(replies.map((r) => r.mac))], [speakerMac(1)]);
      const afterStats = await Promise.all(h.map((x) => x.stats()));
      assert.equal(afterStats[0]!.replies - before[0]!.replies, 3);
      assert.equal(afterStats[1]!.replies - before[1]!.replies, 0, 'speaker 2 silent');
      assert.equal(afterStats[2]!.replies - before[2]!.replies, 0, 'speaker 3 silent');
      assert.ok((afterStats[1]!.drops['arp:not-announced'] ?? 0) >= 3, 'speaker 2 saw the requests and dropped them');
      const none = arping(bed, '192.0.2.99', '-c', '2', '-w', '2');
      assert.deepEqual(arpingReplies(none), [], none);
    });

    test('IPv6: a UDP send resolves the service address to the announcing speaker (ip -6 neigh); unowned stays unresolved', async () => {
      h[0]!.announce('shop/frontend-v6', ['2001:db8::10']);
      await h[0]!.waitFor((l): l is HarnessLine => 'kind' in l && l.kind === 'gratuitous' && l.ip === '2001:db8::10');
      const before = await Promise.all(h.map((x) => x.stats()));
      sh('ip', '-n', bed.client, '-6', 'neigh', 'flush', 'dev', 'eth0');
      bed.udp('2001:db8::10');
      const deadline = Date.now() + 3000;
      let mac: string | null = null;
      while (Date.now() < deadline && !(mac = bed.neighbor('2001:db8::10'))) await new Promise((r) => setTimeout(r, 20));
      assert.equal(mac, speakerMac(1));
      const reply = await h[0]!.waitFor((l): l is Extract<HarnessLine, { kind: 'reply' }> => 'kind' in l && l.kind === 'reply' && l.ip === '2001:db8::10');
      assert.equal(reply.to, '2001:db8::1');
      assert.equal(reply.hopLimit, 255, 'the solicitation arrived with hop limit 255 (RFC 4861 7.1.1), as the socket reports it');
      const afterStats = await Promise.all(h.map((x) => x.stats()));
      assert.ok(afterStats[0]!.replies - before[0]!.replies >= 1);
      assert.equal(afterStats[1]!.replies - before[1]!.replies, 0);
      assert.equal(afterStats[2]!.replies - before[2]!.replies, 0);
      bed.udp('2001:db8::99');
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(bed.neighbor('2001:db8::99'), null);
    });

    test('gratuitous ARP and unsolicited NA: every 1.1 s for 5 s after takeover (tcpdump timestamps)', async () => {
      const cap = spawn('ip', ['netns', 'exec', bed.client, 'tcpdump', '-i', 'eth0', '-n', '-l', '-tt', `ether src ${speakerMac(3)} and (arp or icmp6)`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      cap.stdout.on('data', (d: Buffer) => {
        text += d.toString();
      });
      await new Promise<void>((res) =>
        cap.stderr.on('data', (d: Buffer) => {
          if (/listening on/.test(d.toString())) res();
        }),
      );
      // speaker 3 announces nothing else yet: its shared ticker starts with this takeover
      h[2]!.announce('shop/takeover', ['192.0.2.21', '2001:db8::21']);
      await new Promise((r) => setTimeout(r, 7000));
      cap.kill('SIGINT');
      await new Promise((r) => cap.on('exit', r));
      const arpTimes = [...text.matchAll(/^(\d+\.\d+) ARP, (Request who-has 192\.0\.2\.21 \(ff:ff:ff:ff:ff:ff\) tell 192\.0\.2\.21|Reply 192\.0\.2\.21 is-at 02:00:00:00:03:00)/gm)].map((m) => Number(m[1]));
      const naTimes = [...text.matchAll(/^(\d+\.\d+) IP6 fe80::\S+ > ff02::1: ICMP6, neighbor advertisement, tgt is 2001:db8::21,/gm)].map((m) => Number(m[1]));
      assert.equal(arpTimes.length, 10, `5 announcements of 2 ARP frames each (request and reply):\n${text}`);
      assert.equal(naTimes.length, 5, `5 unsolicited NAs from the link-local address to ff02::1:\n${text}`);
      const bursts = arpTimes.filter((_, i) => i % 2 === 0);
      for (const [name, ts] of [
        ['ARP', bursts],
        ['NA', naTimes],
      ] as const) {
        const gaps = ts.slice(1).map((t, i) => t - ts[i]!);
        // 1.1 s apart; the bounds leave room for timer jitter on a loaded 2-core CI machine
        for (const g of gaps) assert.ok(g > 0.9 && g < 1.4, `${name} interval ${g.toFixed(3)} s`);
        assert.ok(ts.at(-1)! - ts[0]! < 5, `${name}: all within 5 s of the takeover`);
        console.log(`# gratuitous ${name} intervals (s): ${gaps.map((g) => g.toFixed(3)).join(', ')}`);
      }
    });

    test('failover: the next speaker takes over and the client neighbor entry follows', async () => {
      h[0]!.announce('shop/failover', ['192.0.2.40']);
      bed.udp('192.0.2.40');
      const d0 = Date.now() + 3000;
      while (bed.neighbor('192.0.2.40') !== speakerMac(1) && Date.now() < d0) await new Promise((r) => setTimeout(r, 10));
      assert.equal(bed.neighbor('192.0.2.40'), speakerMac(1));
      await new Promise((r) => setTimeout(r, 1100)); // past the neighbor locktime (1 s) of the first entry
      const ms = await measureFailover(bed, h[0]!, h[1]!, '192.0.2.40', 'shop/failover');
      assert.equal(bed.neighbor('192.0.2.40'), speakerMac(2));
      const out = arping(bed, '192.0.2.40', '-c', '2', '-w', '2');
      assert.deepEqual([...new Set(arpingReplies(out).map((r) => r.mac))], [speakerMac(2)], out);
      console.log(`# failover: client neighbor entry moved to the new speaker ${ms.toFixed(1)} ms after the takeover`);
      assert.ok(ms < 1000, `${ms} ms`);
    });

    test('excluded and down interfaces never answer; L2Advertisement interfaces restrict', async () => {
      const before = await h[2]!.stats();
      h[2]!.announce('shop/restricted', ['192.0.2.30'], ['ex0', 'dn0']);
      const silent = arping(bed, '192.0.2.30', '-c', '2', '-w', '2');
      assert.deepEqual(arpingReplies(silent), [], silent);
      h[2]!.announce('shop/all', ['192.0.2.31'], 'all');
      const out = arping(bed, '192.0.2.31', '-c', '2', '-w', '2');
      assert.deepEqual([...new Set(arpingReplies(out).map((r) => r.mac))], [speakerMac(3, 0)], `only eth0's MAC, never ex0's:\n${out}`);
      const s = await h[2]!.stats();
      assert.ok((s.drops['arp:interface-not-allowed'] ?? 0) > (before.drops['arp:interface-not-allowed'] ?? 0), 'eth0 saw the request for 192.0.2.30 and dropped it');
      assert.ok(s.interfaces.every((c) => !(c.name === 'ex0' || c.name === 'dn0') || (!c.arp && !c.ndp)));
    });

    test('without CAP_NET_RAW: one line saying so, exit 2 (harness and createL2Announcer)', async () => {
      const { spawnSync } = await import('node:child_process');
      const drop = ['--bounding-set=-net_raw', '--inh-caps=-net_raw'];
      const r = spawnSync('setpriv', [...drop, process.execPath, SELF, 'harness'], { encoding: 'utf8' });
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /needs CAP_NET_RAW/);
      const announcer = fileURLToPath(new URL('../../src/speaker/announcer.ts', import.meta.url));
      const script = `import { createL2Announcer } from ${JSON.stringify(announcer)};
        const quiet = { with: () => quiet, debug() {}, info() {}, warn() {}, error() {} };
        try { await createL2Announcer('raw', quiet, '/nonexistent'); console.log('opened'); } catch (e) { console.error(e.name + ': ' + e.message); process.exit(e.exitCode ?? 70); }`;
      const f = spawnSync('setpriv', [...drop, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' });
      assert.equal(f.status, 2, f.stderr);
      assert.match(f.stderr, /^UserError: speaker: the L2 data plane needs CAP_NET_RAW/);
    });

    test('withdraw stops answering at once', async () => {
      h[0]!.withdraw('shop/frontend');
      const out = arping(bed, '192.0.2.10', '-c', '2', '-w', '2');
      assert.deepEqual(arpingReplies(out), [], out);
    });
  });

  describe('rescan on change (netlink): a link going down and up is followed within 3 s, not at the periodic rescan', () => {
    const bed = new L2Testbed(`mltr${process.pid}`, 1);
    let h: Harness;
    const onExit = () => bed.destroy();
    const ns = () => bed.speakers[0]!;
    const responder = (op: 'created' | 'deleted', from: number) =>
      h.waitFor((l): l is Extract<HarnessLine, { kind: 'responder' }> => 'kind' in l && l.kind === 'responder' && l.protocol === 'arp' && l.interface === 'eth0' && l.op === op, 5000, from);

    before(async () => {
      process.once('exit', onExit);
      bed.destroy();
      bed.create();
      h = new Harness(ns(), ['^ex.*'], 60_000); // the periodic rescan cannot explain anything below
      await h.ready();
      h.announce('shop/frontend', ['192.0.2.50']);
    });

    after(async () => {
      await h.stop();
      bed.destroy();
      process.removeListener('exit', onExit);
      assert.equal(
        sh('ip', 'netns', 'list')
          .split('\n')
          .filter((l) => l.startsWith(`mltr${process.pid}-`)).length,
        0,
        'namespaces cleaned up',
      );
    });

    test('eth0 down: responder closed in < 3 s and no answer; up: responder back in < 3 s and answering', async () => {
      let out = arping(bed, '192.0.2.50', '-c', '1', '-w', '2');
      assert.deepEqual(
        arpingReplies(out).map((r) => r.mac),
        [speakerMac(1)],
        out,
      );

      let from = h.lines.length;
      const down = Date.now();
      inNs(ns(), 'ip', 'link', 'set', 'eth0', 'down');
      const deleted = await responder('deleted', from);
      assert.ok(deleted.t - down < 3000, `responder deleted ${deleted.t - down} ms after down`);
      out = arping(bed, '192.0.2.50', '-c', '1', '-w', '1');
      assert.deepEqual(arpingReplies(out), [], out);

      from = h.lines.length;
      const up = Date.now();
      inNs(ns(), 'ip', 'link', 'set', 'eth0', 'up');
      const created = await responder('created', from);
      assert.ok(created.t - up < 3000, `responder created ${created.t - up} ms after up`);
      out = arping(bed, '192.0.2.50', '-c', '1', '-w', '2');
      assert.deepEqual(
        arpingReplies(out).map((r) => r.mac),
        [speakerMac(1)],
        out,
      );
      const answering = Date.now() - up;
      assert.ok(answering < 3000, `answering ${answering} ms after up`);
      console.log(`# rescan on change: responder closed ${deleted.t - down} ms after down, reopened ${created.t - up} ms after up, answering within ${answering} ms`);
    });
  });
}

/**
 * Failover as the speakers do it: the old winner withdraws, the new one announces (gratuitous
 * ARP at once). Returns ms from the new announcement to the client's kernel reporting the neighbor
 * entry with the new MAC (`ip monitor neigh` in the client namespace, a stream: no polling delay).
 */
export async function measureFailover(bed: L2Testbed, from: Harness, to: Harness, ip: string, service: string): Promise<number> {
  const newMac = speakerMac(bed.speakers.indexOf(to.ns) + 1);
  const mon = spawn('ip', ['-n', bed.client, 'monitor', 'neigh'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    let seen: (() => void) | null = null;
    let hit = false;
    createInterface({ input: mon.stdout }).on('line', (l) => {
      if (l.startsWith(`${ip} `) && l.includes(`lladdr ${newMac}`)) {
        hit = true;
        seen?.();
      }
    });
    await new Promise((r) => setTimeout(r, 100)); // the monitor subscribes
    from.withdraw(service);
    const t0 = performance.now();
    to.announce(service, [ip]);
    await new Promise<void>((res, rej) => {
      const t = setTimeout(() => rej(new Error(`neighbor entry for ${ip} did not move to ${newMac}: ${sh('ip', '-n', bed.client, 'neigh')}`)), 5000);
      seen = () => {
        clearTimeout(t);
        res();
      };
      if (hit) seen();
    });
    return performance.now() - t0;
  } finally {
    mon.kill();
  }
}
