// The network-namespace L2 testbed: a bridge, a client and N speaker namespaces (root needed).
// Used by test/integration/l2-netns.test.ts (the L2 data plane; bench/l2.bench.ts through it) and
// test/e2e/metallb-speakers.test.ts (MetalLB's and metallb-ts's speakers on one segment).
// Addresses: 192.0.2.0/24 and 2001:db8::/64 inside these namespaces only.
import { execFileSync } from 'node:child_process';

/** Runs `cmd args` and returns stdout (throws with stderr on a non-zero exit). */
export function sh(cmd: string, ...args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs `cmd` inside namespace `ns`. */
export function inNs(ns: string, ...cmd: string[]): string {
  return sh('ip', 'netns', 'exec', ns, ...cmd);
}

/** MAC of speaker `i` (1-based) on interface number `j`. */
export const speakerMac = (i: number, j = 0) => `02:00:00:00:0${i}:0${j}`;
export const CLIENT_MAC = '02:00:00:00:00:01';

/** Options of the testbed; the defaults are what test/integration/l2-netns.test.ts uses. */
export interface L2TestbedOptions {
  /** speaker N also gets `ex0` and a down `dn0`, both on the bridge (default true) */
  extraInterfaces?: boolean;
  /** speaker i (1-based) gets `nodeIPv4(i)`/24 on eth0, its node address (default: no address) */
  nodeIPv4?: (i: number) => string;
}

/**
 * The testbed: namespaces `<prefix>-sw` (bridge br0, multicast snooping off), `<prefix>-c`
 * (client: eth0 192.0.2.1/24, 2001:db8::1/64) and `<prefix>-s1..N` (speakers: eth0 without
 * addresses unless `nodeIPv4`, an on-link route to 2001:db8::/64; speaker N also gets `ex0` and a
 * down `dn0`, both on the bridge, unless `extraInterfaces: false`). DAD is off so link-local
 * addresses are usable at once.
 */
export class L2Testbed {
  readonly sw: string;
  readonly client: string;
  readonly speakers: string[];
  private readonly all: string[];

  private readonly opts: L2TestbedOptions;

  constructor(prefix = `mlts${process.pid}`, speakers = 3, opts: L2TestbedOptions = {}) {
    this.opts = opts;
    this.sw = `${prefix}-sw`;
    this.client = `${prefix}-c`;
    this.speakers = Array.from({ length: speakers }, (_, i) => `${prefix}-s${i + 1}`);
    this.all = [this.sw, this.client, ...this.speakers];
  }

  create(): void {
    for (const ns of this.all) {
      sh('ip', 'netns', 'add', ns);
      inNs(ns, 'sysctl', '-qw', 'net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0');
      sh('ip', '-n', ns, 'link', 'set', 'lo', 'up');
    }
    sh('ip', '-n', this.sw, 'link', 'add', 'br0', 'type', 'bridge', 'mcast_snooping', '0');
    sh('ip', '-n', this.sw, 'link', 'set', 'br0', 'up');
    let port = 0;
    const plug = (ns: string, name: string, mac: string, up = true) => {
      const p = `p${port++}`;
      sh('ip', '-n', this.sw, 'link', 'add', p, 'type', 'veth', 'peer', 'name', name, 'netns', ns);
      sh('ip', '-n', this.sw, 'link', 'set', p, 'master', 'br0');
      sh('ip', '-n', this.sw, 'link', 'set', p, 'up');
      sh('ip', '-n', ns, 'link', 'set', name, 'address', mac);
      if (up) sh('ip', '-n', ns, 'link', 'set', name, 'up');
    };
    plug(this.client, 'eth0', CLIENT_MAC);
    sh('ip', '-n', this.client, 'addr', 'add', '192.0.2.1/24', 'dev', 'eth0');
    sh('ip', '-n', this.client, 'addr', 'add', '2001:db8::1/64', 'dev', 'eth0', 'nodad');
    this.speakers.forEach((ns, i) => {
      plug(ns, 'eth0', speakerMac(i + 1));
      // the on-link route every node of that LAN has (solicited NAs go to the solicitor's address)
      sh('ip', '-n', ns, '-6', 'route', 'add', '2001:db8::/64', 'dev', 'eth0');
      if (this.opts.nodeIPv4) sh('ip', '-n', ns, 'addr', 'add', `${this.opts.nodeIPv4(i + 1)}/24`, 'dev', 'eth0');
      if (i === this.speakers.length - 1 && this.opts.extraInterfaces !== false) {
        plug(ns, 'ex0', speakerMac(i + 1, 1));
        plug(ns, 'dn0', speakerMac(i + 1, 2), false);
      }
    });
    // link-local addresses on every up speaker interface before the harness scans
    const deadline = Date.now() + 5000;
    for (const ns of this.speakers) {
      while (!/fe80::/.test(sh('ip', '-n', ns, '-6', 'addr', 'show', 'dev', 'eth0', 'scope', 'link'))) {
        if (Date.now() > deadline) throw new Error(`no link-local address in ${ns}`);
        execFileSync('sleep', ['0.05']);
      }
    }
  }

  /** Deletes every namespace of the testbed (their interfaces go with them); never throws. */
  destroy(): void {
    for (const ns of this.all) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        /* not created */
      }
    }
  }

  /** The client's neighbor entry for `ip`: lladdr or null (none, FAILED, INCOMPLETE). */
  neighbor(ip: string): string | null {
    const out = sh('ip', '-n', this.client, 'neigh', 'show', ip, 'dev', 'eth0');
    return /lladdr ([0-9a-f:]{17})/.exec(out)?.[1] ?? null;
  }

  /** Sends one UDP datagram from the client to [ip]:9 (resolves the neighbor first). */
  udp(ip: string): void {
    const host = ip.includes(':') ? `[${ip}]` : ip;
    void host;
    inNs(this.client, process.execPath, '-e', `const s=require('dgram').createSocket('${ip.includes(':') ? 'udp6' : 'udp4'}');s.send('x',9,'${ip}',()=>setTimeout(()=>s.close(),50))`);
  }
}

/** Parses `arping` output: the replies as { mac, ms }. */
export function arpingReplies(out: string): Array<{ mac: string; ms: number }> {
  return [...out.matchAll(/reply from \S+ \[([0-9A-Fa-f:]{17})\]\s+([\d.]+)ms/g)].map((m) => ({ mac: m[1]!.toLowerCase(), ms: Number(m[2]) }));
}

/** Runs arping in the client; returns its stdout (arping exits 1 when nothing answers). */
export function arping(bed: L2Testbed, ip: string, ...args: string[]): string {
  try {
    return inNs(bed.client, 'arping', '-I', 'eth0', ...args, ip);
  } catch (e) {
    return (e as { stdout?: string }).stdout ?? '';
  }
}
